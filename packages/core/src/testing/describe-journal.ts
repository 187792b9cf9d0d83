import { describe, expect, it } from "vitest";
import { hashCanonical, sha256Hex } from "../canonical-json.js";
import { ToolError } from "../errors.js";
import { verifyAuditChain, type AuditKey } from "../journal/audit-chain.js";
import { createMemoryJournal } from "../journal/memory.js";
import type { Journal } from "../journal/types.js";
import { at, checkFor, grantBy, sampleIntent, sampleRequest, settleFailed, settleUnknown, withJournalFrom } from "./journal-samples.js";
import { itWritesWhatTheMemoryJournalWrites } from "./journal-same-as-memory.js";
import { itKeepsRecords } from "./describe-records.js";
import { itDecidesApprovals } from "./describe-approvals.js";
import { itChargesLimits } from "./describe-limits.js";

export { sampleIntent, sampleRequest };

export interface JournalUnderTest {
  readonly journal: Journal;
  readonly auditKey: AuditKey;
  /** A second handle on the same store (another worker), where the store has one. */
  readonly reopen?: () => Promise<Journal>;
  readonly cleanup?: () => Promise<void> | void;
}

export function describeJournal(name: string, open: () => Promise<JournalUnderTest>): void {
  const withJournal = withJournalFrom(open);

  describe(`journal ${name} (conformance)`, () => {
    itKeepsRecords(withJournal);
    itDecidesApprovals(withJournal);
    itChargesLimits(withJournal);

    it(
      "chains audit events and verifies them",
      withJournal(async ({ journal, auditKey }) => {
        expect((await journal.head()).seq).toBe(0);
        for (let i = 0; i < 5; i++) await journal.append({ type: "test.event", at: at(i), data: { i } });
        const records = await journal.readAudit();
        expect(records.map((r) => r.seq)).toEqual([1, 2, 3, 4, 5]);
        const verdict = verifyAuditChain(records, { key: auditKey, expectedHead: await journal.head() });
        expect(verdict.ok).toBe(true);
        expect(verifyAuditChain(records, { key: "wrong key" }).ok).toBe(false);
        expect((await journal.readAudit({ afterSeq: 3 })).map((r) => r.seq)).toEqual([4, 5]);
      }),
    );

    it(
      "keeps one unbroken chain under concurrent appends",
      withJournal(async ({ journal, auditKey, reopen }) => {
        const other = reopen ? await reopen() : journal;
        await Promise.all(Array.from({ length: 40 }, (_, i) => (i % 2 === 0 ? journal : other).append({ type: "test.concurrent", at: at(i), data: { i } })));
        if (other !== journal) await other.close();
        const records = await journal.readAudit();
        expect(records).toHaveLength(40);
        expect(verifyAuditChain(records, { key: auditKey }).ok).toBe(true);
      }),
    );

    it(
      "records an intent once per key and settles it bound to the intent hash",
      withJournal(async ({ journal }) => {
        const intent = sampleIntent("k1");
        const first = await journal.beginIntent(intent);
        expect(first.status).toBe("started");
        const again = await journal.beginIntent(sampleIntent("k1", { invocationId: "inv_other" }));
        expect(again.status).toBe("existing");
        await expect(
          journal.settleIntent("k1", {
            state: "completed",
            boundary: "effect_completed",
            intentHash: "0".repeat(64),
            invocationId: intent.invocationId,
            at: at(5),
          }),
        ).rejects.toThrow();
        await journal.settleIntent("k1", {
          state: "completed",
          boundary: "effect_completed",
          intentHash: intent.intentHash,
          invocationId: intent.invocationId,
          at: at(5),
          result: { output: { id: 1 }, outputHash: hashCanonical({ id: 1 }), untrusted: false, findings: [] },
        });
        const entry = await journal.getIntent("k1");
        expect(entry?.state).toBe("completed");
        expect(entry?.result?.output).toEqual({ id: 1 });
        expect((await journal.listOutbox({ states: ["completed"] })).map((e) => e.key)).toEqual(["k1"]);
        const types = (await journal.readAudit()).map((r) => r.type);
        expect(types).toEqual(["intent.recorded", "intent.settled"]);
      }),
    );

    it(
      "lets exactly one of many concurrent beginIntent calls start a key",
      withJournal(async ({ journal, reopen }) => {
        const other = reopen ? await reopen() : journal;
        const results = await Promise.all(
          Array.from({ length: 10 }, (_, i) => (i % 2 ? journal : other).beginIntent(sampleIntent("race", { invocationId: `inv_${i}` }))),
        );
        if (other !== journal) await other.close();
        expect(results.filter((r) => r.status === "started")).toHaveLength(1);
      }),
    );

    it(
      "retakes an entry only by compare-and-set on attempts and state",
      withJournal(async ({ journal }) => {
        const intent = sampleIntent("k2");
        await journal.beginIntent(intent);
        await settleFailed(journal, intent);
        const wrongState = await journal.beginIntent(sampleIntent("k2"), { retake: { attempts: 1, states: ["unknown"] } });
        expect(wrongState.status).toBe("existing");
        const stale = await journal.beginIntent(sampleIntent("k2"), { retake: { attempts: 0, states: ["failed"] } });
        expect(stale.status).toBe("existing");
        const retaken = await journal.beginIntent(sampleIntent("k2"), { retake: { attempts: 1, states: ["failed"] } });
        expect(retaken.status).toBe("started");
        expect(retaken.status === "started" && retaken.entry.attempts).toBe(2);
        const twice = await journal.beginIntent(sampleIntent("k2"), { retake: { attempts: 1, states: ["failed"] } });
        expect(twice.status).toBe("existing");
      }),
    );

    it(
      "claims stale entries for recovery once, even with concurrent claimants",
      withJournal(async ({ journal, reopen }) => {
        for (let i = 0; i < 6; i++) await journal.beginIntent(sampleIntent(`stale${i}`, { at: at(i) }));
        const fresh = sampleIntent("fresh", { at: at(60_000) });
        await journal.beginIntent(fresh);
        const other = reopen ? await reopen() : journal;
        const claims = await Promise.all([
          journal.claimOutbox({ states: ["pending"], updatedBefore: at(30_000), limit: 10, claimant: "w1", at: at(90_000) }),
          other.claimOutbox({ states: ["pending"], updatedBefore: at(30_000), limit: 10, claimant: "w2", at: at(90_000) }),
        ]);
        if (other !== journal) await other.close();
        const keys = claims
          .flat()
          .map((e) => e.key)
          .sort();
        expect(keys).toEqual(["stale0", "stale1", "stale2", "stale3", "stale4", "stale5"]);
        for (const entry of claims.flat()) expect(entry.attempts).toBe(2);
        // Claimed entries were touched: a second pass with the same cutoff finds nothing.
        expect(await journal.claimOutbox({ states: ["pending"], updatedBefore: at(30_000), limit: 10, claimant: "w3", at: at(95_000) })).toEqual([]);
        // The retake of a claimed entry is a compare-and-set on the new attempt count.
        const retake = await journal.beginIntent(sampleIntent("stale0"), { retake: { attempts: 2, states: ["pending"] } });
        expect(retake.status).toBe("started");
        // A lease stamps claimed entries in the future: nobody else takes them until it runs out.
        await journal.beginIntent(sampleIntent("leased", { at: at(0) }));
        const leased = await journal.claimOutbox({
          states: ["pending"],
          updatedBefore: at(30_000),
          limit: 10,
          claimant: "w4",
          at: at(96_000),
          leaseUntil: at(500_000),
        });
        expect(leased.find((e) => e.key === "leased")?.updatedAt).toBe(at(500_000));
        const later = await journal.claimOutbox({ states: ["pending"], updatedBefore: at(400_000), limit: 10, claimant: "w5", at: at(400_000) });
        expect(later.map((e) => e.key)).not.toContain("leased");
      }),
    );

    it(
      "claims an unknown entry only while recovery may retry it: idempotent, its input whole, fewer than four attempts",
      withJournal(async ({ journal, auditKey, reopen }) => {
        const retry = sampleIntent("retry", { idempotent: true });
        const charge = sampleIntent("charge");
        const redacted = sampleIntent("redacted", { idempotent: true, inputRedacted: true });
        // Listed first: with a limit of one, an unknown entry no claim may take must not use up the claim.
        for (const intent of [charge, redacted, retry]) {
          await journal.beginIntent(intent);
          await settleUnknown(journal, intent);
        }
        const before = await journal.head();
        const claim = (j: Journal, claimant: string) =>
          j.claimOutbox({ states: ["pending", "unknown"], updatedBefore: at(30_000), limit: 1, claimant, at: at(60_000), leaseUntil: at(120_000) });
        const other = reopen ? await reopen() : journal;
        const claims = (await Promise.all([claim(journal, "w1"), claim(other, "w2")])).flat();
        if (other !== journal) await other.close();
        // Claimed like a pending one: pending again under a lease, its effect still maybe taken.
        expect(claims.map((e) => [e.key, e.state, e.boundary, e.attempts, e.updatedAt, e.error])).toEqual([
          ["retry", "pending", "effect_state_unknown", 2, at(120_000), undefined],
        ]);
        expect(await journal.getIntent("retry")).toMatchObject({ state: "pending", attempts: 2 });
        const events = await journal.readAudit({ afterSeq: before.seq });
        expect(events.map((e) => [e.type, e.data["key"], e.data["state"]])).toEqual([["outbox.claimed", "retry", "unknown"]]);
        // The others stay for an operator, untouched.
        for (const key of ["charge", "redacted"]) expect(await journal.getIntent(key)).toMatchObject({ state: "unknown", attempts: 1 });
        // Retried while it has had fewer than four attempts in all; then it too is left for an operator.
        for (const attempts of [3, 4]) {
          await settleUnknown(journal, retry);
          expect((await claim(journal, "w3")).map((e) => [e.key, e.attempts])).toEqual([["retry", attempts]]);
        }
        await settleUnknown(journal, retry);
        expect(await claim(journal, "w4")).toEqual([]);
        expect(await journal.getIntent("retry")).toMatchObject({ state: "unknown", attempts: 4 });
        expect(verifyAuditChain(await journal.readAudit(), { key: auditKey }).ok).toBe(true);
      }),
    );

    it(
      "joins a pending approval request with the same binding",
      withJournal(async ({ journal }) => {
        const a = await journal.requestApproval(sampleRequest("r1"));
        const b = await journal.requestApproval({ ...sampleRequest("r2"), inputHash: a.request.inputHash, previewHash: a.request.previewHash });
        expect(a.created).toBe(true);
        expect(b.created).toBe(false);
        expect(b.request.id).toBe("r1");
        expect((await journal.listApprovals({ status: ["pending"] })).map((r) => r.id)).toEqual(["r1"]);
      }),
    );

    it(
      "refuses a second approval request with an id already used, and keeps the first",
      withJournal(async ({ journal }) => {
        const first = sampleRequest("dup");
        await journal.requestApproval(first);
        const again = journal.requestApproval(sampleRequest("dup", { inputHash: sha256Hex("other input") }));
        await expect(again).rejects.toThrow(/already exists/);
        await expect(again).rejects.toSatisfy((e) => ToolError.is(e, "journal_failed"));
        expect((await journal.getApproval("dup"))?.inputHash).toBe(first.inputHash);
        expect((await journal.readAudit()).map((r) => r.type)).toEqual(["approval.requested"]);
      }),
    );

    it(
      "rejects every call once closed, and closes twice without harm",
      withJournal(async ({ journal }) => {
        await journal.beginIntent(sampleIntent("before-close"));
        await journal.close();
        const calls: (() => Promise<unknown>)[] = [
          () => journal.append({ type: "test.event", at: at(), data: {} }),
          () => journal.readAudit(),
          () => journal.head(),
          () => journal.beginIntent(sampleIntent("after-close")),
          () => journal.getIntent("before-close"),
          () => journal.listOutbox(),
          () => journal.claimOutbox({ states: ["pending"], updatedBefore: at(60_000), limit: 10, claimant: "w", at: at(1) }),
          () => journal.requestApproval(sampleRequest("after-close")),
          () => journal.getApproval("after-close"),
          () => journal.listApprovals(),
        ];
        for (const call of calls) await expect(call()).rejects.toSatisfy((e) => ToolError.is(e, "journal_failed"));
        await journal.close();
      }),
    );

    it(
      "reads limits and positions as whole numbers from 0, and refuses a claim without a valid cutoff",
      withJournal(async ({ journal }) => {
        for (const key of ["l1", "l2", "l3"]) await journal.beginIntent(sampleIntent(key));
        expect(await journal.listOutbox({ limit: -1 })).toEqual([]);
        expect((await journal.listOutbox({ limit: 2.7 })).map((e) => e.key)).toEqual(["l1", "l2"]);
        expect((await journal.listOutbox({ limit: Number.NaN })).length).toBe(0);
        expect((await journal.readAudit({ afterSeq: 1.5, limit: 1.5 })).map((r) => r.seq)).toEqual([2]);
        expect((await journal.readAudit({ afterSeq: -4 })).map((r) => r.seq)).toEqual([1, 2, 3]);
        await journal.requestApproval(sampleRequest("l-r1"));
        expect(await journal.listApprovals({ limit: 0 })).toEqual([]);
        expect(await journal.claimOutbox({ states: ["pending"], updatedBefore: at(60_000), limit: -1, claimant: "w", at: at(1) })).toEqual([]);
        await expect(journal.claimOutbox({ states: ["pending"], updatedBefore: "not a time", limit: 10, claimant: "w", at: at(1) })).rejects.toThrow(
          /not a time/,
        );
        expect((await journal.head()).seq).toBe(4);
      }),
    );

    it(
      "decides a request once, and a mismatching check does not burn the grant",
      withJournal(async ({ journal }) => {
        const req = sampleRequest("r3");
        await journal.requestApproval(req);
        await journal.decideApproval("r3", grantBy("human"));
        await expect(journal.decideApproval("r3", { kind: "deny", approver: "human", via: "owner", reason: "late", at: at(600) })).rejects.toThrow();
        for (const field of ["toolId", "inputHash", "principal", "tenant", "previewHash"] as const) {
          const outcome = await journal.consumeGrant(checkFor(req, "tok", { [field]: "other" }), { type: "test.used", at: at(1000), data: {} });
          expect(outcome.status).toBe("mismatch");
        }
        expect((await journal.consumeGrant(checkFor(req, "wrong token"), { type: "test.used", at: at(1000), data: {} })).status).toBe("mismatch");
        const intent = sampleIntent("k3");
        const mismatched = await journal.beginIntent(intent, { grant: checkFor(req, "tok", { inputHash: "other" }) });
        expect(mismatched.status).toBe("grant_refused");
        expect(await journal.getIntent("k3")).toBeUndefined();
        const ok = await journal.beginIntent(intent, { grant: checkFor(req, "tok") });
        expect(ok.status).toBe("started");
        expect((await journal.getApproval("r3"))?.status).toBe("consumed");
        const again = await journal.consumeGrant(checkFor(req, "tok"), { type: "test.used", at: at(1000), data: {} });
        expect(again.status).toBe("already_consumed");
      }),
    );

    it(
      "refuses an expired grant and a denied request",
      withJournal(async ({ journal }) => {
        const req = sampleRequest("r4");
        await journal.requestApproval(req);
        await journal.decideApproval("r4", grantBy("human", "tok", at(2000)));
        expect((await journal.consumeGrant(checkFor(req, "tok", {}, at(2000)), { type: "t", at: at(2000), data: {} })).status).toBe("expired");
        const denied = sampleRequest("r5", { inputHash: sha256Hex("x5") });
        await journal.requestApproval(denied);
        await journal.decideApproval("r5", { kind: "deny", approver: "human", via: "owner", reason: "no", at: at(500) });
        expect((await journal.consumeGrant(checkFor(denied, "tok"), { type: "t", at: at(1000), data: {} })).status).toBe("denied");
        expect((await journal.consumeGrant({ ...checkFor(denied, "tok"), requestId: "missing" }, { type: "t", at: at(1000), data: {} })).status).toBe(
          "unknown",
        );
        await expect(journal.decideApproval("missing", { kind: "deny", approver: "h", via: "owner", reason: "r", at: at(1) })).rejects.toThrow();
      }),
    );

    itWritesWhatTheMemoryJournalWrites(withJournal);

    it(
      "consumes a grant exactly once under concurrency",
      withJournal(async ({ journal, reopen }) => {
        const req = sampleRequest("r6");
        await journal.requestApproval(req);
        await journal.decideApproval("r6", grantBy("human"));
        const other = reopen ? await reopen() : journal;
        const outcomes = await Promise.all(
          Array.from({ length: 12 }, (_, i) => (i % 2 ? journal : other).beginIntent(sampleIntent(`c${i}`), { grant: checkFor(req, "tok") })),
        );
        if (other !== journal) await other.close();
        expect(outcomes.filter((o) => o.status === "started")).toHaveLength(1);
        expect(outcomes.filter((o) => o.status === "grant_refused")).toHaveLength(11);
      }),
    );
  });
}
