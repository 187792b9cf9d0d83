/**
 * Review of issue 16 (clocks): what the gate does with a clock that returns no time. NOT FIXED:
 * `it.fails` marks a call that throws today (gate.invoke promises never to); the fix belongs to
 * the gate's owner (see the review report). When it is fixed, these fail: turn them into `it`.
 */
import { describe, expect, it } from "vitest";
import { limitsSetup } from "./fixtures/limits-harness.js";

describe("review: a gate clock that returns no time", () => {
  for (const bad of [Number.NaN, Number.POSITIVE_INFINITY, 1e300]) {
    it.fails(`KNOWN: clock() = ${bad}: a write's invoke rejects (RangeError from the intent's timestamp) instead of refusing`, async () => {
      const h = limitsSetup([]);
      h.time.now = bad;
      const result = await h.sync();
      expect(result.status).toBe("error");
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
});
