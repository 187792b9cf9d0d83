import type { EffectBoundary, ToolErrorCode } from "../errors.js";
import type { Effect } from "../manifest.js";
import type { ApprovalPreview } from "../manifest.js";
import type { InjectionFinding } from "../untrusted.js";
import type { LimitCharge } from "../limits/window.js";
import type { ApprovalChange, ApprovalEdit, ApprovalEditInput, ApprovalExpectation, EditedIntent } from "./edit-types.js";
import type { EditedRun } from "./edit-rules.js";

export type { LimitCharge };
export type { ApprovalChange, ApprovalEdit, ApprovalEditInput, ApprovalExpectation, EditedIntent, EditedRun };

/**
 * The journal: audit chain, outbox and approvals behind one async interface, so the memory,
 * SQLite and PostgreSQL stores are interchangeable. Every method that changes state does so
 * atomically together with the audit event that records it.
 *
 * Implementations must pass `describeJournal()` from `@toolgate/core/testing`.
 */
export interface Journal {
  /** `memory`, `sqlite`, `postgres`, …: shown in receipts. */
  readonly kind: string;

  // ---- audit ----
  /** Append one event to the chain; resolves once it is durable. */
  append(event: AuditEventInput): Promise<JournalReceipt>;
  /** Events in chain order, from `afterSeq` (exclusive). */
  readAudit(options?: { readonly afterSeq?: number; readonly limit?: number }): Promise<readonly AuditRecord[]>;
  /** The last event's sequence number and MAC (`seq` 0 and the genesis MAC when empty). */
  head(): Promise<{ readonly seq: number; readonly mac: string }>;

  // ---- outbox ----
  /**
   * Record the intent of a call before its effect. Atomic with: the idempotency-key lookup, the
   * single-use grant consumption (when `grant` is given), the limit charges (when `charges` are
   * given) and the `intent.recorded` audit event.
   */
  beginIntent(intent: IntentInput, options?: BeginIntentOptions): Promise<BeginIntentResult>;
  /** Record how the call ended, bound to the intent's hash, with its audit event. */
  settleIntent(key: string, settlement: Settlement): Promise<JournalReceipt>;
  getIntent(key: string): Promise<OutboxEntry | undefined>;
  listOutbox(options?: { readonly states?: readonly OutboxState[]; readonly limit?: number }): Promise<readonly OutboxEntry[]>;
  /**
   * Claim entries for recovery: atomically take up to `limit` entries in one of `states` whose
   * `updatedAt` is before `updatedBefore`, bump their `attempts` and set `updatedAt` to `at`, so no
   * other worker claims the same entry. Concurrent claimants get disjoint sets.
   */
  claimOutbox(options: ClaimOutboxOptions): Promise<readonly OutboxEntry[]>;

  // ---- approvals ----
  /**
   * Persist a request, or return the open one with the same binding: pending, or granted with an
   * unexpired grant (the same call asked twice waits on one human decision, and a retry after the
   * human's approval finds the grant).
   */
  requestApproval(request: ApprovalRequestInput): Promise<{ readonly request: ApprovalRequest; readonly created: boolean; readonly receipt: JournalReceipt }>;
  getApproval(requestId: string): Promise<ApprovalRequest | undefined>;
  listApprovals(options?: { readonly status?: readonly ApprovalStatus[]; readonly limit?: number }): Promise<readonly ApprovalRequest[]>;
  /** Grant or deny a pending, unexpired request. Refuses (`approval_*`) anything else. */
  decideApproval(requestId: string, decision: ApprovalDecision): Promise<{ readonly request: ApprovalRequest; readonly receipt: JournalReceipt }>;
  /**
   * Consume a grant outside an intent (releasing held output, a call without a key). Same checks
   * as in beginIntent; `audit` is appended when the grant is consumed, with `options.charges`.
   */
  consumeGrant(grant: GrantCheck, audit: AuditEventInput, options?: ConsumeGrantOptions): Promise<GrantOutcome>;
  /** Where an approver's edit of this call as asked last ran (`beginIntent` seals it when it consumes the edited grant); tampered: `journal_tampered`. */
  editedRun(toolId: string, askedInputHash: string, principal: string, tenant: string): Promise<EditedRun | undefined>;
  // ---- limits ----
  /**
   * Charge a call that has neither an outbox entry nor a grant to its window limits, the same way
   * `beginIntent` and `consumeGrant` do (see {@link BeginIntentOptions.charges}). `audit` is the
   * call's event: its time, invocation, tool, principal and tenant are copied into each
   * `limit.charged` event; it is not appended itself. Resolves with the last event's receipt, or
   * null (nothing written) when `charges` is empty.
   */
  chargeLimits(charges: readonly LimitCharge[], audit: AuditEventInput): Promise<JournalReceipt | null>;

