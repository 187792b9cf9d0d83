/**
 * Review of issue 16 (clocks): what the gate does with a clock that returns no time. gate.invoke
 * promises never to throw: a clock without a time is refused at resolve, and one that stops giving
 * a time mid-call ends the call as an error result (the runSteps safety net), not a rejection.
 */
import { describe, expect, it } from "vitest";
import { limitsSetup } from "./fixtures/limits-harness.js";

describe("review: a gate clock that returns no time", () => {
  for (const bad of [Number.NaN, Number.POSITIVE_INFINITY, 1e300]) {
    it(`clock() = ${bad}: a write is refused before anything runs (config_invalid, or journal_failed when the refusal cannot be timestamped)`, async () => {
      const h = limitsSetup([]);
      h.time.now = bad;
      const result = await h.sync();
      expect(result).toMatchObject({ status: "error", boundary: "pre_effect_refusal" });
      expect(result.status === "error" && result.message).toContain("clock");
    });
  }

  it("with limits, a clock without a time fails closed: a limited pure call is refused, nothing is counted", async () => {
    const h = limitsSetup([{ name: "w", tools: "*", per: "principal", max: 1, windowMs: 60_000 }]);
    for (const bad of [Number.NaN, -5, 1e300]) {
      h.time.now = bad;
      expect(await h.pure()).toMatchObject({ status: "error", code: "journal_failed", boundary: "pre_effect_refusal" });
    }
    h.time.now = Date.UTC(2026, 0, 1);
    expect(await h.pure()).toMatchObject({ status: "ok" });
    expect(await h.pure()).toMatchObject({ status: "denied", code: "rate_limited" });
  });

  it("a clock that starts well and stops giving a time mid-call: the call ends as an error result, never a rejection", async () => {
    const h = limitsSetup([]);
    let reads = 0;
    h.time.now = Date.UTC(2026, 0, 1);
    const good = h.time.now;
    Object.defineProperty(h.time, "now", { get: () => (reads++ < 1 ? good : Number.NaN) });
    const result = await h.sync();
    expect(result).toMatchObject({ status: "error", boundary: "pre_effect_refusal" });
  });
});
