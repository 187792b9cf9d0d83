import { ToolError } from "../errors.js";
import { unsealAuditEvent, verifyAuditChain, type AuditChainVerdict, type AuditKey } from "./audit-chain.js";
import type { JournalDriver, JournalTransaction, RowEvent, StoredRow, TransactionReads } from "./driver.js";
import { openEntry, openRecord, openRequest, subjectOf, withoutBody, type RowKind, type RowProblem } from "./sealed-rows.js";
import { GENESIS_MAC, type AuditEventInput, type Journal, type JournalReceipt } from "./types.js";

/** Where `createJournal` hangs its operator work on the journal it returns. */
export const JOURNAL_OPERATIONS: unique symbol = Symbol.for("@toolgate/core.journal-operations") as never;

/** One row (or audit link) that fails verification. */
export interface JournalRowProblem {
  /** `entry` (outbox), `request` (approval), `record` (authority state) or `audit` (a link's subject column). */
  readonly kind: RowKind | "audit";
  /** The entry's key, the request's id, the record's `<kind>:<id>`, or the link's seq. */
  readonly id: string;
  /** See `RowProblem`; for `audit`, `index`: the link's subject column disagrees with its MACed payload. */
  readonly problem: RowProblem;
  readonly detail: string;
}

export interface JournalRowsVerdict {
  /** True when the chain verifies and no row or link has a problem. */
  readonly ok: boolean;
  /** The chain walked from genesis (as `verifyAuditChain` reports it, without an expected head). */
  readonly chain: AuditChainVerdict;
  readonly entries: number;
  readonly requests: number;
  /** Sealed authority records checked. */
  readonly records: number;
  readonly problems: readonly JournalRowProblem[];
}

export interface PruneJournalOptions {
  /** ISO-8601: settled entries last written before this lose their output bodies. */
  readonly before: string;
  /** The time of the `journal.pruned` event; default now. */
  readonly at?: string;
}

export interface PruneReport {
  /** Entries whose output body was removed. */
  readonly pruned: number;
  /** Keys of entries that failed their seal: left untouched (see `verifyJournalRows`). */
  readonly tampered: readonly string[];
  readonly receipt: JournalReceipt;
}

interface Operations {
  verifyRows(): Promise<JournalRowsVerdict>;
  prune(options: PruneJournalOptions): Promise<PruneReport>;
}

interface Engine {
  readonly driver: JournalDriver;
  readonly auditKey: AuditKey;
  readonly write: <T>(reads: TransactionReads, fn: (tx: JournalTransaction) => T) => Promise<T>;
  readonly read: <T>(fn: () => Promise<T>) => Promise<T>;
  readonly append: (tx: JournalTransaction, event: AuditEventInput) => JournalReceipt;
}

const PAGE = 1000;
const SETTLED = ["completed", "failed", "unknown"] as const;