  // ---- sealed records (authority state: operators, credentials, clients, switches) ----
  /**
   * A sealed record, opened (its seal checked against its latest audit event); undefined when
   * there is none. `kind` matches {@link RECORD_KIND}; a row failing its seal is `journal_tampered`.
   */
  getRecord(kind: string, id: string): Promise<unknown | undefined>;
  /** Every record of a kind, in the order first written, each opened like `getRecord`. */
  listRecords(kind: string): Promise<readonly { readonly id: string; readonly value: unknown }[]>;
  /**
   * Read-modify-write one record atomically with the audit event that records it (subject
   * `<kind>:<id>`). `fn` runs synchronously inside the write transaction with the current value
   * (undefined when none); it returns the new value (any JSON) and the event, or throws a
   * `ToolError` to refuse (nothing written). Concurrent updates of one record, from any handle on
   * the same store, run one after the other, each seeing the one before (compare-and-set).
   */
  updateRecord<T>(
    kind: string,
    id: string,
    fn: (current: unknown | undefined) => RecordUpdate<T>,
  ): Promise<{ readonly result: T; readonly receipt: JournalReceipt }>;

  /** Release resources (files, pools). */
  close(): Promise<void>;
}

export const GENESIS_MAC = "0".repeat(64);

/** What a record kind looks like; `entry` and `request` are the journal's own and refused. */
export const RECORD_KIND = /^[a-z][a-z-]{0,31}$/;

/** What an `updateRecord` function returns: the new value, the event recording it, and what the call resolves with. */
export interface RecordUpdate<T> {
  readonly value: unknown;
  readonly event: AuditEventInput;
  readonly result: T;
}

export type AuditEventType =
  | "call.refused"
  | "call.completed"
  | "call.failed"
  | "call.replayed"
  | "call.late_result"
  | "intent.recorded"
  | "intent.settled"
  | "approval.requested"
  | "approval.granted"
  | "approval.edited"
  | "approval.denied"
  | "approval.consumed"
  | "approval.refused"
  | "output.flagged"
  | "output.held"
  | "outbox.recovered"
  | "approval.expired"
  | "journal.tampered"
  | "journal.pruned"
  | (string & { readonly __auditEventType?: never });

export interface AuditEventInput {
  readonly type: AuditEventType;
  /** ISO-8601 time from the gate's clock. */
  readonly at: string;
  readonly invocationId?: string | undefined;
  readonly toolId?: string | undefined;
  readonly principal?: string | undefined;
  readonly tenant?: string | undefined;
  /** Secret-free, redacted, JSON-only facts. */
  readonly data: Readonly<Record<string, unknown>>;
  /**
   * The outbox entry or approval request this event wrote a version of (`entry:<key>`,
   * `request:<id>`). Set by the journal only: `append` drops it.
   */
  readonly subject?: string | undefined;
}

export interface AuditRecord extends AuditEventInput {
  readonly seq: number;
  readonly prevMac: string;
  readonly mac: string;
}

/** Proof that something was journaled: where, which event, and its MAC. */
export interface JournalReceipt {
  readonly journal: string;
  readonly seq: number;
  readonly mac: string;
  readonly at: string;
}

export type OutboxState = "pending" | "completed" | "failed" | "unknown";

export interface IntentInput {
  readonly key: string;
  readonly invocationId: string;
  readonly toolId: string;
  readonly principal: string;
  readonly tenant: string;
  readonly inputHash: string;
  /** The frozen input with secrets redacted; `inputRedacted` says whether anything was. */
  readonly input: unknown;
  readonly inputRedacted: boolean;
  readonly effect: Effect;
  readonly idempotent: boolean;
  readonly target: string | undefined;
  /** Set when the input is an approver's edit of the input the caller asked (`input`/`inputHash` are the edit's). */
  readonly edited?: EditedIntent;
  /** SHA-256 of the canonical intent (everything above); the result is bound to it. */
  readonly intentHash: string;
  readonly at: string;
}

