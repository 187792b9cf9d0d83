import { randomBytes } from "node:crypto";
import type { AuditKey, SealedAuditEvent } from "./audit-chain.js";
import { createJournal } from "./create-journal.js";
import type { JournalDriver, JournalTransaction, RowEvent, StoredEntry, StoredRecord, StoredRequest, StoredRow } from "./driver.js";
import { GENESIS_MAC, type Journal } from "./types.js";

export interface MemoryJournalOptions {
  /** HMAC key for the audit chain; random when omitted (then only this process can verify). */
  readonly auditKey?: AuditKey;
  /** See `CreateJournalOptions.retainReadOutputs`. */
  readonly retainReadOutputs?: boolean;
}

export interface MemoryJournal extends Journal {
  /** The key the chain is MACed with, for `verifyAuditChain` in tests. */
  readonly auditKey: AuditKey;
}

/** The journal for tests and single-process tools: the same rules as the durable stores, in memory. */
export function createMemoryJournal(options: MemoryJournalOptions = {}): MemoryJournal {
  const auditKey = options.auditKey ?? randomBytes(32);
  const retain = options.retainReadOutputs === undefined ? {} : { retainReadOutputs: options.retainReadOutputs };
  return { ...createJournal(memoryDriver(), { auditKey, ...retain }), auditKey };
}

/**
 * The memory driver, with its tables in reach (for tests that edit rows behind the journal's back).
 * Everything is stored as text, as a database would (and cheap for the garbage collector in a
 * long-lived process). A transaction runs synchronously, so it is atomic; one that throws is undone.
 * Every transaction and every edit through `tables` moves `changes()` (rows are frozen, so an edit
 * cannot bypass it); journals sharing one driver share its tables and its counter.
 */
export interface MemoryDriver extends JournalDriver {
  changes(): number;
  readonly tables: {
    readonly entries: Map<string, StoredEntry>;
    readonly requests: Map<string, StoredRequest>;
    /** Sealed records by subject (`<kind>:<id>`). */
    readonly records: Map<string, StoredRecord>;
    /** The subject index: each row's latest link. */
    readonly latest: Map<string, RowEvent>;
    /** The chain's links as stored, index `seq - 1` (a link's `prevMac` is the MAC before it). */
    readonly audit: { readonly payloads: string[]; readonly macs: string[]; readonly subjects: (string | undefined)[] };
  };
}

