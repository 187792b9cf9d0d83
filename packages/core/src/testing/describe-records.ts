import { expect, it } from "vitest";
import { ToolError } from "../errors.js";
import { verifyAuditChain } from "../journal/audit-chain.js";
import { verifyJournalRows } from "../journal/operations.js";
import type { AuditEventInput, Journal } from "../journal/types.js";
import type { JournalUnderTest } from "./describe-journal.js";
import type { TamperableJournal } from "./describe-tampering.js";
import { at, grantBy, sampleIntent, sampleRequest } from "./journal-samples.js";

/**
 * Sealed authority records (operators, credentials, MCP clients, kill switches) on every store:
 * read-modify-write atomically with their audit event, one writer at a time across handles, and
 * an edited, re-stated, forged, copied or deleted row refused as `journal_tampered`.
 */

type WithJournal<J> = (fn: (j: J) => Promise<void>) => () => Promise<void>;

const event = (type: string, data: Record<string, unknown> = {}): AuditEventInput => ({ type, at: at(10), data });
const put = (journal: Journal, kind: string, id: string, value: unknown) =>
  journal.updateRecord(kind, id, () => ({ value, event: event(`${kind}.written`, { id }), result: id }));
const tamperedWith = (problem?: string) => (e: unknown) => ToolError.is(e, "journal_tampered") && (problem === undefined || e.details?.["problem"] === problem);
/** Spend a one-time token: refused (a ToolError) when it was spent already. */
const spend = (journal: Journal, id: string, by: string) =>
  journal.updateRecord("login", id, (current) => {
    const token = current as { spent?: string } | undefined;
    if (!token || token.spent !== undefined) throw new ToolError("approval_consumed", `login ${id} is spent or unknown`);
    return { value: { ...token, spent: by }, event: event("login.spent", { id, by }), result: by };
  });

