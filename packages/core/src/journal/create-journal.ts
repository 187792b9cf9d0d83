import { ToolError } from "../errors.js";
import { sealAuditEvent, unsealAuditEvent, type AuditKey } from "./audit-chain.js";
import type { JournalDriver, JournalTransaction, TransactionReads } from "./driver.js";
import {
  claimedEvent,
  consumedEvent,
  decidedEvent,
  decidedRequest,
  intentEvent,
  joinsPendingRequest,
  requestedEvent,
  settledEntry,
  settledEvent,
  startedEntry,
} from "./events.js";
import { checkGrant } from "./grant-check.js";
import { decodeEntry, decodeRequest, encodeEntry, encodeRequest } from "./records.js";
import type { ApprovalRequest, AuditEventInput, BeginIntentResult, GrantCheck, GrantOutcome, Journal, JournalReceipt, OutboxEntry } from "./types.js";

export interface CreateJournalOptions {
  /** HMAC key for the audit chain. Every handle on the same store must use the same one. */
  readonly auditKey: AuditKey;
}

/** A refusal whose transaction still commits (a request found expired is stored as expired). */
class CommittedRefusal {
  constructor(readonly error: ToolError) {}
}

/**
 * The journal over a driver: every rule lives here, once, so every store refuses what every other
 * refuses and writes the same chain, MAC for MAC. Each rule makes its checks before its first
 * write, so a refusal (a `ToolError` thrown inside a transaction) has written nothing.
 */
