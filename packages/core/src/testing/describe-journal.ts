import { describe, expect, it } from "vitest";
import { hashCanonical, sha256Hex } from "../canonical-json.js";
import { ToolError } from "../errors.js";
import { verifyAuditChain, type AuditKey } from "../journal/audit-chain.js";
import { createMemoryJournal } from "../journal/memory.js";
import type { ApprovalRequestInput, GrantCheck, IntentInput, Journal } from "../journal/types.js";

export interface JournalUnderTest {
  readonly journal: Journal;
  readonly auditKey: AuditKey;
  /** A second handle on the same store (another worker), where the store has one. */
  readonly reopen?: () => Promise<Journal>;
  readonly cleanup?: () => Promise<void> | void;
}

const T0 = Date.parse("2026-01-01T00:00:00.000Z");
const at = (offsetMs = 0): string => new Date(T0 + offsetMs).toISOString();

export function sampleIntent(key: string, overrides: Partial<IntentInput> = {}): IntentInput {
  const base = {
    key,
    invocationId: `inv_${key}`,
    toolId: "notes.add_note",
    principal: "agent",
    tenant: "tenant-a",
    inputHash: sha256Hex(`input-${key}`),
    input: { text: `note ${key}` },
    inputRedacted: false,
    effect: "write" as const,
    idempotent: false,
    target: `note ${key}`,
    at: at(),
    ...overrides,
  };
  return { ...base, intentHash: hashCanonical(base) };
}

export function sampleRequest(id: string, overrides: Partial<ApprovalRequestInput> = {}): ApprovalRequestInput {
  return {
    id,
    kind: "call",
    toolId: "notes.add_note",
    inputHash: sha256Hex(`input-${id}`),
    principal: "agent",
    tenant: "tenant-a",
    previewHash: sha256Hex(`preview-${id}`),
    preview: { summary: `add note ${id}` },
    target: undefined,
    invocationId: `inv_${id}`,
    idempotencyKey: `key-${id}`,
    createdAt: at(),
    expiresAt: at(3_600_000),
    ...overrides,
  };
}

const checkFor = (request: ApprovalRequestInput, token: string, overrides: Partial<GrantCheck["binding"]> = {}, when = at(1000)): GrantCheck => ({
  requestId: request.id,
  tokenHash: sha256Hex(token),
  binding: {
    toolId: request.toolId,
    inputHash: request.inputHash,
    principal: request.principal,
    tenant: request.tenant,
    previewHash: request.previewHash,
    ...overrides,
  },
  invocationId: "inv_consumer",
  at: when,
});

/**
 * The journal conformance suite: every store (memory, SQLite, PostgreSQL) passes the same tests,
 * so the gate can rely on one behaviour.
 */