export function itKeepsRecords(withJournal: WithJournal<JournalUnderTest>): void {
  it(
    "refuses a record kind that is not lowercase letters and dashes, or is the journal's own (entry, request), and an empty or long id",
    withJournal(async ({ journal }) => {
      const head = await journal.head();
      for (const kind of ["", "Operator", "op_1", "a:b", "request", "entry", "x".repeat(33), "-op"]) {
        await expect(put(journal, kind, "id1", { a: 1 })).rejects.toSatisfy((e) => ToolError.is(e, "config_invalid"));
        await expect(journal.getRecord(kind, "id1")).rejects.toSatisfy((e) => ToolError.is(e, "config_invalid"));
        await expect(journal.listRecords(kind)).rejects.toSatisfy((e) => ToolError.is(e, "config_invalid"));
      }
      for (const id of ["", "x".repeat(257)]) await expect(put(journal, "operator", id, { a: 1 })).rejects.toSatisfy((e) => ToolError.is(e, "config_invalid"));
      expect(await journal.head()).toEqual(head);
    }),
  );

  it(
    "writes nothing when the update function refuses, fails, or returns a value that is not JSON",
    withJournal(async ({ journal }) => {
      await put(journal, "operator", "op_1", { role: "viewer" });
      const head = await journal.head();
      const refused = journal.updateRecord("operator", "op_1", () => {
        throw new ToolError("approver_forbidden", "not an admin");
      });
      await expect(refused).rejects.toSatisfy((e) => ToolError.is(e, "approver_forbidden"));
      await expect(journal.updateRecord("operator", "op_1", () => ({ value: undefined, event: event("x"), result: 1 }))).rejects.toSatisfy((e) =>
        ToolError.is(e, "journal_failed"),
      );
      await expect(
        journal.updateRecord("operator", "op_1", () => {
          throw new Error("boom");
        }),
      ).rejects.toSatisfy((e) => ToolError.is(e, "journal_failed"));
      expect(await journal.head()).toEqual(head);
      expect(await journal.getRecord("operator", "op_1")).toEqual({ role: "viewer" });
    }),
  );

  it(
    "reads, lists and updates records with one audit event each, whose subject is <kind>:<id>",
    withJournal(async ({ journal, auditKey }) => {
      expect(await journal.getRecord("operator", "op_1")).toBeUndefined();
      expect(await journal.listRecords("operator")).toEqual([]);
      const seen: unknown[] = [];
      const first = await journal.updateRecord("operator", "op_1", (current) => {
        seen.push(current);
        return { value: { name: "ana", role: "admin" }, event: event("operator.added", { id: "op_1" }), result: "added" };
      });
      expect(first.result).toBe("added");
      await put(journal, "operator", "op_2", { name: "bo", role: "viewer" });
      await put(journal, "switch", "tool:mail.send", { reason: "leak" });
      await journal.updateRecord("operator", "op_1", (current) => {
        seen.push(current);
        return { value: { ...(current as object), status: "disabled" }, event: event("operator.disabled"), result: undefined };
      });
      expect(seen).toEqual([undefined, { name: "ana", role: "admin" }]);
      expect(await journal.getRecord("operator", "op_1")).toEqual({ name: "ana", role: "admin", status: "disabled" });
      expect(await journal.listRecords("operator")).toEqual([
        { id: "op_1", value: { name: "ana", role: "admin", status: "disabled" } },
        { id: "op_2", value: { name: "bo", role: "viewer" } },
      ]);
      expect(await journal.listRecords("switch")).toEqual([{ id: "tool:mail.send", value: { reason: "leak" } }]);
      const audit = await journal.readAudit();
      expect(audit.map((r) => [r.type, r.subject, r.seq])).toEqual([
        ["operator.added", "operator:op_1", first.receipt.seq],
        ["operator.written", "operator:op_2", 2],
        ["switch.written", "switch:tool:mail.send", 3],
        ["operator.disabled", "operator:op_1", 4],
      ]);
      expect(verifyAuditChain(audit, { key: auditKey }).ok).toBe(true);
      const verdict = await verifyJournalRows(journal);
      expect(verdict).toMatchObject({ ok: true, records: 3, problems: [] });
    }),
  );

  it(
    "lets a caller's event name no subject: append drops it, and updateRecord sets its own",
    withJournal(async ({ journal }) => {
      await journal.updateRecord("operator", "op_1", () => ({ value: 1, event: { ...event("operator.added"), subject: "operator:op_9" }, result: 0 }));
      await journal.append({ ...event("test.forged"), subject: "operator:op_1" });
      expect((await journal.readAudit()).map((r) => r.subject)).toEqual(["operator:op_1", undefined]);
      expect(await journal.getRecord("operator", "op_1")).toBe(1);
      expect(await journal.getRecord("operator", "op_9")).toBeUndefined();
    }),
  );

  it(
    "shows a record written by one handle to another on the same store, and serialises a one-time token spent from both at once: exactly one wins",
    withJournal(async ({ journal, reopen }) => {
      const other = reopen ? await reopen() : journal;
      try {
        await put(journal, "login", "tgl_1", { operator: "op_1" });
        expect(await other.getRecord("login", "tgl_1")).toEqual({ operator: "op_1" });
        await put(other, "switch", "family:mail", { reason: "r" });
        expect(await journal.listRecords("switch")).toEqual([{ id: "family:mail", value: { reason: "r" } }]);
        const outcomes = await Promise.allSettled(Array.from({ length: 10 }, (_, i) => spend(i % 2 ? journal : other, "tgl_1", `w${i}`)));
        const won = outcomes.filter((o) => o.status === "fulfilled");
        expect(won).toHaveLength(1);
        expect(outcomes.filter((o) => o.status === "rejected").every((o) => ToolError.is(o.reason, "approval_consumed"))).toBe(true);
        const winner = (won[0] as PromiseFulfilledResult<{ result: string }>).value.result;
        expect(await other.getRecord("login", "tgl_1")).toEqual({ operator: "op_1", spent: winner });
        expect((await journal.readAudit()).filter((r) => r.type === "login.spent")).toHaveLength(1);
      } finally {
        if (other !== journal) await other.close();
      }
    }),
  );
}

/** The record's stored envelope with its sealed value replaced (the seal kept). */
const editedValue = (text: string, value: unknown): string => {
  const envelope = JSON.parse(text) as { row: { value: unknown } };
  envelope.row.value = value;
  return JSON.stringify(envelope);
};