export interface BeginIntentOptions {
  /** Consume this grant atomically with the intent. */
  readonly grant?: GrantCheck;
  /**
   * Take over an existing entry for a new attempt, only if it is still at this attempt count and
   * in one of these states (compare-and-set).
   */
  readonly retake?: { readonly attempts: number; readonly states: readonly OutboxState[] };
  /**
   * Count the call against these window limits, in the same transaction: every limit record is
   * read (and held, on a store shared by several writers) and checked before the first write; a
   * charge that would take its window over `max` rejects the whole call with a `ToolError`
   * `rate_limited` (details: limit, per, max, windowMs, retryAfterMs) and writes nothing.
   * Otherwise each record is written with its own `limit.charged` event. Not charged when the key
   * finds an existing entry, or when the grant is refused.
   */
  readonly charges?: readonly LimitCharge[];
}

export interface ConsumeGrantOptions {
  /** Charged as in {@link BeginIntentOptions.charges}, only when the grant is consumed. */
  readonly charges?: readonly LimitCharge[];
}

export type BeginIntentResult =
  | { readonly status: "started"; readonly entry: OutboxEntry; readonly receipt: JournalReceipt }
  | { readonly status: "existing"; readonly entry: OutboxEntry }
  | { readonly status: "grant_refused"; readonly outcome: Exclude<GrantOutcome, { readonly status: "consumed" }> };

export interface ClaimOutboxOptions {
  readonly states: readonly OutboxState[];
  readonly updatedBefore: string;
  readonly limit: number;
  /** Who claims (a worker id), recorded in the audit event. */
  readonly claimant: string;
  /** Now: the time of the claim's audit event. */
  readonly at: string;
  /**
   * The `updatedAt` stamped on claimed entries; default `at`. Recovery stamps a time in the future
   * (now plus a lease), so other claimants cannot take an entry while it is being replayed.
   */
  readonly leaseUntil?: string;
  /**
   * Called after the claim commits, once per entry that failed its seal: such an entry is never
   * returned (never replayed), is recorded as a `journal.tampered` event, and is moved out of
   * every later claim's reach (state column `unknown`); the row itself is left as it was found.
   */
  readonly onTampered?: (key: string, problem: string) => void;
}

export interface RecordedResult {
  /** The output as returned (validated, redacted); undefined when `outputPruned`. */
  readonly output: unknown;
  /**
   * Set on read when the journal keeps no body for this result: a read's output under the default
   * retention, or one removed by `pruneJournal`. `outputHash` still proves what it was; a replay
   * of it cannot return it.
   */
  readonly outputPruned?: true;
  readonly outputHash: string;
  readonly untrusted: boolean;
  readonly findings: readonly InjectionFinding[];
  /** Set while the output waits for a human (profile `onInjection: "hold"`). */
  readonly heldBy?: string;
}

export interface RecordedError {
  readonly code: ToolErrorCode;
  readonly message: string;
}

export interface Settlement {
  readonly state: Exclude<OutboxState, "pending">;
  readonly boundary: EffectBoundary;
  readonly intentHash: string;
  readonly invocationId: string;
  readonly at: string;
  readonly result?: RecordedResult;
  readonly error?: RecordedError;
  /** Audit facts to add (describeResult, duration, late arrival…). */
  readonly audit?: Readonly<Record<string, unknown>>;
  /** Audit event type; default `intent.settled`. */
  readonly eventType?: AuditEventType;
}

export interface OutboxEntry extends IntentInput {
  readonly state: OutboxState;
  readonly boundary: EffectBoundary;
  readonly attempts: number;
  readonly updatedAt: string;
  readonly grantId?: string;
  readonly result?: RecordedResult;
  readonly error?: RecordedError;
}

export type ApprovalStatus = "pending" | "granted" | "denied" | "consumed" | "expired";

/** What a grant is bound to. Every field must match the call that uses it. */
export interface ApprovalBinding {
  readonly toolId: string;
  readonly inputHash: string;
  readonly principal: string;
  readonly tenant: string;
  readonly previewHash: string;
}