export function describeJournal(name: string, open: () => Promise<JournalUnderTest>): void {
  const withJournal = (fn: (j: JournalUnderTest) => Promise<void>) => async () => {
    const j = await open();
    try {
      await fn(j);
    } finally {
      await j.journal.close();
      await j.cleanup?.();
    }
  };

  describe(`journal ${name} (conformance)`, () => {
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
        await journal.settleIntent("k2", {
          state: "failed",
          boundary: "effect_not_started",
          intentHash: intent.intentHash,
          invocationId: intent.invocationId,
          at: at(1),
          error: { code: "cancelled", message: "x" },
        });
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
        await journal.decideApproval("r3", { kind: "grant", approver: "human", tokenHash: sha256Hex("tok"), grantExpiresAt: at(600_000), at: at(500) });
        await expect(journal.decideApproval("r3", { kind: "deny", approver: "human", reason: "late", at: at(600) })).rejects.toThrow();
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
        await journal.decideApproval("r4", { kind: "grant", approver: "human", tokenHash: sha256Hex("tok"), grantExpiresAt: at(2000), at: at(500) });
        expect((await journal.consumeGrant(checkFor(req, "tok", {}, at(2000)), { type: "t", at: at(2000), data: {} })).status).toBe("expired");
        const denied = sampleRequest("r5", { inputHash: sha256Hex("x5") });
        await journal.requestApproval(denied);
        await journal.decideApproval("r5", { kind: "deny", approver: "human", reason: "no", at: at(500) });
        expect((await journal.consumeGrant(checkFor(denied, "tok"), { type: "t", at: at(1000), data: {} })).status).toBe("denied");
        expect((await journal.consumeGrant({ ...checkFor(denied, "tok"), requestId: "missing" }, { type: "t", at: at(1000), data: {} })).status).toBe(
          "unknown",
        );
        await expect(journal.decideApproval("missing", { kind: "deny", approver: "h", reason: "r", at: at(1) })).rejects.toThrow();
      }),
    );

    it(
      "writes the same audit trail, outbox and approvals as the memory journal, MAC for MAC",
      withJournal(async ({ journal, auditKey }) => {
        const reference = createMemoryJournal({ auditKey });
        const results: unknown[][] = [[], []];
        const stripJournal = (value: unknown): unknown => JSON.parse(JSON.stringify(value ?? null, (k, v: unknown) => (k === "journal" ? undefined : v)));
        const both = async (step: (j: Journal) => Promise<unknown>): Promise<void> => {
          for (const [i, j] of [journal, reference].entries()) {
            let outcome: unknown;
            try {
              outcome = { value: stripJournal(await step(j)) };
            } catch (error) {
              outcome = { error: (error as { code?: unknown }).code ?? "thrown" };
            }
            results[i]!.push(outcome);
          }
        };
        const settleWith = (key: string, intent: IntentInput, when: number) =>
          both((j) =>
            j.settleIntent(key, {
              state: "failed",
              boundary: "effect_failed",
              intentHash: intent.intentHash,
              invocationId: intent.invocationId,
              at: at(when),
              error: { code: "handler_failed", message: "no" },
              audit: { durationMs: 3 },
            }),
          );
        await both((j) =>
          j.append({
            type: "test.event",
            at: at(1),
            invocationId: "inv_x",
            toolId: "notes.add_note",
            principal: "agent",
            tenant: "t",
            data: { nested: { b: 1, a: [1, "2"] } },
          }),
        );
        const one = sampleIntent("same1", { target: undefined });
        const two = sampleIntent("same2", { at: at(10) });
        await both((j) => j.beginIntent(one));
        await both((j) => j.beginIntent(two));
        await both((j) => j.beginIntent(sampleIntent("same1")));
        await both((j) =>
          j.settleIntent("same1", {
            state: "completed",
            boundary: "effect_completed",
            intentHash: one.intentHash,
            invocationId: one.invocationId,
            at: at(20),
            result: { output: { ok: true }, outputHash: hashCanonical({ ok: true }), untrusted: true, findings: [] },
            audit: { result: "done" },
            eventType: "call.late_result",
          }),
        );
        await settleWith("same2", two, 30);
        await settleWith("missing", two, 31);
        await both((j) => j.claimOutbox({ states: ["failed", "pending"], updatedBefore: at(60_000), limit: 1, claimant: "w", at: at(40) }));
        await both((j) => j.beginIntent(two, { retake: { attempts: 2, states: ["failed"] } }));
        const req = sampleRequest("same-r1");
        await both((j) => j.requestApproval(req));
        await both((j) => j.requestApproval({ ...req, id: "same-r2", invocationId: "inv_join", createdAt: at(50) }));
        await both((j) => j.requestApproval(sampleRequest("same-r3", { kind: "output", target: "t3" })));
        await both((j) => j.requestApproval(sampleRequest("same-r3", { inputHash: sha256Hex("another input") })));
        await both((j) => j.requestApproval(sampleRequest("same-r4", { expiresAt: at(100) })));
        await both((j) => j.decideApproval("same-r4", { kind: "grant", approver: "human", tokenHash: sha256Hex("t"), grantExpiresAt: at(500), at: at(200) }));
        await both((j) => j.decideApproval("same-r4", { kind: "grant", approver: "human", tokenHash: sha256Hex("t"), grantExpiresAt: at(500), at: at(200) }));
        await both((j) => j.decideApproval("same-r3", { kind: "deny", approver: "human", reason: "no", at: at(60) }));
        await both((j) =>
          j.decideApproval("same-r1", { kind: "grant", approver: "human", tokenHash: sha256Hex("tok"), grantExpiresAt: at(600_000), at: at(70) }),
        );
        await both((j) => j.beginIntent(sampleIntent("same3"), { grant: checkFor(req, "wrong") }));
        await both((j) => j.consumeGrant(checkFor(req, "tok", { tenant: "other" }), { type: "approval.used", at: at(80), data: {} }));
        await both((j) => j.beginIntent(sampleIntent("same3"), { grant: checkFor(req, "tok") }));
        await both((j) => j.consumeGrant(checkFor(req, "tok"), { type: "approval.used", at: at(90), data: { requestId: req.id } }));
        await both((j) =>
          j.consumeGrant(checkFor(sampleRequest("same-r3", { kind: "output", target: "t3" }), "tok"), { type: "approval.used", at: at(90), data: {} }),
        );
        const r5 = sampleRequest("same-r5");
        await both((j) => j.requestApproval(r5));
        await both((j) =>
          j.decideApproval("same-r5", { kind: "grant", approver: "human", tokenHash: sha256Hex("tok5"), grantExpiresAt: at(600_000), at: at(95) }),
        );
        await both((j) => j.consumeGrant(checkFor(r5, "tok5"), { type: "approval.used", at: at(96), data: { requestId: r5.id } }));
        await both((j) => j.getIntent("same1"));
        await both((j) => j.getIntent("missing"));
        await both((j) => j.getApproval("same-r1"));
        await both((j) => j.listOutbox());
        await both((j) => j.listOutbox({ states: ["pending"], limit: 5 }));
        await both((j) => j.listApprovals());
        await both((j) => j.listApprovals({ status: ["pending", "expired"], limit: 5 }));
        await both((j) => j.readAudit({ afterSeq: 2, limit: 3 }));
        await both((j) => j.head());
        expect(results[0]).toEqual(results[1]);
        expect(await journal.readAudit()).toEqual(await reference.readAudit());
        expect(await journal.getIntent("same1")).toStrictEqual(await reference.getIntent("same1"));
        expect(await journal.getApproval("same-r3")).toStrictEqual(await reference.getApproval("same-r3"));
        await reference.close();
      }),
    );

    it(
      "consumes a grant exactly once under concurrency",
      withJournal(async ({ journal, reopen }) => {
        const req = sampleRequest("r6");
        await journal.requestApproval(req);
        await journal.decideApproval("r6", { kind: "grant", approver: "human", tokenHash: sha256Hex("tok"), grantExpiresAt: at(600_000), at: at(500) });
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
