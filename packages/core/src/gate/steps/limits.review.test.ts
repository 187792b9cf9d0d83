/** Review of issue 16's limits step: ways around maxConcurrent and a window's count. */
import { describe, expect, it } from "vitest";
import { limitsSetup } from "../fixtures/limits-harness.js";

/** A write whose body ignores its signal: it outlives its 200 ms deadline by far. */
const stubborn = { delayMs: 1_500, ignoreSignal: true };

describe("review: a body that outlives its deadline is still in flight", () => {
  it("maxConcurrent holds the slot until the late body settles: a timed-out call does not let a second body run beside it", async () => {
    const h = limitsSetup([{ name: "one", tools: ["notes.sync_notes"], maxConcurrent: 1 }]);
    const first = await h.gate.invoke("notes.sync_notes", stubborn, h.call({ idempotencyKey: "a" }));
    expect(first).toMatchObject({ status: "error", code: "timeout" });
    // The first body is still running: a second call would be a second body in flight.
    const second = await h.gate.invoke("notes.sync_notes", stubborn, h.call({ idempotencyKey: "b" }));
    expect(second).toMatchObject({ status: "denied", code: "rate_limited", details: { limit: "one", maxConcurrent: 1 } });
    expect(h.runs["notes.sync_notes"]).toBe(1);
    await h.gate.drain();
    expect(h.inFlight().size).toBe(0);
    // Once the late body settled, the slot is free again.
    expect(await h.sync({}, 0)).toMatchObject({ status: "ok" });
  });

  it("a cancelled call's body that keeps running keeps its slot too", async () => {
    const h = limitsSetup([{ name: "one", tools: ["notes.sync_notes"], maxConcurrent: 1 }]);
    const abort = new AbortController();
    const first = h.gate.invoke("notes.sync_notes", { delayMs: 300, ignoreSignal: true }, h.call({ idempotencyKey: "a", signal: abort.signal }));
    await new Promise((r) => setTimeout(r, 10));
    abort.abort();
    expect(await first).toMatchObject({ status: "error", code: "cancelled" });
    expect(await h.sync({}, 0)).toMatchObject({ status: "denied", code: "rate_limited" });
    await h.gate.drain();
    expect(h.inFlight().size).toBe(0);
  });
});

describe("review: a gate clock with fractions of a millisecond", () => {
  it("counts calls as any clock does (a charge's time is whole milliseconds), instead of failing every limited call", async () => {
    const h = limitsSetup([{ name: "w", tools: "*", per: "principal", max: 2, windowMs: 60_000 }]);
    h.time.now = Date.UTC(2026, 0, 1) + 0.25; // e.g. performance.timeOrigin + performance.now()
    expect(await h.pure()).toMatchObject({ status: "ok" });
    expect(await h.sync()).toMatchObject({ status: "ok" });
    expect(await h.pure()).toMatchObject({ status: "denied", code: "rate_limited" });
    expect(await h.used("w", "principal")).toBe(2);
  });
});
