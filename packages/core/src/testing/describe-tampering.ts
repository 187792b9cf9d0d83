import { describe, expect, it } from "vitest";
import { hashCanonical, sha256Hex } from "../canonical-json.js";
import { ToolError } from "../errors.js";
import { verifyAuditChain, type AuditKey } from "../journal/audit-chain.js";
import { createJournal } from "../journal/create-journal.js";
import type { RowEvent, StoredEntry, StoredRecord, StoredRequest } from "../journal/driver.js";
import { memoryDriver } from "../journal/memory.js";
import { pruneJournal, verifyJournalRows } from "../journal/operations.js";
import type { Journal } from "../journal/types.js";
import type { JournalUnderTest } from "./describe-journal.js";
import { itRefusesTamperedRecords } from "./describe-records.js";
import { itRefusesTamperedLimits } from "./describe-limits.js";
import { itRefusesTamperedEdits } from "./describe-edit-tampering.js";
import { at, checkFor, sampleIntent, sampleRequest, settleUnknown, withJournalFrom } from "./journal-samples.js";

/**
 * The store's tables as an attacker with write access to them sees them: rows read and written as
 * stored text, behind the journal's back.
 */
export interface RawJournalRows {
  entry(key: string): Promise<string | undefined>;
  /** Insert or replace the row (text and index columns) under `row.key`. */
  putEntry(row: StoredEntry): Promise<void>;
  deleteEntry(key: string): Promise<void>;
  request(id: string): Promise<string | undefined>;
  putRequest(row: StoredRequest): Promise<void>;
  deleteRequest(id: string): Promise<void>;
  record(kind: string, id: string): Promise<string | undefined>;
  /** Insert or replace the record row under `row.kind` and `row.id`. */
  putRecord(row: StoredRecord): Promise<void>;
  deleteRecord(kind: string, id: string): Promise<void>;
  /** Edit the audit table's subject index so `subject`'s latest link is `to` again. */
  rewindSubject(subject: string, to: RowEvent): Promise<void>;
}

export interface TamperableJournal extends JournalUnderTest {
  readonly raw: RawJournalRows;
}

type Row = Record<string, unknown>;
/** The stored envelope with its row (and body) changed, its seal kept. */
const edited = (text: string, edit: (row: Row, envelope: Row) => void): string => {
  const envelope = JSON.parse(text) as Row;
  edit(envelope["row"] as Row, envelope);
  return JSON.stringify(envelope);
};
const tamperedWith = (problem?: string) => (e: unknown) => ToolError.is(e, "journal_tampered") && (problem === undefined || e.details?.["problem"] === problem);
const settleOk = (journal: Journal, key: string, output: unknown, intentHash = sampleIntent(key).intentHash) =>
  journal.settleIntent(key, {
    state: "completed",
    boundary: "effect_completed",
    intentHash,
    invocationId: `inv_${key}`,
    at: at(100),
    result: { output, outputHash: hashCanonical(output ?? null), untrusted: false, findings: [] },
  });
const grant = (journal: Journal, id: string, token = "tok") =>
  journal.decideApproval(id, { kind: "grant", approver: "human", via: "owner", tokenHash: sha256Hex(token), grantExpiresAt: at(600_000), at: at(500) });
const usedEvent = { type: "test.released", at: at(900), data: {} };

/**
 * Stored rows carry their own proof: every store refuses, as `journal_tampered`, a row edited,
 * re-stated, moved, copied, inserted or deleted behind the journal's back, and `verifyJournalRows`
 * reports it. Each store runs it against its real tables.
 */
