import { expect, it } from "vitest";
import { ToolError } from "../errors.js";
import { verifyAuditChain } from "../journal/audit-chain.js";
import type { AuditEventInput, Journal, LimitCharge } from "../journal/types.js";
import { chargeWindow, decodeWindowRecord, limitRecordId, windowCount } from "../limits/window.js";
import type { JournalUnderTest } from "./describe-journal.js";
import type { TamperableJournal } from "./describe-tampering.js";
import { at, checkFor, grantBy, sampleIntent, sampleRequest, settleFailed } from "./journal-samples.js";

/**
 * Window limits counted in the journal on every store: a call is charged in the transaction that
 * commits it (its intent, its grant's consumption, or a pure call's charge), the charge over `max`
 * is refused with nothing written, two handles on one store never both take the last slot, and a
 * limit row edited, put back or deleted behind the journal's back is refused.
 */

type WithJournal<J> = (fn: (j: J) => Promise<void>) => () => Promise<void>;

const MIN = 60_000;
const T0 = Date.parse(at());

type ChargeFields = Omit<LimitCharge, "recordId">;
export const sampleCharge = (over: { readonly [K in keyof ChargeFields]?: ChargeFields[K] | undefined } = {}): LimitCharge => {
  const defaults = { profile: "agent", limit: "sends", per: "principal", tenant: "tenant-a", principal: "agent", max: 3, windowMs: MIN, nowMs: T0 };
  const c = { ...defaults, ...over } as ChargeFields;
  return { ...c, recordId: limitRecordId(c.profile, c.limit, c.per, c.tenant, c.principal) };
};
const callEvent = (id: string, offset = 0): AuditEventInput => ({
  type: "call.charged",
  at: at(offset),
  invocationId: `inv_${id}`,
  toolId: "notes.add_note",
  principal: "agent",
  tenant: "tenant-a",
  data: {},
});
const rateLimited = (e: unknown) => ToolError.is(e, "rate_limited");
const counted = async (journal: Journal, charge: LimitCharge, nowMs = charge.nowMs): Promise<number> =>
  windowCount(decodeWindowRecord(await journal.getRecord("limit", charge.recordId)), charge.windowMs, nowMs);
const begin = (journal: Journal, key: string, charges: readonly LimitCharge[], offset = 0) =>
  journal.beginIntent(sampleIntent(key, { at: at(offset) }), { charges });

