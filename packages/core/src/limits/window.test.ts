import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { canonicalJson, sha256Hex } from "../canonical-json.js";
import { ToolError } from "../errors.js";
import {
  chargeWindow,
  decodeWindowRecord,
  durationText,
  limitRecordId,
  retryAfterMs,
  windowCount,
  windowLimitError,
  type LimitCharge,
  type WindowRecord,
} from "./window.js";

const DAY = 86_400_000;
const MIN = 60_000;

const charge = (over: Partial<LimitCharge> = {}): LimitCharge => {
  const base = { profile: "agent", limit: "sends", per: "principal" as const, tenant: "t1", principal: "p1", max: 3, windowMs: MIN, nowMs: 0, ...over };
  return { ...base, recordId: limitRecordId(base.profile, base.limit, base.per, base.tenant, base.principal) };
};

/** Charge at each time (ascending), refusing as the journal does; returns the times let through. */
function admit(times: readonly number[], max: number, windowMs: number): number[] {
  let rec: WindowRecord | undefined;
  const passed: number[] = [];
  for (const t of times) {
    if (windowCount(rec, windowMs, t) + 1 > max) continue;
    rec = decodeWindowRecord(JSON.parse(JSON.stringify(chargeWindow(rec, charge({ max, windowMs, nowMs: t }), t))));
    passed.push(t);
  }
  return passed;
}

describe("the window refuses", () => {
  it("the call after max in one window, and says when the next one fits", () => {
    const times = [1_000, 2_000, 3_000, 4_000];
    expect(admit(times, 3, MIN)).toEqual([1_000, 2_000, 3_000]);
    let rec: WindowRecord | undefined;
    for (const t of [1_000, 2_000, 3_000]) rec = chargeWindow(rec, charge({ nowMs: t }), t);
    expect(windowCount(rec, MIN, 4_000)).toBe(3);
    const wait = retryAfterMs(rec, MIN, 3, 4_000);
    expect(wait).toBeGreaterThan(0);
    // The oldest call has left every real window of 60 s by then (at most one bucket, 1 s, early).
    expect(4_000 + wait).toBeGreaterThanOrEqual(1_000 + MIN);
    expect(4_000 + wait).toBeLessThanOrEqual(1_000 + MIN + 1_000 + 1_000);
    expect(windowCount(rec, MIN, 4_000 + wait) + 1).toBeLessThanOrEqual(3);
    expect(windowCount(rec, MIN, 4_000 + wait - 1) + 1).toBeGreaterThan(3);
  });

  it("calls from a clock ahead of ours (buckets above the current one) count", () => {
    const ahead = chargeWindow(undefined, charge({ nowMs: 10 * MIN }), 10 * MIN);
    expect(windowCount(ahead, MIN, 5 * MIN)).toBe(1);
    const both = chargeWindow(ahead, charge({ nowMs: 5 * MIN }), 5 * MIN);
    expect(both.buckets.map(([i]) => i)).toEqual([300, 600]);
    expect(windowCount(both, MIN, 5 * MIN)).toBe(2);
  });

  it("a worker whose clock is ahead by more than the window erases nobody's calls", () => {
    let rec: WindowRecord | undefined;
    for (const t of [1_000, 2_000]) rec = chargeWindow(rec, charge({ nowMs: t }), t);
    rec = chargeWindow(rec, charge({ nowMs: 3_600_000 }), 3_600_000);
    expect(windowCount(rec, MIN, 3_000)).toBe(3);
    expect(windowCount(rec, MIN, 3_600_000)).toBe(1);
  });

  it("a worker whose clock is more than a window behind counts every older call (it refuses early, never unseen)", () => {
    let rec: WindowRecord | undefined;
    for (let s = 0; s < 300; s++) rec = chargeWindow(rec, charge({ nowMs: 3_600_000 + s * 1_000 }), 3_600_000 + s * 1_000);
    expect(rec!.buckets.length).toBeLessThanOrEqual(122);
    expect(windowCount(rec, MIN, 3_600_000 + 299_000)).toBe(61);
    expect(windowCount(rec, MIN, 3_000)).toBe(300);
    expect(retryAfterMs(rec, MIN, 3, 3_000)).toBeGreaterThan(3_600_000);
  });

  it("keeps at most 122 buckets whatever the workers' clocks, merging the oldest forward so no call is counted less", () => {
    let rec: WindowRecord | undefined;
    // Five workers whose clocks are hours apart, each charging a full window of its own (a clock
    // behind keeps the buckets of those ahead).
    for (let worker = 4; worker >= 0; worker--)
      for (let s = 0; s < 61; s++) {
        const t = worker * 3_600_000 + s * 1_000;
        rec = chargeWindow(rec, charge({ nowMs: t }), t);
      }
    rec = chargeWindow(rec, charge({ nowMs: 0 }), 0);
    expect(rec!.buckets.length).toBeLessThanOrEqual(122);
    expect(decodeWindowRecord(JSON.parse(JSON.stringify(rec)))).toEqual(rec);
    // The slowest clock still counts every call the record holds (none dropped by the cap).
    expect(windowCount(rec, MIN, 0)).toBe(rec!.buckets.reduce((sum, [, n]) => sum + n, 0));
    expect(windowCount(rec, MIN, 0)).toBe(5 * 61 + 1);
  });

  it("a named limit whose window changed never counts an old call as older than it was", () => {
    let rec: WindowRecord | undefined;
    for (let i = 0; i < 3; i++) rec = chargeWindow(rec, charge({ windowMs: DAY, nowMs: 1_000 }), 1_000);
    // Width 24 min before, 1 s now: the calls sit at the end of their old 24-min bucket.
    expect(windowCount(rec, MIN, 1_000)).toBe(3);
    expect(windowCount(rec, MIN, 24 * MIN + 59_000)).toBe(3);
    expect(windowCount(rec, MIN, 24 * MIN + 62_000)).toBe(0);
    const after = chargeWindow(rec, charge({ nowMs: 2_000 }), 2_000);
    expect(after.windowMs).toBe(MIN);
    expect(windowCount(after, MIN, 2_000)).toBe(4);
  });

  it("raising max lets more calls in under the same record, lowering it refuses at once", () => {
    let rec: WindowRecord | undefined;
    for (let i = 0; i < 3; i++) rec = chargeWindow(rec, charge({ nowMs: 1_000 }), 1_000);
    expect(retryAfterMs(rec, MIN, 4, 1_000)).toBe(0);
    expect(retryAfterMs(rec, MIN, 2, 1_000)).toBeGreaterThan(0);
    expect(chargeWindow(rec, charge({ max: 4, nowMs: 1_000 }), 1_000).max).toBe(4);
  });
});

