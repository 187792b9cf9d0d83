import { randomBytes } from "node:crypto";
import { ToolError } from "../errors.js";
import { sealAuditEvent, unsealAuditEvent, type AuditKey } from "./audit-chain.js";
import { claimedEvent, consumedEvent, decidedEvent, decidedRequest, intentEvent, joinsPendingRequest, requestedEvent, settledEntry, settledEvent, startedEntry } from "./events.js";
import { checkGrant } from "./grant-check.js";
import {
  GENESIS_MAC,
  type ApprovalDecision,
  type ApprovalRequest,
  type ApprovalRequestInput,
  type AuditEventInput,
  type AuditRecord,
  type BeginIntentOptions,
  type BeginIntentResult,
  type ClaimOutboxOptions,
  type GrantCheck,
  type GrantOutcome,
  type IntentInput,
  type Journal,
  type JournalReceipt,
  type OutboxEntry,
  type Settlement,
} from "./types.js";

export interface MemoryJournalOptions {
  /** HMAC key for the audit chain; random when omitted (then only this process can verify). */
  readonly auditKey?: AuditKey;
}

export interface MemoryJournal extends Journal {
  /** The key the chain is MACed with, for `verifyAuditChain` in tests. */
  readonly auditKey: AuditKey;
}

/**
 * The journal for tests and single-process tools: everything in memory, same semantics as the
 * durable stores (each method is atomic because it never awaits inside).
 */