export function createJournal(driver: JournalDriver, options: CreateJournalOptions): Journal {
  const { kind } = driver;
  const { auditKey } = options;
  let closed = false;

  const failure = (cause: unknown): ToolError =>
    ToolError.is(cause) ? cause : new ToolError("journal_failed", `${kind} journal: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
  const ensureOpen = (): void => {
    if (closed) throw new ToolError("journal_failed", `the ${kind} journal is closed`);
  };

  // Both call the driver before their first await, so calls reach it in the order they were made.
  async function write<T>(reads: TransactionReads, fn: (tx: JournalTransaction) => T | CommittedRefusal): Promise<T> {
    ensureOpen();
    let value: T | CommittedRefusal;
    try {
      value = await driver.transaction(reads, fn);
    } catch (cause) {
      throw failure(cause);
    }
    if (value instanceof CommittedRefusal) throw value.error;
    return value;
  }
  async function read<T>(fn: () => Promise<T>): Promise<T> {
    ensureOpen();
    try {
      return await fn();
    } catch (cause) {
      throw failure(cause);
    }
  }

  const append = (tx: JournalTransaction, event: AuditEventInput): JournalReceipt => {
    const sealed = sealAuditEvent(auditKey, tx.head(), event);
    tx.appendAudit(sealed);
    return { journal: kind, seq: sealed.seq, mac: sealed.mac, at: event.at };
  };
  const consume = (tx: JournalTransaction, check: GrantCheck): GrantOutcome => {
    const request = requestOf(tx.getRequest(check.requestId));
    const verdict = checkGrant(request, check);
    if (!("ok" in verdict)) return verdict;
    const consumed: ApprovalRequest = { ...request!, status: "consumed", consumedAt: check.at, consumedBy: check.invocationId };
    tx.putRequest(encodeRequest(consumed));
    return { status: "consumed", request: consumed, receipt: append(tx, consumedEvent(consumed, check)) };
  };

  return {
    kind,

    append: (event) => write({}, (tx) => append(tx, event)),
    readAudit: (opts = {}) =>
      read(async () => (await driver.readAudit({ afterSeq: whole(opts.afterSeq ?? 0), limit: limitOf(opts.limit) })).map(unsealAuditEvent)),
    head: () => read(() => driver.head()),

    beginIntent: (intent, opts = {}) =>
      write({ entries: [intent.key], ...(opts.grant ? { requests: [opts.grant.requestId] } : {}) }, (tx): BeginIntentResult => {
        const existing = entryOf(tx.getEntry(intent.key));
        const retake = opts.retake;
        if (existing && !(retake && retake.attempts === existing.attempts && retake.states.includes(existing.state))) {
          return { status: "existing", entry: existing };
        }
        let grantId: string | undefined;
        if (opts.grant) {
          const outcome = consume(tx, opts.grant);
          if (outcome.status !== "consumed") return { status: "grant_refused", outcome };
          grantId = outcome.request.id;
        }
        const entry = startedEntry(intent, (existing?.attempts ?? 0) + 1, grantId);
        tx.putEntry(encodeEntry(entry));
        return { status: "started", entry, receipt: append(tx, intentEvent(intent, entry.attempts, grantId)) };
      }),
    settleIntent: (key, s) =>
      write({ entries: [key] }, (tx) => {
        const entry = entryOf(tx.getEntry(key));
        if (!entry) throw new ToolError("journal_failed", `no intent recorded under key ${key}`);
        if (entry.intentHash !== s.intentHash) throw new ToolError("journal_failed", `settlement for ${key} is bound to another intent`);
        tx.putEntry(encodeEntry(settledEntry(entry, s)));
        return append(tx, settledEvent(entry, key, s));
      }),
    getIntent: (key) => read(async () => entryOf(await driver.getEntry(key))),
    listOutbox: (opts = {}) => read(async () => (await driver.listEntries({ states: opts.states, limit: limitOf(opts.limit) })).map(decodeEntry)),
    claimOutbox: async (opts) => {
      const updatedBeforeMs = Date.parse(opts.updatedBefore);
      if (Number.isNaN(updatedBeforeMs)) throw new TypeError(`claimOutbox: updatedBefore is not a time: ${opts.updatedBefore}`);
      const claim = { states: opts.states, updatedBeforeMs, limit: whole(opts.limit) };
      return write({ claim }, (tx) =>
        tx
          .claimable(claim)
          .map(decodeEntry)
          .map((entry): OutboxEntry => {
            const next: OutboxEntry = { ...entry, attempts: entry.attempts + 1, updatedAt: opts.leaseUntil ?? opts.at };
            tx.putEntry(encodeEntry(next));
            append(tx, claimedEvent(entry, opts.claimant, next.attempts, opts.at));
            return next;
          }),
      );
    },

    requestApproval: (input) =>
      write({ requests: [input.id], pending: [input.inputHash] }, (tx) => {
        for (const r of tx.pendingRequests(input.inputHash).map(decodeRequest)) {
          if (joinsPendingRequest(r, input))
            return { request: r, created: false, receipt: append(tx, requestedEvent(r, input.invocationId, false, input.createdAt)) };
        }
        if (tx.getRequest(input.id) !== undefined) throw new ToolError("journal_failed", `an approval request with id ${input.id} already exists`);
        const request: ApprovalRequest = { ...input, status: "pending" };
        tx.putRequest(encodeRequest(request));
        return { request, created: true, receipt: append(tx, requestedEvent(request, input.invocationId, true, input.createdAt)) };
      }),
    getApproval: (id) => read(async () => requestOf(await driver.getRequest(id))),
    listApprovals: (opts = {}) => read(async () => (await driver.listRequests({ states: opts.status, limit: limitOf(opts.limit) })).map(decodeRequest)),
    decideApproval: (id, decision) =>
      write({ requests: [id] }, (tx) => {
        const request = requestOf(tx.getRequest(id));
        if (!request) throw new ToolError("approval_unknown", `no approval request ${id}`);
        if (request.status !== "pending") throw new ToolError("approval_consumed", `approval request ${id} was already ${request.status}`);
        if (Date.parse(request.expiresAt) <= Date.parse(decision.at)) {
          tx.putRequest(encodeRequest({ ...request, status: "expired" }));
          return new CommittedRefusal(new ToolError("approval_expired", `approval request ${id} expired at ${request.expiresAt}`));
        }
        const decided = decidedRequest(request, decision);
        tx.putRequest(encodeRequest(decided));
        return { request: decided, receipt: append(tx, decidedEvent(request, id, decision)) };
      }),
    consumeGrant: (check, event) =>
      write({ requests: [check.requestId] }, (tx) => {
        const outcome = consume(tx, check);
        if (outcome.status === "consumed") append(tx, event);
        return outcome;
      }),

    async close() {
      if (closed) return;
      closed = true;
      try {
        await driver.close();
      } catch (cause) {
        throw failure(cause);
      }
    },
  };
}

const entryOf = (stored: string | undefined): OutboxEntry | undefined => (stored === undefined ? undefined : decodeEntry(stored));
const requestOf = (stored: string | undefined): ApprovalRequest | undefined => (stored === undefined ? undefined : decodeRequest(stored));

/** A count or position as every driver takes it: a whole number from 0 to 2^53 - 1. */
const whole = (n: number): number => (Number.isNaN(n) ? 0 : Math.min(Number.MAX_SAFE_INTEGER, Math.max(0, Math.floor(n))));
const limitOf = (limit: number | undefined): number | undefined => (limit === undefined ? undefined : whole(limit));