describe("a stored window record", () => {
  const good = chargeWindow(undefined, charge(), 5_000);

  it.each([
    ["not an object", "x"],
    ["null", null],
    ["another version", { ...good, v: 2 }],
    ["an unknown key", { ...good, extra: 1 }],
    ["per not one of three", { ...good, per: "world" }],
    ["max 0", { ...good, max: 0 }],
    ["max above a million", { ...good, max: 1_000_001 }],
    ["max not whole", { ...good, max: 1.5 }],
    ["window below a second", { ...good, windowMs: 999 }],
    ["window above 366 days", { ...good, windowMs: 366 * DAY + 1 }],
    ["a bucket count 0", { ...good, buckets: [[1, 0]] }],
    ["a negative count", { ...good, buckets: [[1, -5]] }],
    ["a negative index", { ...good, buckets: [[-1, 1]] }],
    ["a fractional count", { ...good, buckets: [[1, 0.5]] }],
    [
      "buckets out of order",
      {
        ...good,
        buckets: [
          [2, 1],
          [1, 1],
        ],
      },
    ],
    [
      "a bucket twice",
      {
        ...good,
        buckets: [
          [1, 1],
          [1, 1],
        ],
      },
    ],
    ["a bucket with three numbers", { ...good, buckets: [[1, 1, 1]] }],
    ["a count as text", { ...good, buckets: [[1, "1"]] }],
    ["too many buckets", { ...good, buckets: Array.from({ length: 245 }, (_, i) => [i, 1]) }],
    ["a tenant that is not text", { ...good, tenant: 7 }],
  ])("is refused with a plain error when it is %s", (_, value) => {
    expect(() => decodeWindowRecord(value)).toThrow(/limit record does not match its schema/);
    expect(() => decodeWindowRecord(value)).not.toThrow(ToolError);
  });

  it("round-trips through JSON", () => {
    expect(decodeWindowRecord(JSON.parse(JSON.stringify(good)))).toEqual(good);
    expect(decodeWindowRecord(undefined)).toBeUndefined();
  });
});