export function createMemoryJournal(options: MemoryJournalOptions = {}): MemoryJournal {
  const auditKey = options.auditKey ?? randomBytes(32);
  // The chain as stored text: one payload string and one MAC per event. Keeping events as text
  // rather than object graphs keeps a long-lived journal cheap for the garbage collector.
  const payloads: string[] = [];
  const macs: string[] = [];
  const outbox = new Map<string, OutboxEntry>();
  const approvals = new Map<string, ApprovalRequest>();
  let closed = false;

  const ensureOpen = (): void => {
    if (closed) throw new ToolError("journal_failed", "the memory journal is closed");
  };
  const appendNow = (event: AuditEventInput): JournalReceipt => {
    const seq = macs.length;
    const sealed = sealAuditEvent(auditKey, { seq, mac: seq === 0 ? GENESIS_MAC : macs[seq - 1]! }, event);
    payloads.push(sealed.payload);
    macs.push(sealed.mac);
    return { journal: "memory", seq: sealed.seq, mac: sealed.mac, at: event.at };
  };
  const consumeNow = (check: GrantCheck): GrantOutcome => {
    const request = approvals.get(check.requestId);
    const verdict = checkGrant(request, check);
    if (!("ok" in verdict)) return verdict;
    const consumed: ApprovalRequest = { ...request!, status: "consumed", consumedAt: check.at, consumedBy: check.invocationId };
    approvals.set(consumed.id, consumed);
    const receipt = appendNow(consumedEvent(consumed, check));
    return { status: "consumed", request: consumed, receipt };
  };

  const journal: MemoryJournal = {
    kind: "memory",
    auditKey,

    async append(event) {
      ensureOpen();
      return appendNow(event);
    },
    async readAudit(opts = {}) {
      const from = Math.max(0, opts.afterSeq ?? 0);
      const to = opts.limit === undefined ? macs.length : Math.min(macs.length, from + opts.limit);
      const rows: AuditRecord[] = [];
      for (let i = from; i < to; i++) {
        rows.push(unsealAuditEvent({ seq: i + 1, payload: payloads[i]!, prevMac: i === 0 ? GENESIS_MAC : macs[i - 1]!, mac: macs[i]! }));
      }
      return rows;
    },
    async head() {
      return macs.length === 0 ? { seq: 0, mac: GENESIS_MAC } : { seq: macs.length, mac: macs[macs.length - 1]! };
    },

    async beginIntent(intent: IntentInput, opts: BeginIntentOptions = {}): Promise<BeginIntentResult> {
      ensureOpen();
      const existing = outbox.get(intent.key);
      if (existing) {
        const retake = opts.retake;
        if (!retake || retake.attempts !== existing.attempts || !retake.states.includes(existing.state)) {
          return { status: "existing", entry: existing };
        }
      }
      let grantId: string | undefined;
      if (opts.grant) {
        const outcome = consumeNow(opts.grant);
        if (outcome.status !== "consumed") return { status: "grant_refused", outcome };
        grantId = outcome.request.id;
      }
      const entry = startedEntry(intent, (existing?.attempts ?? 0) + 1, grantId);
      outbox.set(intent.key, entry);
      const receipt = appendNow(intentEvent(intent, entry.attempts, grantId));
      return { status: "started", entry, receipt };
    },

    async settleIntent(key: string, s: Settlement) {
      ensureOpen();
      const entry = outbox.get(key);
      if (!entry) throw new ToolError("journal_failed", `no intent recorded under key ${key}`);
      if (entry.intentHash !== s.intentHash) throw new ToolError("journal_failed", `settlement for ${key} is bound to another intent`);
      outbox.set(key, settledEntry(entry, s));
      return appendNow(settledEvent(entry, key, s));
    },
    async getIntent(key) {
      return outbox.get(key);
    },
    async claimOutbox(opts: ClaimOutboxOptions) {
      ensureOpen();
      const cutoff = Date.parse(opts.updatedBefore);
      const claimed: OutboxEntry[] = [];
      for (const entry of outbox.values()) {
        if (claimed.length >= opts.limit) break;
        if (!opts.states.includes(entry.state) || Date.parse(entry.updatedAt) >= cutoff) continue;
        const next: OutboxEntry = { ...entry, attempts: entry.attempts + 1, updatedAt: opts.leaseUntil ?? opts.at };
        outbox.set(entry.key, next);
        claimed.push(next);
        appendNow(claimedEvent(entry, opts.claimant, next.attempts, opts.at));
      }
      return claimed;
    },
    async listOutbox(opts = {}) {
      const rows = [...outbox.values()].filter((e) => !opts.states || opts.states.includes(e.state));
      return opts.limit === undefined ? rows : rows.slice(0, opts.limit);
    },

    async requestApproval(input: ApprovalRequestInput) {
      ensureOpen();
      for (const r of approvals.values()) {
        if (joinsPendingRequest(r, input)) {
          const receipt = appendNow(requestedEvent(r, input.invocationId, false, input.createdAt));
          return { request: r, created: false, receipt };
        }
      }
      const request: ApprovalRequest = { ...input, status: "pending" };
      approvals.set(request.id, request);
      return { request, created: true, receipt: appendNow(requestedEvent(request, input.invocationId, true, input.createdAt)) };
    },
    async getApproval(id) {
      return approvals.get(id);
    },
    async listApprovals(opts = {}) {
      const rows = [...approvals.values()].filter((r) => !opts.status || opts.status.includes(r.status));
      return opts.limit === undefined ? rows : rows.slice(0, opts.limit);
    },
    async decideApproval(id: string, decision: ApprovalDecision) {
      ensureOpen();
      const request = approvals.get(id);
      if (!request) throw new ToolError("approval_unknown", `no approval request ${id}`);
      if (request.status !== "pending") throw new ToolError("approval_consumed", `approval request ${id} was already ${request.status}`);
      if (Date.parse(request.expiresAt) <= Date.parse(decision.at)) {
        approvals.set(id, { ...request, status: "expired" });
        throw new ToolError("approval_expired", `approval request ${id} expired at ${request.expiresAt}`);
      }
      const decided = decidedRequest(request, decision);
      approvals.set(id, decided);
      const receipt = appendNow(decidedEvent(request, id, decision));
      return { request: decided, receipt };
    },
    async consumeGrant(check: GrantCheck, event: AuditEventInput) {
      ensureOpen();
      const outcome = consumeNow(check);
      if (outcome.status === "consumed") appendNow(event);
      return outcome;
    },
    async close() {
      closed = true;
    },
  };
  return journal;
}
