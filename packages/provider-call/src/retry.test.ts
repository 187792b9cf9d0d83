import { describe, expect, it } from "vitest";
import { headerValue, parseRetryAfter, resolveRetry, sleep } from "./retry.js";

describe("resolveRetry", () => {
  it("refuses attempts outside 1 to 10, negative delays and a sleep that is not a function", () => {
    for (const maxAttempts of [0, 11, 1.5, Number.NaN]) expect(() => resolveRetry({ maxAttempts })).toThrow(/retry.maxAttempts/);
    expect(() => resolveRetry({ maxDelayMs: -1 })).toThrow(/retry.maxDelayMs/);
    expect(() => resolveRetry({ baseDelayMs: Number.POSITIVE_INFINITY })).toThrow(/retry.baseDelayMs/);
    expect(() => resolveRetry({ sleep: 5 as never })).toThrow(/retry.sleep/);
  });

  it("fills in the options, then the connector's defaults, then the kit's", () => {
    expect(resolveRetry(undefined)).toMatchObject({ maxAttempts: 3, maxDelayMs: 10_000, baseDelayMs: 250, sleep });
    expect(resolveRetry({ maxAttempts: 1 }, { maxDelayMs: 30_000 })).toMatchObject({ maxAttempts: 1, maxDelayMs: 30_000, baseDelayMs: 250 });
    const waits: number[] = [];
    const recorded = resolveRetry({ sleep: async (ms) => void waits.push(ms) });
    expect(recorded.sleep).not.toBe(sleep);
  });
});

describe("parseRetryAfter", () => {
  it("ignores what is neither delay-seconds nor an HTTP date", () => {
    for (const value of [undefined, null, "", "-1", "1.5", "soon", "9999999", "0x10"]) expect(parseRetryAfter(value)).toBeUndefined();
  });

  it("reads delay-seconds and HTTP dates, rounding a date up and never below zero", () => {
    const now = Date.parse("2026-01-01T00:00:00Z");
    expect(parseRetryAfter(" 3 ", now)).toBe(3);
    expect(parseRetryAfter("Thu, 01 Jan 2026 00:00:02 GMT", now)).toBe(2);
    expect(parseRetryAfter("Wed, 31 Dec 2025 23:00:00 GMT", now)).toBe(0);
  });
});

describe("headerValue", () => {
  it("reads a Headers object, anything with get, and a record in any letter case", () => {
    expect(headerValue(new Headers({ "Retry-After": "4" }), "retry-after")).toBe("4");
    expect(headerValue({ get: (name: string) => (name === "retry-after" ? "5" : null) }, "retry-after")).toBe("5");
    expect(headerValue({ "Retry-After": "6" }, "retry-after")).toBe("6");
    expect(headerValue({ "retry-after": ["7"] }, "retry-after")).toBe("7");
    expect(headerValue(undefined, "retry-after")).toBeUndefined();
    expect(headerValue({ "retry-after": 8 }, "retry-after")).toBeUndefined();
  });
});

describe("sleep", () => {
  it("rejects with cancelled at once when the signal has already aborted, and when it aborts while waiting", async () => {
    await expect(sleep(10, AbortSignal.abort())).rejects.toMatchObject({ code: "cancelled" });
    const controller = new AbortController();
    const started = Date.now();
    const waiting = sleep(60_000, controller.signal);
    setTimeout(() => controller.abort(), 10);
    await expect(waiting).rejects.toMatchObject({ code: "cancelled" });
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it("resolves after the wait", async () => {
    const started = Date.now();
    await sleep(20, new AbortController().signal);
    expect(Date.now() - started).toBeGreaterThanOrEqual(15);
  });
});