describe("limitRecordId", () => {
  it("is the hash of the limit and the scope it counts per, nothing else", () => {
    expect(limitRecordId("agent", "sends", "principal", "t1", "p1")).toBe(sha256Hex(canonicalJson(["agent", "sends", "principal", "t1", "p1"])));
    expect(limitRecordId("agent", "sends", "tenant", "t1", "p1")).toBe(limitRecordId("agent", "sends", "tenant", "t1", "p2"));
    expect(limitRecordId("agent", "sends", "tenant", "t1", "p1")).not.toBe(limitRecordId("agent", "sends", "tenant", "t2", "p1"));
    expect(limitRecordId("agent", "sends", "profile", "t1", "p1")).toBe(limitRecordId("agent", "sends", "profile", "t2", "p2"));
    expect(limitRecordId("agent", "sends", "principal", "t1", "p1")).not.toBe(limitRecordId("agent", "sends", "principal", "t2", "p1"));
    // No separator to forge: "a,b" + "c" is not "a" + "b,c".
    expect(limitRecordId("a", "b,c", "profile", undefined, undefined)).not.toBe(limitRecordId("a,b", "c", "profile", undefined, undefined));
    expect(limitRecordId("agent", "sends", "principal", "t1", "p1")).toMatch(/^[0-9a-f]{64}$/);
  });

  it("keeps only its scope in the stored record", () => {
    const rec = chargeWindow(undefined, charge({ per: "tenant" }), 0);
    expect(rec.tenant).toBe("t1");
    expect(rec).not.toHaveProperty("principal");
    expect(chargeWindow(undefined, charge({ per: "profile" }), 0)).not.toHaveProperty("tenant");
  });
});

describe("the refusal", () => {
  it("tells the model the limit and when the next call fits", () => {
    const e = windowLimitError("gmail.send_message", { limit: "sends", per: "principal", max: 20, windowMs: DAY }, 90_000);
    expect(e.code).toBe("rate_limited");
    expect(e.retryable).toBe(true);
    expect(e.message).toBe('gmail.send_message: the limit "sends" allows 20 calls per principal every 24 h; the next call fits in 90 s.');
    expect(e.details).toEqual({ limit: "sends", per: "principal", max: 20, windowMs: DAY, retryAfterMs: 90_000 });
    expect(e.retryAfterSeconds).toBe(90);
  });

  it.each([
    [1_000, "1 s"],
    [1_500, "1.5 s"],
    [MIN, "1 min"],
    [61_000, "61 s"],
    [150_000, "2.5 min"],
    [90 * MIN, "90 min"],
    [36 * 3_600_000, "36 h"],
    [999, "999 ms"],
    [3_600_000, "1 h"],
    [DAY, "24 h"],
    [2 * DAY, "2 d"],
    [366 * DAY, "366 d"],
    [250, "250 ms"],
  ])("reads %i ms as %s", (ms, text) => {
    expect(durationText(ms)).toBe(text);
  });
});

describe("property: no window of windowMs ever holds more than max charges", () => {
  it("for any max, window and sequence of call times", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 8 }),
        fc.integer({ min: 1_000, max: 200_000 }),
        fc.array(fc.integer({ min: 0, max: 600_000 }), { maxLength: 120 }),
        (max, windowMs, raw) => {
          const times = [...raw].sort((a, b) => a - b);
          const passed = admit(times, max, windowMs);
          // Every real window [t, t + windowMs) starting at a passed call holds at most max passed calls.
          for (let i = 0; i < passed.length; i++) {
            let inWindow = 0;
            for (let j = i; j < passed.length && passed[j]! < passed[i]! + windowMs; j++) inWindow++;
            expect(inWindow).toBeLessThanOrEqual(max);
          }
        },
      ),
    );
  });

  it("and a call waiting retryAfterMs always fits then", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 5 }),
        fc.integer({ min: 1_000, max: 100_000 }),
        fc.array(fc.integer({ min: 0, max: 300_000 }), { minLength: 1, maxLength: 60 }),
        (max, windowMs, raw) => {
          const times = [...raw].sort((a, b) => a - b);
          let rec: WindowRecord | undefined;
          for (const t of times) rec = chargeWindow(rec, charge({ max, windowMs, nowMs: t }), t);
          const now = times[times.length - 1]!;
          const wait = retryAfterMs(rec, windowMs, max, now);
          expect(windowCount(rec, windowMs, now + wait) + 1).toBeLessThanOrEqual(max);
          if (wait > 1) expect(windowCount(rec, windowMs, now + wait - 1) + 1).toBeGreaterThan(max);
        },
      ),
    );
  });
});
