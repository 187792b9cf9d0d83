import { describe, expect, it } from "vitest";
import { HandlerRun } from "./run-handler.js";

describe("HandlerRun", () => {
  it("returns a synchronous body's value without arming a timer", () => {
    const run = new HandlerRun(1, undefined);
    expect(run.start(() => 42)).toEqual({ kind: "returned", value: 42 });
  });

  it("reports a synchronous throw", () => {
    const error = new Error("boom");
    expect(
      new HandlerRun(1000, undefined).start(() => {
        throw error;
      }),
    ).toEqual({ kind: "threw", error });
  });

  it("reports an async rejection", async () => {
    const error = new Error("later");
    expect(
      await new HandlerRun(1000, undefined).start(async () => {
        throw error;
      }),
    ).toEqual({ kind: "threw", error });
  });

  it("aborts a body that outlives its deadline, and its signal fires", async () => {
    const run = new HandlerRun(20, undefined);
    let seen: AbortSignal | undefined;
    const outcome = await run.start(() => {
      seen = run.signal;
      return new Promise(() => undefined);
    });
    expect(outcome).toMatchObject({ kind: "aborted", why: "timeout" });
    expect(seen?.aborted).toBe(true);
  });

  it("aborts on the caller's signal, and hands over the late result", async () => {
    const caller = new AbortController();
    const run = new HandlerRun(10_000, caller.signal);
    let finish: (v: string) => void = () => undefined;
    const pending = run.start(() => new Promise<string>((resolve) => (finish = resolve)));
    caller.abort();
    const outcome = await pending;
    expect(outcome).toMatchObject({ kind: "aborted", why: "cancelled" });
    finish("late value");
    if (outcome.kind === "aborted") expect(await outcome.late).toBe("late value");
  });

  it("shows a synchronous body the caller's abort that happened while it ran", () => {
    const caller = new AbortController();
    const run = new HandlerRun(10_000, caller.signal);
    let abortedInside: boolean | undefined;
    run.start(() => {
      const signal = run.signal;
      caller.abort();
      abortedInside = signal.aborted;
      return 1;
    });
    expect(abortedInside).toBe(true);
  });

  it("reports an abort that came before an async body's promise was awaited", async () => {
    const caller = new AbortController();
    const run = new HandlerRun(10_000, caller.signal);
    const outcome = await run.start(() => {
      void run.signal;
      caller.abort();
      return new Promise(() => undefined);
    });
    expect(outcome).toMatchObject({ kind: "aborted", why: "cancelled" });
  });
});