export interface ApprovalRequestInput extends ApprovalBinding {
  readonly id: string;
  /** `call`: approve running it; `output`: release a held, flagged result. */
  readonly kind: "call" | "output";
  readonly preview: ApprovalPreview;
  readonly target: string | undefined;
  readonly invocationId: string;
  readonly idempotencyKey: string;
  readonly createdAt: string;
  readonly expiresAt: string;
  /** Distinct approvers needed before the request is granted (default 1). */
  readonly approvalsNeeded?: 1 | 2;
  /** A framework's or client's id for the call: stored and shown, never trusted. */
  readonly callRef?: string;
  /** The input as asked, redacted as an intent's is (`kind: "call"` only); an edit starts from it. */
  readonly input?: unknown;
  readonly inputRedacted?: boolean;
  /** JSON Pointers an approver may edit (`""` = the whole input), fixed when the call asked; `false`: no edits. */
  readonly editable?: false | readonly string[];
}

/** One approver's grant of a request. */
export interface ApprovalGrantRecord {
  /** The authenticated approver's id (`op_…`, `owner`, `mcp:<clientId>`). */
  readonly by: string;
  /** How the approver was authenticated (`session`, `owner`, `host`, `elicitation`). */
  readonly via: string;
  readonly at: string;
  /** Other people this approval stands for (see `ApprovalDecision` `linked`). */
  readonly linked?: readonly string[];
  /** The request version this approval approved (absent = 0, the input as asked); only the current version's count. */
  readonly version?: number;
}

export interface ApprovalRequest extends ApprovalRequestInput {
  readonly status: ApprovalStatus;
  /** The grants so far, in order (one per distinct approver); a request needing 2 stays pending after the first. */
  readonly approvals?: readonly ApprovalGrantRecord[];
  readonly decidedBy?: string;
  /** How the approver who decided it was authenticated. */
  readonly decidedVia?: string;
  readonly decidedAt?: string;
  readonly reason?: string;
  /** SHA-256 of the grant's secret token; the token itself is never stored. */
  readonly grantTokenHash?: string;
  readonly grantExpiresAt?: string;
  readonly consumedAt?: string;
  readonly consumedBy?: string;
  /** An approver's edit of the input (the latest version); the grant then binds and runs the edited input. */
  readonly edit?: ApprovalEdit;
}

export type ApprovalDecision =
  | {
      readonly kind: "grant";
      /** The authenticated approver's id. */
      readonly approver: string;
      /** How the approver was authenticated. */
      readonly via: string;
      /**
       * Ids of other people this approver's credential came from or acts for (e.g. the admin who
       * issued the sign-in link the session was opened with). On a request needing two approvers,
       * a grant is refused when its approver or any of these ids is the approver, or one of the
       * linked ids, of the grant before it.
       */
      readonly linked?: readonly string[];
      readonly tokenHash: string;
      readonly grantExpiresAt: string;
      readonly at: string;
      /** The version and preview hash the approver saw; required once a request has been edited. */
      readonly expect?: ApprovalExpectation;
      /** The approver's edit of the input, approved with this decision (a new version). */
      readonly edit?: ApprovalEditInput;
    }
  | { readonly kind: "deny"; readonly approver: string; readonly via: string; readonly reason: string; readonly at: string };

export interface GrantCheck {
  readonly requestId: string;
  /** SHA-256 of the grant's token; required unless `byBinding`. */
  readonly tokenHash?: string;
  /**
   * A check by binding (only the gate builds one, never from a caller's grant): no token; the
   * request must be granted, unexpired and unconsumed, and its whole binding equal to `binding`.
   */
  readonly byBinding?: true;
  readonly binding: ApprovalBinding;
  /** The edited input's hash and preview hash, when the request carries an edit (must equal the edit's). */
  readonly edit?: { readonly inputHash: string; readonly previewHash: string };
  /** The invocation that consumes it. */
  readonly invocationId: string;
  readonly at: string;
}

export type GrantOutcome =
  | { readonly status: "consumed"; readonly request: ApprovalRequest; readonly receipt: JournalReceipt }
  | {
      readonly status: "unknown" | "mismatch" | "expired" | "already_consumed" | "denied" | "not_granted";
      readonly mismatched?: readonly (keyof ApprovalBinding | "token" | "edit")[];
    };