export function itChargesLimits(withJournal: WithJournal<JournalUnderTest>): void {
  it(
    "charges a call to its limit with its intent, one limit.charged event per record, and refuses the call after max with nothing written",
    withJournal(async ({ journal, auditKey }) => {
      const charge = sampleCharge({ max: 2 });
      expect((await begin(journal, "k1", [charge])).status).toBe("started");
      expect((await begin(journal, "k2", [charge])).status).toBe("started");
      const head = await journal.head();
      const refused = begin(journal, "k3", [charge]);
      await expect(refused).rejects.toSatisfy(rateLimited);
      const error = (await refused.catch((e: unknown) => e)) as ToolError;
      expect(error.message).toMatch(/^notes\.add_note: the limit "sends" allows 2 calls per principal every 1 min; the next call fits in \d+(\.\d)? s\.$/);
      expect(error.retryable).toBe(true);
      expect(error.details).toEqual({ limit: "sends", per: "principal", max: 2, windowMs: MIN, retryAfterMs: expect.any(Number) as number });
      expect(error.details?.["retryAfterMs"]).toBeGreaterThan(0);
      expect(await journal.head()).toEqual(head);
      expect(await journal.getIntent("k3")).toBeUndefined();
      expect(await counted(journal, charge)).toBe(2);
      const audit = await journal.readAudit();
      expect(audit.map((r) => r.type)).toEqual(["limit.charged", "intent.recorded", "limit.charged", "intent.recorded"]);
      expect(audit[0]).toMatchObject({
        subject: `limit:${charge.recordId}`,
        invocationId: "inv_k1",
        toolId: "notes.add_note",
        principal: "agent",
        tenant: "tenant-a",
        data: { profile: "agent", limit: "sends", per: "principal", count: 1, max: 2, windowMs: MIN },
      });
      expect(audit[2]?.data).toMatchObject({ count: 2 });
      expect(verifyAuditChain(audit, { key: auditKey }).ok).toBe(true);
    }),
  );

  it(
    "checks every charge before its first write: one limit over refuses the call, and its other limits are not charged either",
    withJournal(async ({ journal }) => {
      const wide = sampleCharge({ limit: "all", per: "tenant", max: 10 });
      const narrow = sampleCharge({ max: 1 });
      expect((await begin(journal, "k1", [wide, narrow])).status).toBe("started");
      const head = await journal.head();
      await expect(begin(journal, "k2", [wide, narrow])).rejects.toSatisfy(rateLimited);
      await expect(journal.chargeLimits([wide, narrow], callEvent("p1"))).rejects.toSatisfy(rateLimited);
      expect(await journal.head()).toEqual(head);
      expect(await counted(journal, wide)).toBe(1);
      // Another principal of the tenant has its own per-principal window, and shares the tenant's.
      const other = sampleCharge({ max: 1, principal: "agent-2" });
      expect(other.recordId).not.toBe(narrow.recordId);
      expect((await begin(journal, "k3", [wide, other])).status).toBe("started");
      expect(await counted(journal, wide)).toBe(2);
    }),
  );

  it(
    "does not charge a call whose key found its entry, nor one whose grant was refused; charges the retake of a failed attempt",
    withJournal(async ({ journal }) => {
      const charge = sampleCharge();
      const intent = sampleIntent("k1");
      await journal.beginIntent(intent, { charges: [charge] });
      expect((await journal.beginIntent(intent, { charges: [charge] })).status).toBe("existing");
      expect(await counted(journal, charge)).toBe(1);
      const pending = sampleRequest("r1");
      await journal.requestApproval(pending);
      expect((await journal.beginIntent(sampleIntent("k2"), { grant: checkFor(pending, "tok"), charges: [charge] })).status).toBe("grant_refused");
      expect(await counted(journal, charge)).toBe(1);
      await settleFailed(journal, intent);
      expect((await journal.beginIntent(intent, { retake: { attempts: 1, states: ["failed"] }, charges: [charge] })).status).toBe("started");
      expect(await counted(journal, charge)).toBe(2);
    }),
  );

  it(
    "charges a consumed grant and a pure call the same way, and a refused charge leaves the grant unconsumed",
    withJournal(async ({ journal }) => {
      const charge = sampleCharge({ max: 2 });
      const req = sampleRequest("r1");
      await journal.requestApproval(req);
      await journal.decideApproval("r1", grantBy("human"));
      expect((await journal.consumeGrant(checkFor(req, "tok"), callEvent("g1", 1000), { charges: [charge] })).status).toBe("consumed");
      expect((await journal.consumeGrant(checkFor(req, "tok"), callEvent("g2", 1000), { charges: [charge] })).status).toBe("already_consumed");
      expect(await counted(journal, charge)).toBe(1);
      const receipt = await journal.chargeLimits([charge], callEvent("p1", 1000));
      expect(receipt).toMatchObject({ journal: journal.kind, seq: (await journal.head()).seq, at: at(1000) });
      expect(await counted(journal, charge)).toBe(2);
      const types = (await journal.readAudit()).map((r) => r.type);
      expect(types.slice(-4)).toEqual(["approval.consumed", "limit.charged", "call.charged", "limit.charged"]);

      const second = sampleRequest("r2", { inputHash: "f".repeat(64) });
      await journal.requestApproval(second);
      await journal.decideApproval("r2", grantBy("human"));
      const head = await journal.head();
      await expect(journal.consumeGrant(checkFor(second, "tok"), callEvent("g3", 1000), { charges: [charge] })).rejects.toSatisfy(rateLimited);
      await expect(journal.chargeLimits([charge], callEvent("p2", 1000))).rejects.toSatisfy(rateLimited);
      expect(await journal.head()).toEqual(head);
      await expect(journal.beginIntent(sampleIntent("k1"), { grant: checkFor(second, "tok"), charges: [charge] })).rejects.toSatisfy(rateLimited);
      expect(await journal.head()).toEqual(head);
      expect((await journal.getApproval("r2"))?.status).toBe("granted");
      expect(await journal.chargeLimits([], callEvent("p3"))).toBeNull();
      expect(await journal.head()).toEqual(head);
    }),
  );

  it(
    "frees the window as time passes: the call after retryAfterMs fits, the one before it does not",
    withJournal(async ({ journal }) => {
      const charge = sampleCharge({ max: 1 });
      await journal.chargeLimits([charge], callEvent("p1"));
      const later = { ...charge, nowMs: T0 + 30_000 };
      const error = (await journal.chargeLimits([later], callEvent("p2", 30_000)).catch((e: unknown) => e)) as ToolError;
      expect(ToolError.is(error, "rate_limited")).toBe(true);
      const wait = error.details?.["retryAfterMs"] as number;
      expect(30_000 + wait).toBeGreaterThanOrEqual(MIN);
      await expect(journal.chargeLimits([{ ...charge, nowMs: T0 + 30_000 + wait - 1 }], callEvent("p3"))).rejects.toSatisfy(rateLimited);
      expect(await journal.chargeLimits([{ ...charge, nowMs: T0 + 30_000 + wait }], callEvent("p4"))).not.toBeNull();
    }),
  );

  it(
    "refuses a malformed charge before anything is written (config_invalid), on every way in",
    withJournal(async ({ journal }) => {
      const good = sampleCharge();
      const bad: unknown[] = [
        { ...good, recordId: sampleCharge({ principal: "someone-else" }).recordId },
        { ...good, recordId: "limit" },
        { ...sampleCharge({ max: 0 }) },
        { ...sampleCharge({ max: 1.5 }) },
        { ...sampleCharge({ windowMs: 999 }) },
        { ...sampleCharge({ nowMs: Number.NaN }) },
        { ...sampleCharge({ per: "world" as "tenant" }) },
        { ...sampleCharge({ principal: undefined }) },
        { ...sampleCharge({ per: "tenant", tenant: undefined }) },
        null,
      ];
      const head = await journal.head();
      const refusedCfg = (e: unknown) => ToolError.is(e, "config_invalid");
      for (const charge of bad) {
        const charges = [charge] as unknown as LimitCharge[];
        await expect(begin(journal, "k1", charges)).rejects.toSatisfy(refusedCfg);
        await expect(journal.chargeLimits(charges, callEvent("p1"))).rejects.toSatisfy(refusedCfg);
      }
      await expect(begin(journal, "k1", [good, good])).rejects.toSatisfy(refusedCfg);
      await expect(journal.chargeLimits("all" as unknown as LimitCharge[], callEvent("p1"))).rejects.toSatisfy(refusedCfg);
      await expect(journal.consumeGrant(checkFor(sampleRequest("r1"), "tok"), callEvent("g1"), { charges: [good, good] })).rejects.toSatisfy(refusedCfg);
      expect(await journal.head()).toEqual(head);
    }),
  );

  it(
    "refuses to count on a limit record that is not a window, or is another scope's (journal_failed), writing nothing",
    withJournal(async ({ journal }) => {
      const charge = sampleCharge();
      await journal.updateRecord("limit", charge.recordId, () => ({ value: { v: 1, buckets: "many" }, event: callEvent("x"), result: 0 }));
      const head = await journal.head();
      await expect(begin(journal, "k1", [charge])).rejects.toSatisfy((e) => ToolError.is(e, "journal_failed"));
      await expect(journal.chargeLimits([charge], callEvent("p1"))).rejects.toSatisfy((e) => ToolError.is(e, "journal_failed"));
      expect(await journal.head()).toEqual(head);
      // A window of another principal's scope kept under this scope's id is not this scope's count.
      const mine = sampleCharge({ limit: "mine" });
      const theirs = chargeWindow(undefined, sampleCharge({ limit: "mine", principal: "agent-2" }), T0);
      await journal.updateRecord("limit", mine.recordId, () => ({ value: theirs, event: callEvent("y"), result: 0 }));
      const moved = await journal.head();
      await expect(journal.chargeLimits([mine], callEvent("p2"))).rejects.toSatisfy((e) => ToolError.is(e, "journal_failed"));
      expect(await journal.head()).toEqual(moved);
    }),
  );

  it(
    "never lets two handles on one store both take a window's last slot",
    withJournal(async ({ journal, auditKey, reopen }) => {
      const other = reopen ? await reopen() : journal;
      try {
        const charge = sampleCharge({ max: 5, per: "tenant" });
        await journal.chargeLimits([charge], callEvent("warm"));
        const outcomes = await Promise.allSettled(
          Array.from({ length: 16 }, (_, i) => {
            const handle = i % 2 ? journal : other;
            return i % 4 < 2 ? begin(handle, `race${i}`, [charge]) : handle.chargeLimits([charge], callEvent(`race${i}`));
          }),
        );
        expect(outcomes.filter((o) => o.status === "fulfilled")).toHaveLength(4);
        expect(outcomes.filter((o) => o.status === "rejected").every((o) => rateLimited(o.reason))).toBe(true);
        expect(await counted(other, charge)).toBe(5);
        const audit = await journal.readAudit();
        expect(audit.filter((r) => r.type === "limit.charged").map((r) => r.data["count"])).toEqual([1, 2, 3, 4, 5]);
        expect(verifyAuditChain(audit, { key: auditKey }).ok).toBe(true);

        // Two limits per call, three principals sharing a tenant's window: a call refused by its
        // principal's window takes no slot of the tenant's, so exactly the tenant's max pass.
        const tenant = sampleCharge({ limit: "tenant-wide", per: "tenant", max: 12 });
        const mine = (i: number) => sampleCharge({ limit: "per-agent", max: 5, principal: `agent-${i % 3}` });
        const wave = await Promise.allSettled(
          Array.from({ length: 30 }, (_, i) => (i % 2 ? journal : other).chargeLimits([tenant, mine(i)], callEvent(`wave${i}`))),
        );
        expect(wave.filter((o) => o.status === "fulfilled")).toHaveLength(12);
        expect(wave.filter((o) => o.status === "rejected").every((o) => rateLimited(o.reason))).toBe(true);
        expect(await counted(journal, tenant)).toBe(12);
        const perAgent = await Promise.all([0, 1, 2].map((i) => counted(other, mine(i))));
        expect(perAgent.every((n) => n <= 5)).toBe(true);
        expect(perAgent.reduce((a, b) => a + b, 0)).toBe(12);
      } finally {
        if (other !== journal) await other.close();
      }
    }),
  );

  it(
    "rejects chargeLimits once closed",
    withJournal(async ({ journal }) => {
      await journal.close();
      await expect(journal.chargeLimits([sampleCharge()], callEvent("p1"))).rejects.toSatisfy((e) => ToolError.is(e, "journal_failed"));
      await expect(journal.chargeLimits([], callEvent("p1"))).rejects.toSatisfy((e) => ToolError.is(e, "journal_failed"));
    }),
  );
}

