/** Review of issue 16's telemetry: a broken context manager is not the call's failure either. */
import { context, ROOT_CONTEXT, type Context, type ContextManager } from "@opentelemetry/api";
import { afterEach, describe, expect, it } from "vitest";
import { base, callSpans, tracedGate } from "./fixtures/traced-gate.js";

afterEach(() => {
  context.disable();
});

/** A global context manager whose `with` misbehaves as `how` says. */
function brokenContextManager(how: "throws" | "skips" | "twice"): ContextManager {
  return {
    active: () => ROOT_CONTEXT,
    with<A extends unknown[], F extends (...args: A) => ReturnType<F>>(_ctx: Context, fn: F, thisArg?: ThisParameterType<F>, ...args: A): ReturnType<F> {
      if (how === "throws") throw new Error("context manager down");
      if (how === "skips") return undefined as ReturnType<F>;
      fn.call(thisArg, ...args);
      return fn.call(thisArg, ...args);
    },
    bind: <T>(_ctx: Context, target: T) => target,
    enable() {
      return this;
    },
    disable() {
      return this;
    },
  };
}

describe("review: a context manager that fails never fails a call, nor runs its body twice", () => {
  for (const how of ["throws", "skips", "twice"] as const) {
    it(`its with() ${how}: the call runs once and ends ok`, async () => {
      context.setGlobalContextManager(brokenContextManager(how));
      const { gate, spans } = tracedGate();
      const progress: string[] = [];
      const result = await gate.invoke("x.read", {}, { ...base, onProgress: (e) => progress.push(e.message) });
      expect(result.status).toBe("ok");
      expect(progress).toEqual(["half way"]); // the body ran once
      // (The SDK's own span processor exports through the same context manager: what it records is the SDK's affair.)
      if (how === "twice") expect(callSpans(spans(), result.invocationId).names).toContain("toolgate.run");
    });
  }
});
