/**
 * Review of ctx.onAbort (run-handler.ts, tool-context.ts): a listener is told once, a throwing
 * one stops neither the abort nor the others, and nothing a body or a caller hands the gate
 * (a throwing listener, a non-function, a hostile signal) makes gate.invoke throw.
 */
import { describe, expect, it } from "vitest";
import { defineFamily } from "../family.js";
import { createMemoryJournal } from "../journal/memory.js";
import type { AnyToolManifest } from "../manifest.js";
import { defineProfile } from "../profile.js";
import { createToolRegistry } from "../registry.js";
import type { ToolContext } from "../context.js";
import { tool } from "./fixtures/one-tool.js";
import { createGate } from "./gate.js";

const profile = defineProfile({ name: "p", allow: ["x:use"], maxRisk: "critical" });

function gateWith(t: AnyToolManifest) {
  const family = defineFamily({ name: "x", tools: [t], permissions: ["x:use"] });
  return createGate({ registry: createToolRegistry({ families: [family] }), journal: createMemoryJournal({ auditKey: "k" }), secrets: [] });
}

async function settled(p: Promise<unknown>): Promise<unknown> {
  try {
    return await p;
  } catch (e) {
    return { rejected: String(e) };
  }
}

describe("review: ctx.onAbort", () => {
  it("throwing listeners at cancellation: every listener is told once, the call ends cancelled, invoke resolves", async () => {
    const told: string[] = [];
    const caller = new AbortController();
    const gate = gateWith(
      tool({
        handler: (_: unknown, ctx: ToolContext) =>
          new Promise(() => {
            ctx.onAbort(() => {
              told.push("first");
              throw new Error("listener fails");
            });
            ctx.onAbort(() => told.push("second"));
            const off = ctx.onAbort(() => told.push("unsubscribed"));
            off();
            off();
            ctx.onAbort(undefined as never);
            ctx.onAbort(42 as never);
            setTimeout(() => caller.abort(), 5);
          }),
      }),
    );
    const result = await settled(gate.invoke("x.t", {}, { principal: "a", tenant: "t", profile, signal: caller.signal }));
    expect(result).toMatchObject({ status: "error", code: "cancelled" });
    caller.abort();
    expect(told).toEqual(["first", "second"]);
  });

  it("after the deadline: told synchronously when subscribing late, and a throw there is not the gate's", async () => {
    const told: string[] = [];
    let late: Promise<void> | undefined;
    const gate = gateWith(
      tool({
        timeoutMs: 20,
        handler: (_: unknown, ctx: ToolContext) => {
          late = new Promise<void>((resolve) =>
            setTimeout(() => {
              ctx.onAbort((reason) => {
                told.push(`late ${reason.message}`);
                throw new Error("late listener fails");
              });
              told.push("after subscribe");
              resolve();
            }, 60),
          );
          return new Promise(() => undefined);
        },
      }),
    );
    const result = await settled(gate.invoke("x.t", {}, { principal: "a", tenant: "t", profile }));
    expect(result).toMatchObject({ status: "error", code: "timeout" });
    await late;
    expect(told).toEqual(["late deadline", "after subscribe"]);
  });

  it("a body that ends before any abort: a listener is never called, even if the caller cancels after", async () => {
    const caller = new AbortController();
    let called = 0;
    let ctxSeen: ToolContext | undefined;
    const gate = gateWith(
      tool({
        handler: async (_: unknown, ctx: ToolContext) => {
          ctxSeen = ctx;
          ctx.onAbort(() => called++);
          await Promise.resolve();
          return { done: true };
        },
      }),
    );
    const result = await settled(gate.invoke("x.t", {}, { principal: "a", tenant: "t", profile, signal: caller.signal }));
    expect(result).toMatchObject({ status: "ok" });
    caller.abort();
    ctxSeen?.onAbort(() => called++);
    expect(called).toBe(0);
  });

  it("a caller already cancelled: the body does not run and invoke resolves", async () => {
    let ran = false;
    const gate = gateWith(tool({ handler: () => (ran = true) }));
    const result = await settled(gate.invoke("x.t", {}, { principal: "a", tenant: "t", profile, signal: AbortSignal.abort() }));
    expect(result).toMatchObject({ status: "error", code: "cancelled" });
    expect(ran).toBe(false);
  });

  const hostileSignals: [string, () => unknown][] = [
    [
      "whose aborted getter throws",
      () => ({
        get aborted(): boolean {
          throw new Error("aborted getter");
        },
        addEventListener: () => undefined,
        removeEventListener: () => undefined,
      }),
    ],
    [
      "whose addEventListener throws",
      () => ({
        aborted: false,
        addEventListener: () => {
          throw new Error("add");
        },
        removeEventListener: () => undefined,
      }),
    ],
    ["that is a number", () => 7],
  ];
  for (const [name, make] of hostileSignals) {
    it(`a caller's signal ${name}: invoke resolves whether the body subscribes or not`, async () => {
      for (const subscribe of [false, true]) {
        const gate = gateWith(
          tool({
            handler: async (_: unknown, ctx: ToolContext) => {
              if (subscribe) ctx.onAbort(() => undefined);
              await Promise.resolve();
              return 1;
            },
          }),
        );
        const result = await settled(gate.invoke("x.t", {}, { principal: "a", tenant: "t", profile, signal: make() as AbortSignal }));
        expect(result).not.toHaveProperty("rejected");
        expect(result).toHaveProperty("status");
      }
    });
  }
});