/** The limit row's stored envelope with its sealed window replaced (the seal kept). */
const emptied = (text: string): string => {
  const envelope = JSON.parse(text) as { row: { value: { buckets: unknown[] } } };
  envelope.row.value.buckets = [];
  return JSON.stringify(envelope);
};

export function itRefusesTamperedLimits(withJournal: WithJournal<TamperableJournal>): void {
  const refusedEverywhere = async (journal: Journal, charge: LimitCharge, problem: string) => {
    const head = await journal.head();
    const tamperedWith = (e: unknown) => ToolError.is(e, "journal_tampered") && e.details?.["problem"] === problem;
    await expect(begin(journal, "after", [charge])).rejects.toSatisfy(tamperedWith);
    await expect(journal.chargeLimits([charge], callEvent("after"))).rejects.toSatisfy(tamperedWith);
    expect(await journal.head()).toEqual(head);
    expect(await journal.getIntent("after")).toBeUndefined();
  };

  it(
    "refuses a limit row whose count was reset behind the journal's back: edited, an older version put back, or deleted",
    withJournal(async ({ journal, raw }) => {
      const edited = sampleCharge({ max: 2 });
      await journal.chargeLimits([edited], callEvent("e1"));
      await journal.chargeLimits([edited], callEvent("e2"));
      await raw.putRecord({ kind: "limit", id: edited.recordId, text: emptied((await raw.record("limit", edited.recordId))!) });
      await refusedEverywhere(journal, edited, "seal");

      const restated = sampleCharge({ limit: "restated", max: 2 });
      await journal.chargeLimits([restated], callEvent("r1"));
      const one = (await raw.record("limit", restated.recordId))!;
      await journal.chargeLimits([restated], callEvent("r2"));
      await raw.putRecord({ kind: "limit", id: restated.recordId, text: one });
      await refusedEverywhere(journal, restated, "restated");

      const deleted = sampleCharge({ limit: "deleted", max: 1 });
      await journal.chargeLimits([deleted], callEvent("d1"));
      await raw.deleteRecord("limit", deleted.recordId);
      await refusedEverywhere(journal, deleted, "missing");
    }),
  );
}