export function memoryDriver(): MemoryDriver {
  const payloads: string[] = [];
  const macs: string[] = [];
  const subjects: (string | undefined)[] = [];
  const entries = new Map<string, StoredEntry>();
  const requests = new Map<string, StoredRequest>();
  const records = new Map<string, StoredRecord>();
  // Each subject's latest link (the audit table's subject index).
  const latest = new Map<string, RowEvent>();
  // Undo for the rows a failed transaction wrote; audit links are undone by truncating to the mark.
  const undo: (() => void)[] = [];
  // Moved by every transaction (at its start, and again when it rolls back) and every edit through `tables`.
  let changes = 0;

  const put = <T extends object>(rows: Map<string, T>, id: string, row: T): void => {
    const before = rows.get(id);
    undo.push(() => (before === undefined ? rows.delete(id) : rows.set(id, before)));
    rows.set(id, Object.freeze(row));
  };
  const moved = (): void => void changes++;
  const head = () => (macs.length === 0 ? { seq: 0, mac: GENESIS_MAC } : { seq: macs.length, mac: macs[macs.length - 1]! });
  const entryRow = (key: string, text = entries.get(key)?.text): StoredRow => ({ id: key, text, latest: latest.get(`entry:${key}`) });
  const requestRow = (id: string, text = requests.get(id)?.text): StoredRow => ({ id, text, latest: latest.get(`request:${id}`) });
  const recordRow = (kind: string, id: string, text = records.get(`${kind}:${id}`)?.text): StoredRow => ({ id, text, latest: latest.get(`${kind}:${id}`) });
  const recordsOf = (kind: string): StoredRow[] => [...records.values()].filter((r) => r.kind === kind).map((r) => recordRow(kind, r.id, r.text));
  const list = <T extends { readonly text: string }>(rows: Map<string, T>, keep: (row: T) => boolean, limit = Infinity): StoredRow[] => {
    const out: StoredRow[] = [];
    const row = rows === (entries as Map<string, unknown>) ? entryRow : requestRow;
    for (const [id, r] of rows) {
      if (out.length >= limit) break;
      if (keep(r)) out.push(row(id, r.text));
    }
    return out;
  };

  const tx: JournalTransaction = {
    head,
    appendAudit(sealed) {
      payloads.push(sealed.payload);
      macs.push(sealed.mac);
      subjects.push(sealed.subject);
      if (sealed.subject !== undefined) put(latest, sealed.subject, { seq: sealed.seq, prevMac: sealed.prevMac });
    },
    getEntry: (key) => entryRow(key),
    putEntry: (entry) => put(entries, entry.key, entry),
    claimable: (claim) => list(entries, (e) => claim.states.includes(e.state) && e.updatedMs < claim.updatedBeforeMs, claim.limit),
    getRequest: (id) => requestRow(id),
    putRequest: (request) => put(requests, request.id, request),
    openRequests: (inputHash) => list(requests, (r) => (r.status === "pending" || r.status === "granted") && r.inputHash === inputHash),
    getRecord: (kind, id) => recordRow(kind, id),
    putRecord: (record) => put(records, `${record.kind}:${record.id}`, record),
  };

  return {
    kind: "memory",
    changes: () => changes,
    tables: Object.freeze({
      entries: counted(entries, moved),
      requests: counted(requests, moved),
      records: counted(records, moved),
      latest: counted(latest, moved),
      audit: Object.freeze({ payloads: counted(payloads, moved), macs: counted(macs, moved), subjects: counted(subjects, moved) }),
    }),
    async transaction(_reads, fn) {
      const mark = macs.length;
      undo.length = 0;
      changes++;
      try {
        return fn(tx);
      } catch (error) {
        for (const step of undo.reverse()) step();
        payloads.length = mark;
        macs.length = mark;
        subjects.length = mark;
        changes++;
        throw error;
      }
    },
    head: async () => head(),
    async readAudit({ afterSeq, limit }) {
      const to = Math.min(macs.length, afterSeq + (limit ?? Infinity));
      const out: SealedAuditEvent[] = [];
      for (let i = afterSeq; i < to; i++)
        out.push({ seq: i + 1, subject: subjects[i], payload: payloads[i]!, prevMac: i === 0 ? GENESIS_MAC : macs[i - 1]!, mac: macs[i]! });
      return out;
    },
    getEntry: async (key) => entryRow(key),
    listEntries: async ({ states, limit }) => list(entries, (e) => !states || states.includes(e.state), limit),
    getRequest: async (id) => requestRow(id),
    listRequests: async ({ states, limit }) => list(requests, (r) => !states || states.includes(r.status), limit),
    getRecord: async (kind, id) => recordRow(kind, id),
    listRecords: async (kind) => recordsOf(kind),
    recordKinds: async () => [...new Set([...records.values()].map((r) => r.kind))],
    close: async () => undefined,
  };
}

const MUTATORS = new Set<PropertyKey>(["set", "delete", "clear"]);

/**
 * A table as tests reach it: the same map or array, but every change made through it calls
 * `moved` (a map's set, delete and clear; any write to an array, its length included).
 */
function counted<T extends object>(table: T, moved: () => void): T {
  if (Array.isArray(table)) {
    return new Proxy(table, {
      set: (t, p, v) => (moved(), Reflect.set(t, p, v)),
      deleteProperty: (t, p) => (moved(), Reflect.deleteProperty(t, p)),
      defineProperty: (t, p, d) => (moved(), Reflect.defineProperty(t, p, d)),
    });
  }
  return new Proxy(table, {
    get(t, p) {
      const v: unknown = Reflect.get(t, p, t);
      if (typeof v !== "function") return v;
      return MUTATORS.has(p) ? (...args: unknown[]) => (moved(), (v as (...a: unknown[]) => unknown).apply(t, args)) : v.bind(t);
    },
    set: (t, p, v) => (moved(), Reflect.set(t, p, v)),
    deleteProperty: (t, p) => (moved(), Reflect.deleteProperty(t, p)),
    defineProperty: (t, p, d) => (moved(), Reflect.defineProperty(t, p, d)),
  });
}