export function describeJournalTampering(name: string, open: () => Promise<TamperableJournal>): void {
  const withJournal = withJournalFrom(open);

  describe(`journal ${name}: stored rows carry their own proof`, () => {
    itRefusesTamperedRecords(withJournal);
    itRefusesTamperedLimits(withJournal);
    itRefusesTamperedEdits(withJournal);

    it(
      "refuses a pending request set to granted with a token hash of the attacker's choosing",
      withJournal(async ({ journal, raw }) => {
        const request = sampleRequest("r1");
        await journal.requestApproval(request);
        const text = edited((await raw.request("r1"))!, (row) => {
          Object.assign(row, { status: "granted", decidedBy: "mallory", decidedAt: at(1), grantTokenHash: sha256Hex("mine"), grantExpiresAt: at(600_000) });
        });
        await raw.putRequest({ id: "r1", status: "granted", inputHash: request.inputHash, text });
        const head = await journal.head();
        await expect(journal.consumeGrant(checkFor(request, "mine"), usedEvent)).rejects.toSatisfy(tamperedWith("seal"));
        await expect(journal.beginIntent(sampleIntent("k1"), { grant: checkFor(request, "mine") })).rejects.toSatisfy(tamperedWith());
        await expect(journal.getApproval("r1")).rejects.toSatisfy(tamperedWith());
        await expect(journal.listApprovals()).rejects.toSatisfy(tamperedWith());
        expect(await journal.head()).toEqual(head);
        expect(await journal.getIntent("k1")).toBeUndefined();
      }),
    );

    it(
      "refuses a consumed grant flipped back to granted by re-stating its earlier version",
      withJournal(async ({ journal, raw }) => {
        const request = sampleRequest("r2");
        await journal.requestApproval(request);
        await grant(journal, "r2");
        const granted = (await raw.request("r2"))!;
        expect((await journal.consumeGrant(checkFor(request, "tok"), usedEvent)).status).toBe("consumed");
        await raw.putRequest({ id: "r2", status: "granted", inputHash: request.inputHash, text: granted });
        await expect(journal.consumeGrant(checkFor(request, "tok"), usedEvent)).rejects.toSatisfy(tamperedWith("restated"));
        await expect(journal.getApproval("r2")).rejects.toSatisfy(tamperedWith("restated"));
      }),
    );

    it(
      "refuses an edited result, with or without its hash edited to match",
      withJournal(async ({ journal, raw }) => {
        await journal.beginIntent(sampleIntent("k1"));
        await settleOk(journal, "k1", { id: 1 });
        const text = (await raw.entry("k1"))!;
        const state = "completed" as const;
        const updatedMs = Date.parse(at(100));
        await raw.putEntry({ key: "k1", state, updatedMs, text: edited(text, (_row, envelope) => void (envelope["output"] = { id: 2 })) });
        await expect(journal.getIntent("k1")).rejects.toSatisfy(tamperedWith("seal"));
        const both = edited(text, (row, envelope) => {
          envelope["output"] = { id: 2 };
          (row["result"] as Row)["outputHash"] = hashCanonical({ id: 2 });
        });
        await raw.putEntry({ key: "k1", state, updatedMs, text: both });
        await expect(journal.getIntent("k1")).rejects.toSatisfy(tamperedWith("seal"));
        await expect(journal.beginIntent(sampleIntent("k1"))).rejects.toSatisfy(tamperedWith());
        await expect(journal.listOutbox()).rejects.toSatisfy(tamperedWith());
      }),
    );

    it(
      "refuses a completed non-idempotent effect flipped to failed before its effect (it would run again)",
      withJournal(async ({ journal, raw }) => {
        await journal.beginIntent(sampleIntent("k1"));
        await settleOk(journal, "k1", { sent: true });
        const text = edited((await raw.entry("k1"))!, (row, envelope) => {
          Object.assign(row, { state: "failed", boundary: "effect_not_started", error: { code: "handler_failed", message: "x" } });
          delete row["result"];
          delete envelope["output"];
        });
        await raw.putEntry({ key: "k1", state: "failed", updatedMs: Date.parse(at(100)), text });
        await expect(journal.getIntent("k1")).rejects.toSatisfy(tamperedWith("seal"));
        await expect(journal.beginIntent(sampleIntent("k1"), { retake: { attempts: 1, states: ["failed"] } })).rejects.toSatisfy(tamperedWith());
        await expect(journal.listOutbox({ states: ["failed"] })).rejects.toSatisfy(tamperedWith());
      }),
    );

    it(
      "never lets recovery claim a pending non-idempotent intent flipped to idempotent, and claims the others",
      withJournal(async ({ journal, raw }) => {
        await journal.beginIntent(sampleIntent("k1"));
        await journal.beginIntent(sampleIntent("k2"));
        const text = edited((await raw.entry("k1"))!, (row) => void (row["idempotent"] = true));
        await raw.putEntry({ key: "k1", state: "pending", updatedMs: Date.parse(at()), text });
        const found: string[] = [];
        const claim = () =>
          journal.claimOutbox({
            states: ["pending"],
            updatedBefore: at(10_000),
            limit: 10,
            claimant: "w1",
            at: at(20_000),
            onTampered: (key) => found.push(key),
          });
        expect((await claim()).map((e) => e.key)).toEqual(["k2"]);
        expect(found).toEqual(["k1"]);
        expect(await claim()).toEqual([]);
        expect(found).toEqual(["k1"]);
        const events = (await journal.readAudit()).filter((r) => r.type === "journal.tampered");
        expect(events).toHaveLength(1);
        expect(events[0]!.data).toMatchObject({ kind: "entry", key: "k1" });
        await expect(journal.getIntent("k1")).rejects.toSatisfy(tamperedWith());
      }),
    );

    it(
      "never lets recovery claim an unknown entry it must not retry, whatever its time column says (edited, or written by older code)",
      withJournal(async ({ journal, raw }) => {
        const charge = sampleIntent("k1");
        const flipped = sampleIntent("k2");
        for (const intent of [charge, flipped]) {
          await journal.beginIntent(intent);
          await settleUnknown(journal, intent);
        }
        await raw.putEntry({ key: "k1", state: "unknown", updatedMs: Date.parse(at(1)), text: (await raw.entry("k1"))! });
        const text = edited((await raw.entry("k2"))!, (row) => void (row["idempotent"] = true));
        await raw.putEntry({ key: "k2", state: "unknown", updatedMs: Date.parse(at(1)), text });
        const before = await journal.head();
        const found: string[] = [];
        const claim = () =>
          journal.claimOutbox({
            states: ["unknown"],
            updatedBefore: at(10_000),
            limit: 10,
            claimant: "w1",
            at: at(20_000),
            onTampered: (key) => found.push(key),
          });
        expect(await claim()).toEqual([]);
        expect(found).toEqual(["k2"]);
        // The one it must not retry is moved out of reach quietly: no event, its row as sealed.
        expect((await journal.readAudit({ afterSeq: before.seq })).map((e) => [e.type, e.data["key"]])).toEqual([["journal.tampered", "k2"]]);
        expect(await journal.getIntent("k1")).toMatchObject({ state: "unknown", attempts: 1 });
        expect(await claim()).toEqual([]);
        expect(found).toEqual(["k2"]);
      }),
    );

    it(
      "does not let recovery claim a settled or in-flight entry whose state or time column was edited (the columns are not sealed)",
      withJournal(async ({ journal, raw }) => {
        await journal.beginIntent(sampleIntent("k1"));
        await settleOk(journal, "k1", { sent: true });
        await journal.beginIntent(sampleIntent("k2", { at: at(50_000) }));
        await raw.putEntry({ key: "k1", state: "pending", updatedMs: Date.parse(at(100)), text: (await raw.entry("k1"))! });
        await raw.putEntry({ key: "k2", state: "pending", updatedMs: Date.parse(at()), text: (await raw.entry("k2"))! });
        const found: string[] = [];
        const claim = { states: ["pending"] as const, updatedBefore: at(10_000), limit: 10, claimant: "w1", at: at(20_000) };
        expect(await journal.claimOutbox({ ...claim, onTampered: (key) => found.push(key) })).toEqual([]);
        expect(found.sort()).toEqual(["k1", "k2"]);
        expect((await journal.getIntent("k1"))?.state).toBe("completed");
      }),
    );

    it(
      "never lists a row under a state or status its sealed row does not have (the columns a list filters by are not sealed)",
      withJournal(async ({ journal, raw }) => {
        await journal.beginIntent(sampleIntent("k1"));
        await settleOk(journal, "k1", { sent: true });
        await raw.putEntry({ key: "k1", state: "pending", updatedMs: Date.parse(at(100)), text: (await raw.entry("k1"))! });
        await expect(journal.listOutbox({ states: ["pending"] })).rejects.toSatisfy(tamperedWith("index"));
        const request = sampleRequest("r1");
        await journal.requestApproval(request);
        await grant(journal, "r1");
        await raw.putRequest({ id: "r1", status: "pending", inputHash: request.inputHash, text: (await raw.request("r1"))! });
        await expect(journal.listApprovals({ status: ["pending"] })).rejects.toSatisfy(tamperedWith("index"));
      }),
    );

    it(
      "prune leaves alone an entry whose time or state column was edited to bring it into range, and names it",
      withJournal(async ({ journal, raw }) => {
        await journal.beginIntent(sampleIntent("k1"));
        await settleOk(journal, "k1", { sent: true });
        await raw.putEntry({ key: "k1", state: "completed", updatedMs: 0, text: (await raw.entry("k1"))! });
        const report = await pruneJournal(journal, { before: at(50), at: at(200) });
        expect(report).toMatchObject({ pruned: 0, tampered: ["k1"] });
        await raw.putEntry({ key: "k1", state: "completed", updatedMs: Date.parse(at(100)), text: (await raw.entry("k1"))! });
        expect((await journal.getIntent("k1"))?.result).toMatchObject({ output: { sent: true } });
      }),
    );

    it(
      "refuses an edit of any field of an entry or a request",
      withJournal(async ({ journal, raw }) => {
        await journal.beginIntent(sampleIntent("k1"));
        await settleOk(journal, "k1", { id: 1 });
        const entryText = (await raw.entry("k1"))!;
        const entryEdits: Row = { principal: "root", tenant: "tenant-b", inputHash: sha256Hex("x"), intentHash: sha256Hex("y"), toolId: "notes.delete" };
        Object.assign(entryEdits, { state: "unknown", boundary: "effect_state_unknown", attempts: 0, key: "k9", effect: "read", idempotent: true });
        Object.assign(entryEdits, { input: { text: "other" }, target: "else", updatedAt: at(1), invocationId: "inv_x", grantId: "r9" });
        for (const [field, value] of Object.entries(entryEdits)) {
          const text = edited(entryText, (row) => void (row[field] = value));
          await raw.putEntry({ key: "k1", state: "completed", updatedMs: Date.parse(at(100)), text });
          await expect(journal.getIntent("k1"), field).rejects.toSatisfy(tamperedWith());
        }
        const request = sampleRequest("r1");
        await journal.requestApproval(request);
        await grant(journal, "r1");
        const requestText = (await raw.request("r1"))!;
        const requestEdits: Row = { principal: "root", tenant: "tenant-b", inputHash: sha256Hex("x"), previewHash: sha256Hex("p"), toolId: "notes.delete" };
        Object.assign(requestEdits, { expiresAt: at(9e9), grantExpiresAt: at(9e9), status: "pending", grantTokenHash: sha256Hex("mine"), kind: "output" });
        for (const [field, value] of Object.entries(requestEdits)) {
          const text = edited(requestText, (row) => void (row[field] = value));
          await raw.putRequest({ id: "r1", status: "granted", inputHash: request.inputHash, text });
          await expect(journal.getApproval("r1"), field).rejects.toSatisfy(tamperedWith());
        }
      }),
    );

    it(
      "refuses a row moved under another key, copied from another journal, or inserted with no event",
      withJournal(async ({ journal, auditKey, raw }) => {
        await journal.beginIntent(sampleIntent("k1"));
        await journal.beginIntent(sampleIntent("k2"));
        const row = (key: string, text: string): StoredEntry => ({ key, state: "pending", updatedMs: Date.parse(at()), text });
        await raw.putEntry(row("k2", (await raw.entry("k1"))!));
        await expect(journal.getIntent("k2")).rejects.toSatisfy(tamperedWith());
        // Another journal under the same key, with another history; and one under another key.
        const sameKey = await foreignEntry(auditKey, "k1", (other) => other.append({ type: "test.other", at: at(), data: {} }));
        await raw.putEntry(row("k1", sameKey));
        await expect(journal.getIntent("k1")).rejects.toSatisfy(tamperedWith("seal"));
        await raw.putEntry(row("k3", await foreignEntry("another key", "k3")));
        await expect(journal.getIntent("k3")).rejects.toSatisfy(tamperedWith("no_event"));
        await expect(journal.listOutbox()).rejects.toSatisfy(tamperedWith());
      }),
    );

    it(
      "refuses a row deleted while its events remain: the call is not started again",
      withJournal(async ({ journal, raw }) => {
        await journal.beginIntent(sampleIntent("k1"));
        await settleOk(journal, "k1", { sent: true });
        await raw.deleteEntry("k1");
        await expect(journal.getIntent("k1")).rejects.toSatisfy(tamperedWith("missing"));
        await expect(journal.beginIntent(sampleIntent("k1"))).rejects.toSatisfy(tamperedWith("missing"));
        await journal.requestApproval(sampleRequest("r1"));
        await raw.deleteRequest("r1");
        await expect(journal.getApproval("r1")).rejects.toSatisfy(tamperedWith("missing"));
        await expect(journal.requestApproval(sampleRequest("r1", { inputHash: sha256Hex("other") }))).rejects.toSatisfy(tamperedWith("missing"));
      }),
    );

    it(
      "stores a request found expired with an event of its own, so it still verifies",
      withJournal(async ({ journal }) => {
        await journal.requestApproval(sampleRequest("r1"));
        const late = { kind: "grant" as const, approver: "human", via: "owner", tokenHash: sha256Hex("t"), grantExpiresAt: at(9e6), at: at(4_000_000) };
        await expect(journal.decideApproval("r1", late)).rejects.toSatisfy((e) => ToolError.is(e, "approval_expired"));
        expect((await journal.readAudit()).map((r) => r.type)).toEqual(["approval.requested", "approval.expired"]);
        expect((await journal.getApproval("r1"))?.status).toBe("expired");
        expect(await verifyJournalRows(journal)).toMatchObject({ ok: true, requests: 1, problems: [] });
      }),
    );

    it(
      "refuses a consumed grant put back as granted with the later event's subject column cleared: a retry by binding does not run it again",
      withJournal(async ({ journal, raw }) => {
        const request = sampleRequest("r1");
        await journal.requestApproval(request);
        await grant(journal, "r1");
        const granted = (await raw.request("r1"))!;
        const grantedAt = (await journal.readAudit()).at(-1)!;
        const { tokenHash: _t, ...rest } = checkFor(request, "tok");
        const byBinding = { ...rest, byBinding: true as const };
        expect((await journal.beginIntent(sampleIntent("k1"), { grant: byBinding })).status).toBe("started");
        await raw.putRequest({ id: "r1", status: "granted", inputHash: request.inputHash, text: granted });
        await raw.rewindSubject("request:r1", grantedAt);
        const head = await journal.head();
        await expect(journal.requestApproval({ ...request, id: "r1-retry", createdAt: at(1000) })).rejects.toSatisfy(tamperedWith("restated"));
        await expect(journal.beginIntent(sampleIntent("k2"), { grant: byBinding })).rejects.toSatisfy(tamperedWith("restated"));
        await expect(journal.consumeGrant(byBinding, usedEvent)).rejects.toSatisfy(tamperedWith("restated"));
        await expect(journal.listApprovals()).rejects.toSatisfy(tamperedWith("restated"));
        expect(await journal.head()).toEqual(head);
        expect(await journal.getIntent("k2")).toBeUndefined();
      }),
    );

    it(
      "verifyJournalRows reports every class, including a re-stated row whose index was edited to hide it",
      withJournal(async ({ journal, auditKey, raw }) => {
        await journal.beginIntent(sampleIntent("k1"));
        await journal.beginIntent(sampleIntent("k2"));
        await journal.requestApproval(sampleRequest("r1"));
        const pending = (await raw.request("r1"))!;
        const pendingSeq = Number(/"seal":"(\d+):/.exec(pending)![1]);
        await grant(journal, "r1");
        expect(await verifyJournalRows(journal)).toMatchObject({ ok: true, entries: 2, requests: 1, problems: [] });
        const records = await journal.readAudit();
        expect(verifyAuditChain(records, { key: auditKey }).ok).toBe(true);

        await raw.putRequest({ id: "r1", status: "pending", inputHash: sampleRequest("r1").inputHash, text: pending });
        await raw.rewindSubject("request:r1", { seq: pendingSeq, prevMac: records[pendingSeq - 1]!.prevMac });
        // The hot path learns each request's latest event from the MACed chain, not from the index.
        await expect(journal.getApproval("r1")).rejects.toSatisfy(tamperedWith("restated"));
        await raw.deleteEntry("k2");
        const verdict = await verifyJournalRows(journal);
        expect(verdict.ok).toBe(false);
        expect(verdict.chain.ok).toBe(true);
        expect(verdict.problems).toEqual(
          expect.arrayContaining([
            expect.objectContaining({ kind: "request", id: "r1", problem: "index" }),
            expect.objectContaining({ kind: "request", id: "r1", problem: "restated" }),
            expect.objectContaining({ kind: "entry", id: "k2", problem: "missing" }),
          ]),
        );
      }),
    );
  });
}

/** Another journal under `auditKey`, and the stored text of one of its entries, as an attacker would copy it out. */
async function foreignEntry(auditKey: AuditKey, key: string, before?: (journal: Journal) => Promise<unknown>): Promise<string> {
  const driver = memoryDriver();
  const journal = createJournal(driver, { auditKey });
  await before?.(journal);
  await journal.beginIntent(sampleIntent(key));
  return driver.tables.entries.get(key)!.text;
}
