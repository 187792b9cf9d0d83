import { describe, expect, it } from "vitest";
import { ToolError } from "../errors.js";
import { createMemoryJournal } from "../journal/memory.js";
import type { Journal } from "../journal/types.js";
import { readLimitUsage } from "./usage.js";
import { LIMIT_RECORD_KIND, chargeWindow, limitRecordId, type LimitCharge, type LimitPer } from "./window.js";

const DAY = 86_400_000;
const T0 = Date.parse("2026-03-02T10:00:00Z");

interface Scope {
  readonly profile?: string;
  readonly limit?: string;
  readonly per?: LimitPer;
  readonly tenant?: string;
  readonly principal?: string;
  readonly max?: number;
  readonly windowMs?: number;
}

function charge(scope: Scope, nowMs: number): LimitCharge {
  const profile = scope.profile ?? "assistant";
  const limit = scope.limit ?? "sends";
  const per = scope.per ?? "principal";
  return {
    recordId: limitRecordId(profile, limit, per, scope.tenant ?? "acme", scope.principal ?? "ana"),
    profile,
    limit,
    per,
    tenant: scope.tenant ?? "acme",
    principal: scope.principal ?? "ana",
    max: scope.max ?? 3,
    windowMs: scope.windowMs ?? DAY,
    nowMs,
  };
}

/** Charge `times` calls at `nowMs` the way the journal does: read, +1, sealed write with its event. */
async function spend(journal: Journal, scope: Scope, nowMs: number, times = 1, id?: string): Promise<void> {
  for (let i = 0; i < times; i++) {
    const c = charge(scope, nowMs);
    await journal.updateRecord(LIMIT_RECORD_KIND, id ?? c.recordId, (current) => ({
      value: chargeWindow(current as never, c, nowMs),
      event: { type: "limit.charged", at: new Date(nowMs).toISOString(), data: { limit: c.limit } },
      result: undefined,
    }));
  }
}

describe("readLimitUsage", () => {
  it("refuses a malformed limit record and a record filed under another scope's id (journal_failed), and a bad clock (config_invalid)", async () => {
    const garbled = createMemoryJournal();
    await garbled.updateRecord(LIMIT_RECORD_KIND, "a".repeat(64), () => ({
      value: { v: 1, profile: "p" },
      event: { type: "x", at: "t", data: {} },
      result: 0,
    }));
    await expect(readLimitUsage(garbled, { nowMs: T0 })).rejects.toSatisfy((e) => ToolError.is(e, "journal_failed"));
    // Filed under its own id, but not the shape the journal writes (a count of zero, a key of its own).
    for (const bad of [{ buckets: [[1, 0]] }, { note: "extra" }, { max: 0 }]) {
      const odd = createMemoryJournal();
      const c = charge({}, T0);
      await odd.updateRecord(LIMIT_RECORD_KIND, c.recordId, () => ({
        value: { ...chargeWindow(undefined, c, T0), ...bad },
        event: { type: "x", at: "t", data: {} },
        result: 0,
      }));
      await expect(readLimitUsage(odd, { nowMs: T0 })).rejects.toSatisfy((e) => ToolError.is(e, "journal_failed"));
    }

    // Ana's count written under Bo's record id: it would show Bo's budget spent (or hide Ana's).
    const misfiled = createMemoryJournal();
    await spend(misfiled, { principal: "ana" }, T0, 2, charge({ principal: "bo" }, T0).recordId);
    await expect(readLimitUsage(misfiled, { nowMs: T0 })).rejects.toSatisfy((e) => ToolError.is(e, "journal_failed"));

    for (const nowMs of [Number.NaN, -1, 1.5, Number.POSITIVE_INFINITY])
      await expect(readLimitUsage(createMemoryJournal(), { nowMs })).rejects.toSatisfy((e) => ToolError.is(e, "config_invalid"));
  });

  it("is empty for a journal without limit records, and leaves out a scope whose window has slid past its calls", async () => {
    const journal = createMemoryJournal();
    expect(await readLimitUsage(journal, { nowMs: T0 })).toEqual([]);
    await spend(journal, {}, T0, 2);
    expect(await readLimitUsage(journal, { nowMs: T0 + DAY + DAY / 60 + 1 })).toEqual([]);
  });

  it("counts each limit per scope, with the time until the next call fits and until the window is empty", async () => {
    const journal = createMemoryJournal();
    await spend(journal, { principal: "ana" }, T0, 3);
    await spend(journal, { principal: "bo" }, T0 + 3_600_000, 1);
    await spend(journal, { limit: "all", per: "tenant", max: 600, windowMs: 60_000 }, T0 + 3_600_000, 5);
    await spend(journal, { profile: "reader", limit: "reads", per: "profile", max: 10, windowMs: 60_000 }, T0 + 3_600_000, 1);
    const now = T0 + 3_600_000 + 1_000;
    const usage = await readLimitUsage(journal, { nowMs: now });
    expect(usage.map((u) => [u.profile, u.limit, u.tenant ?? "-", u.principal ?? "-", u.used])).toEqual([
      ["assistant", "all", "acme", "-", 5],
      ["assistant", "sends", "acme", "ana", 3],
      ["assistant", "sends", "acme", "bo", 1],
      ["reader", "reads", "-", "-", 1],
    ]);
    const ana = usage[1]!;
    expect(ana).toMatchObject({ per: "principal", max: 3, windowMs: DAY });
    // Full: the next call fits once the bucket of T0 leaves the window, a day (plus at most one bucket) after T0.
    expect(ana.retryAfterMs).toBeGreaterThan(DAY - 3_600_000 - 1_000);
    expect(ana.retryAfterMs).toBeLessThanOrEqual(DAY - 3_600_000 - 1_000 + DAY / 60);
    expect(ana.resetInMs).toBe(ana.retryAfterMs);
    expect(usage[2]).toMatchObject({ used: 1, retryAfterMs: 0 });
    expect(usage[2]!.resetInMs).toBeGreaterThan(DAY - 1_000);
    expect(usage[0]).toMatchObject({ used: 5, max: 600, retryAfterMs: 0 });
  });

  it("reads one profile only when asked, and measures a limit still declared against its current max and window", async () => {
    const journal = createMemoryJournal();
    await spend(journal, {}, T0, 3);
    await spend(journal, { profile: "reader", limit: "reads", per: "profile" }, T0, 1);
    expect((await readLimitUsage(journal, { nowMs: T0, profile: "reader" })).map((u) => u.profile)).toEqual(["reader"]);
    expect(await readLimitUsage(journal, { nowMs: T0, profile: "nobody" })).toEqual([]);

    const raised = [{ name: "assistant", limits: [{ kind: "window", id: "sends", max: 5, windowMs: DAY }] }];
    const [sends] = await readLimitUsage(journal, { nowMs: T0, profile: "assistant", profiles: raised });
    expect(sends).toMatchObject({ used: 3, max: 5, retryAfterMs: 0 });
    const [recorded] = await readLimitUsage(journal, { nowMs: T0, profile: "assistant" });
    expect(recorded).toMatchObject({ used: 3, max: 3 });
    expect(recorded!.retryAfterMs).toBeGreaterThan(0);
  });
});
