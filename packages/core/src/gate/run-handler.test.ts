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

  describe("onAbort", () => {
    /** A body that never settles, subscribed once; the listener records each reason it gets. */
    function subscribed(run: HandlerRun): { reasons: Error[]; outcome: ReturnType<HandlerRun["start"]>; off: () => void } {
      const reasons: Error[] = [];
      let off: () => void = () => undefined;
      const outcome = run.start(() => {
        off = run.onAbort((reason) => reasons.push(reason));
        return new Promise(() => undefined);
      });
      return { reasons, outcome, off };
    }

    it("calls the listener once, with the caller's reason, on cancellation; no AbortController is made", async () => {
      const caller = new AbortController();
      const run = new HandlerRun(10_000, caller.signal);
      const { reasons, outcome } = subscribed(run);
      const reason = new Error("user pressed stop");
      caller.abort(reason);
      caller.abort(new Error("again"));
      expect(await outcome).toMatchObject({ kind: "aborted", why: "cancelled" });
      expect(reasons).toEqual([reason]);
      expect((run as unknown as { controller: unknown }).controller).toBeUndefined();
    });

    it("calls the listener once at the deadline", async () => {
      const run = new HandlerRun(15, undefined);
      const { reasons, outcome } = subscribed(run);
      expect(await outcome).toMatchObject({ kind: "aborted", why: "timeout" });
      expect(reasons).toHaveLength(1);
      expect(reasons[0]).toBeInstanceOf(Error);
      expect(reasons[0]!.message).toBe("deadline");
    });

    it("an unsubscribed listener is never called; the others still are", async () => {
      const caller = new AbortController();
      const run = new HandlerRun(10_000, caller.signal);
      const kept: Error[] = [];
      const dropped: Error[] = [];
      const outcome = run.start(() => {
        const off = run.onAbort((reason) => dropped.push(reason));
        run.onAbort((reason) => kept.push(reason));
        off();
        off();
        return new Promise(() => undefined);
      });
      caller.abort();
      expect(await outcome).toMatchObject({ kind: "aborted", why: "cancelled" });
      expect(dropped).toEqual([]);
      expect(kept).toHaveLength(1);
      expect(kept[0]).toBeInstanceOf(Error);
      expect(kept[0]!.name).toBe("AbortError");
    });

    it("a late subscriber after the abort is called synchronously, once, with the same reason", async () => {
      const run = new HandlerRun(10, undefined);
      const { reasons, outcome } = subscribed(run);
      await outcome;
      const late: Error[] = [];
      const off = run.onAbort((reason) => late.push(reason));
      expect(late).toEqual(reasons);
      off();
      expect(late).toHaveLength(1);
    });

    it("subscribing after the caller already aborted (before the body asked) is told at once", () => {
      const caller = new AbortController();
      caller.abort(new Error("gone"));
      const run = new HandlerRun(10_000, caller.signal);
      const seen: string[] = [];
      run.start(() => {
        run.onAbort((reason) => seen.push(reason.message));
        seen.push("after subscribe");
        return 1;
      });
      expect(seen).toEqual(["gone", "after subscribe"]);
    });

    it("a synchronous body hears a cancellation that happens while it runs", () => {
      const caller = new AbortController();
      const run = new HandlerRun(10_000, caller.signal);
      const seen: string[] = [];
      run.start(() => {
        run.onAbort(() => seen.push("aborted"));
        caller.abort();
        return 1;
      });
      expect(seen).toEqual(["aborted"]);
    });

    it("a throwing listener neither stops the abort nor the other listeners", async () => {
      const run = new HandlerRun(10, undefined);
      const seen: string[] = [];
      const outcome = await run.start(() => {
        run.onAbort(() => {
          throw new Error("listener bug");
        });
        run.onAbort(() => seen.push("second"));
        return new Promise(() => undefined);
      });
      expect(outcome).toMatchObject({ kind: "aborted", why: "timeout" });
      expect(seen).toEqual(["second"]);
      expect(() =>
        run.onAbort(() => {
          throw new Error("late bug");
        }),
      ).not.toThrow();
    });

    it("after a body ended without an abort, a later cancellation calls nobody", async () => {
      const caller = new AbortController();
      const run = new HandlerRun(10_000, caller.signal);
      const seen: string[] = [];
      const outcome = await run.start(async () => {
        run.onAbort(() => seen.push("during"));
        return "done";
      });
      run.onAbort(() => seen.push("after"));
      caller.abort();
      expect(outcome).toEqual({ kind: "returned", value: "done" });
      expect(seen).toEqual([]);
    });
  });
});
