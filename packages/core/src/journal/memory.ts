import { randomBytes } from "node:crypto";
import type { AuditKey } from "./audit-chain.js";
import { createJournal } from "./create-journal.js";
import type { JournalDriver, JournalTransaction, StoredEntry, StoredRequest } from "./driver.js";
import { GENESIS_MAC, type Journal } from "./types.js";

export interface MemoryJournalOptions {
  /** HMAC key for the audit chain; random when omitted (then only this process can verify). */
  readonly auditKey?: AuditKey;
}

export interface MemoryJournal extends Journal {
  /** The key the chain is MACed with, for `verifyAuditChain` in tests. */
  readonly auditKey: AuditKey;
}

/** The journal for tests and single-process tools: the same rules as the durable stores, in memory. */
export function createMemoryJournal(options: MemoryJournalOptions = {}): MemoryJournal {
  const auditKey = options.auditKey ?? randomBytes(32);
  return { ...createJournal(memoryDriver(), { auditKey }), auditKey };
}

/**
 * Everything stored as text, as a database would (and cheap for the garbage collector in a
 * long-lived process). A transaction runs synchronously, so it is atomic; one that throws is undone.
 */
function memoryDriver(): JournalDriver {
  const payloads: string[] = [];
  const macs: string[] = [];
  const entries = new Map<string, StoredEntry>();
  const requests = new Map<string, StoredRequest>();
  // Undo for the rows a failed transaction wrote; audit links are undone by truncating to the mark.
  const undo: (() => void)[] = [];

  const put = <T>(rows: Map<string, T>, id: string, row: T): void => {
    const before = rows.get(id);
    undo.push(() => (before === undefined ? rows.delete(id) : rows.set(id, before)));
    rows.set(id, row);
  };
  const head = () => (macs.length === 0 ? { seq: 0, mac: GENESIS_MAC } : { seq: macs.length, mac: macs[macs.length - 1]! });
  const list = <T extends { readonly text: string }>(rows: Iterable<T>, keep: (row: T) => boolean, limit = Infinity): string[] => {
    const out: string[] = [];
    for (const row of rows) {
      if (out.length >= limit) break;
      if (keep(row)) out.push(row.text);
    }
    return out;
  };

  const tx: JournalTransaction = {
    head,
    appendAudit(sealed) {
      payloads.push(sealed.payload);
      macs.push(sealed.mac);
    },
    getEntry: (key) => entries.get(key)?.text,
    putEntry: (entry) => put(entries, entry.key, entry),
    claimable: (claim) => list(entries.values(), (e) => claim.states.includes(e.state) && e.updatedMs < claim.updatedBeforeMs, claim.limit),
    getRequest: (id) => requests.get(id)?.text,
    putRequest: (request) => put(requests, request.id, request),
    pendingRequests: (inputHash) => list(requests.values(), (r) => r.status === "pending" && r.inputHash === inputHash),
  };

  return {
    kind: "memory",
    async transaction(_reads, fn) {
      const mark = macs.length;
      undo.length = 0;
      try {
        return fn(tx);
      } catch (error) {
        for (const step of undo.reverse()) step();
        payloads.length = mark;
        macs.length = mark;
        throw error;
      }
    },
    head: async () => head(),
    async readAudit({ afterSeq, limit }) {
      const to = Math.min(macs.length, afterSeq + (limit ?? Infinity));
      return Array.from({ length: Math.max(0, to - afterSeq) }, (_, n) => {
        const i = afterSeq + n;
        return { seq: i + 1, payload: payloads[i]!, prevMac: i === 0 ? GENESIS_MAC : macs[i - 1]!, mac: macs[i]! };
      });
    },
    getEntry: async (key) => entries.get(key)?.text,
    listEntries: async ({ states, limit }) => list(entries.values(), (e) => !states || states.includes(e.state), limit),
    getRequest: async (id) => requests.get(id)?.text,
    listRequests: async ({ states, limit }) => list(requests.values(), (r) => !states || states.includes(r.status), limit),
    close: async () => undefined,
  };
}