export function journalOperations({ driver, auditKey, write, read, append }: Engine): Operations {
  return {
    verifyRows: () =>
      read(async () => {
        const latest = new Map<string, RowEvent>();
        const problems: JournalRowProblem[] = [];
        let head = { seq: 0, mac: GENESIS_MAC };
        let chain: AuditChainVerdict | undefined;
        for (;;) {
          const page = await driver.readAudit({ afterSeq: head.seq, limit: PAGE });
          if (page.length === 0) break;
          const records = page.map(unsealAuditEvent);
          const verdict = verifyAuditChain(records, { key: auditKey, after: head });
          if (!verdict.ok) {
            chain = verdict;
            break;
          }
          page.forEach((link, i) => {
            const { subject } = records[i]!;
            if ((link.subject ?? undefined) !== subject) {
              problems.push({ kind: "audit", id: String(link.seq), problem: "index", detail: "the subject column disagrees with the MACed event" });
            }
            if (subject !== undefined) latest.set(subject, { seq: link.seq, prevMac: link.prevMac });
          });
          head = verdict.head;
        }
        chain ??= { ok: true, count: head.seq, head };

        const seen = new Set<string>();
        const check = (kind: string, rows: readonly StoredRow[]): void => {
          for (const row of rows) {
            const subject = subjectOf(kind, row.id);
            const problemKind: RowKind = kind === "entry" || kind === "request" ? kind : "record";
            const problemId = problemKind === "record" ? subject : row.id;
            seen.add(subject);
            const chained = latest.get(subject);
            if (row.latest?.seq !== chained?.seq || row.latest?.prevMac !== chained?.prevMac) {
              problems.push({ kind: problemKind, id: problemId, problem: "index", detail: "the audit table's subject column disagrees with the MACed chain" });
            }
            try {
              if (kind === "entry") openEntry(auditKey, row, chained);
              else if (kind === "request") openRequest(auditKey, row, chained);
              else openRecord(auditKey, kind, row, chained);
            } catch (error) {
              if (!ToolError.is(error, "journal_tampered")) throw error;
              problems.push({ kind: problemKind, id: problemId, problem: error.details!["problem"] as RowProblem, detail: error.message });
            }
          }
        };
        const entries = await driver.listEntries({ states: undefined, limit: undefined });
        check("entry", entries);
        const requests = await driver.listRequests({ states: undefined, limit: undefined });
        check("request", requests);
        // Every kind stored, and every kind the chain names (a kind whose rows are all gone).
        const kinds = new Set(await driver.recordKinds());
        for (const subject of latest.keys()) {
          const kind = subject.slice(0, subject.indexOf(":"));
          if (kind !== "entry" && kind !== "request") kinds.add(kind);
        }
        let records = 0;
        for (const kind of kinds) {
          const rows = await driver.listRecords(kind);
          check(kind, rows);
          records += rows.length;
        }
        for (const [subject, event] of latest) {
          if (seen.has(subject)) continue;
          const kind = subject.slice(0, subject.indexOf(":"));
          const own = kind === "entry" || kind === "request";
          problems.push({
            kind: own ? kind : "record",
            id: own ? subject.slice(kind.length + 1) : subject,
            problem: "missing",
            detail: `audit event ${event.seq} recorded it; the row is gone`,
          });
        }
        return { ok: chain.ok && problems.length === 0, chain, entries: entries.length, requests: requests.length, records, problems };
      }),

    async prune({ before, at }) {
      const updatedBeforeMs = Date.parse(before);
      if (Number.isNaN(updatedBeforeMs)) throw new ToolError("config_invalid", `prune: before is not a time: ${before}`);
      const claim = { states: SETTLED, updatedBeforeMs, limit: Number.MAX_SAFE_INTEGER };
      return write({ claim }, (tx) => {
        let pruned = 0;
        const tampered: string[] = [];
        for (const row of tx.claimable(claim)) {
          let entry;
          try {
            entry = openEntry(auditKey, row);
          } catch (error) {
            if (!ToolError.is(error, "journal_tampered")) throw error;
            tampered.push(row.id);
            continue;
          }
          // Selected by its unsealed state and time columns: the sealed row must be in range too.
          if (entry && !(SETTLED.includes(entry.state as (typeof SETTLED)[number]) && Date.parse(entry.updatedAt) < updatedBeforeMs)) {
            tampered.push(row.id);
            continue;
          }
          // Held output waits for a human: its body is what a grant releases.
          if (!entry?.result || entry.result.outputPruned || entry.result.heldBy !== undefined) continue;
          const text = withoutBody(row.text!);
          if (text === undefined) continue;
          tx.putEntry({ key: row.id, state: entry.state, updatedMs: Date.parse(entry.updatedAt), text });
          pruned++;
        }
        const receipt = append(tx, { type: "journal.pruned", at: at ?? new Date().toISOString(), data: { before, pruned, tampered: tampered.length } });
        return { pruned, tampered, receipt };
      });
    },
  };
}

function operationsOf(journal: Journal, what: string): Operations {
  const ops = (journal as unknown as Record<symbol, Operations | undefined>)[JOURNAL_OPERATIONS];
  if (!ops) throw new ToolError("config_invalid", `${what} needs a journal made by createJournal (a store's open or connect function, or createMemoryJournal)`);
  return ops;
}

/**
 * Full verification for operators: walk the audit chain from genesis (recomputing every MAC and
 * reading each link's subject from the MACed payload, not from the index column), then every
 * outbox entry, approval request and sealed record, and report rows whose seal fails, rows sealed to an event
 * that is not their subject's latest, rows no event recorded, rows an event recorded that are
 * gone, and subject columns that disagree with the chain. Reads the whole journal.
 */
export function verifyJournalRows(journal: Journal): Promise<JournalRowsVerdict> {
  return Promise.resolve().then(() => operationsOf(journal, "verifyJournalRows").verifyRows());
}

/**
 * Remove the output bodies of settled entries last written before `before` (their `outputHash`
 * stays sealed, so rows and chain still verify), in one transaction, recorded as a
 * `journal.pruned` event. A later replay of a pruned side-effectful entry is refused with
 * `output_pruned`; a pruned read runs again. Held output is kept until released.
 */
export function pruneJournal(journal: Journal, options: PruneJournalOptions): Promise<PruneReport> {
  return Promise.resolve().then(() => operationsOf(journal, "pruneJournal").prune(options));
}