export function itRefusesTamperedRecords(withJournal: WithJournal<TamperableJournal>): void {
  const refusedEverywhere = async (journal: Journal, kind: string, id: string, problem?: string) => {
    const head = await journal.head();
    await expect(journal.getRecord(kind, id)).rejects.toSatisfy(tamperedWith(problem));
    await expect(journal.listRecords(kind)).rejects.toSatisfy(tamperedWith(problem));
    let ran = false;
    await expect(journal.updateRecord(kind, id, () => ((ran = true), { value: {}, event: event("x"), result: 0 }))).rejects.toSatisfy(tamperedWith(problem));
    expect(ran).toBe(false);
    expect(await journal.head()).toEqual(head);
    const verdict = await verifyJournalRows(journal);
    expect(verdict.ok).toBe(false);
    expect(verdict.problems).toContainEqual(expect.objectContaining({ kind: "record", id: `${kind}:${id}`, ...(problem ? { problem } : {}) }));
  };

  it(
    "refuses a record row edited behind the journal's back (a viewer made admin), and never hands its value out",
    withJournal(async ({ journal, raw }) => {
      await put(journal, "operator", "op_1", { role: "viewer", status: "active" });
      await raw.putRecord({ kind: "operator", id: "op_1", text: editedValue((await raw.record("operator", "op_1"))!, { role: "admin", status: "active" }) });
      await refusedEverywhere(journal, "operator", "op_1", "seal");
    }),
  );

  it(
    "refuses an older version of a record put back (a disabled operator re-enabled, a spent token unspent)",
    withJournal(async ({ journal, raw }) => {
      await put(journal, "operator", "op_1", { status: "active" });
      const active = (await raw.record("operator", "op_1"))!;
      await put(journal, "operator", "op_1", { status: "disabled" });
      await raw.putRecord({ kind: "operator", id: "op_1", text: active });
      await refusedEverywhere(journal, "operator", "op_1", "restated");
    }),
  );

  it(
    "refuses an older record put back with the later event's subject column cleared (a kill switch lifted), and a record deleted with its subject column cleared (a removed client forgotten)",
    withJournal(async ({ journal, raw }) => {
      await put(journal, "switch", "tool:a", { status: "enabled" });
      const enabled = (await raw.record("switch", "tool:a"))!;
      const first = (await journal.readAudit()).at(-1)!;
      await put(journal, "switch", "tool:a", { status: "disabled" });
      expect(await journal.getRecord("switch", "tool:a")).toEqual({ status: "disabled" });
      await raw.putRecord({ kind: "switch", id: "tool:a", text: enabled });
      await raw.rewindSubject("switch:tool:a", first);
      await refusedEverywhere(journal, "switch", "tool:a");

      await put(journal, "client", "mcc_1", { status: "removed" });
      expect(await journal.listRecords("client")).toHaveLength(1);
      await raw.deleteRecord("client", "mcc_1");
      await raw.rewindSubject("client:mcc_1", { seq: 0, prevMac: "0".repeat(64) });
      await expect(journal.getRecord("client", "mcc_1")).rejects.toSatisfy(tamperedWith("missing"));
      await expect(journal.listRecords("client")).rejects.toSatisfy(tamperedWith("missing"));
    }),
  );

  it(
    "refuses a record inserted without an event, copied under another id or kind, or deleted (a kill switch removed)",
    withJournal(async ({ journal, raw }) => {
      await put(journal, "operator", "op_1", { role: "admin" });
      const admin = (await raw.record("operator", "op_1"))!;
      await raw.putRecord({ kind: "operator", id: "op_2", text: admin });
      await refusedEverywhere(journal, "operator", "op_2", "no_event");
      await raw.deleteRecord("operator", "op_2");

      await put(journal, "operator", "op_3", { role: "viewer" });
      await raw.putRecord({ kind: "operator", id: "op_3", text: admin });
      await refusedEverywhere(journal, "operator", "op_3");
      await raw.deleteRecord("operator", "op_3");
      await raw.putRecord({ kind: "client", id: "op_1", text: admin });
      await refusedEverywhere(journal, "client", "op_1", "no_event");
      await raw.deleteRecord("client", "op_1");

      await put(journal, "switch", "tool:mail.send", { reason: "leak" });
      await raw.deleteRecord("switch", "tool:mail.send");
      await expect(journal.getRecord("switch", "tool:mail.send")).rejects.toSatisfy(tamperedWith("missing"));
      await expect(journal.listRecords("switch")).rejects.toSatisfy(tamperedWith("missing"));
      const verdict = await verifyJournalRows(journal);
      expect(verdict.problems).toContainEqual(expect.objectContaining({ kind: "record", id: "switch:tool:mail.send", problem: "missing" }));
    }),
  );
}

/**
 * Rows to write with the current code before a store puts its tables back to an older schema, and
 * what the upgraded store must then show: the old sealed rows still open, a retry joins the
 * granted request through the new index, records work, and every row verifies.
 */
export async function writeUpgradeSample(journal: Journal): Promise<void> {
  await journal.beginIntent(sampleIntent("up-k1"));
  await journal.requestApproval(sampleRequest("up-r1"));
  await journal.decideApproval("up-r1", { ...grantBy("op_1"), via: "session" });
}

export async function expectUpgradeSample(journal: Journal): Promise<void> {
  expect((await journal.getIntent("up-k1"))?.state).toBe("pending");
  const joined = await journal.requestApproval({ ...sampleRequest("up-r1"), id: "up-r2", createdAt: at(600) });
  expect(joined).toMatchObject({ created: false, request: { id: "up-r1", status: "granted" } });
  await put(journal, "operator", "op_1", { role: "approver" });
  expect(await journal.listRecords("operator")).toEqual([{ id: "op_1", value: { role: "approver" } }]);
  expect(await verifyJournalRows(journal)).toMatchObject({ ok: true, entries: 1, requests: 1, records: 1 });
}
