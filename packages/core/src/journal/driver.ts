import type { SealedAuditEvent } from "./audit-chain.js";
import type { ApprovalStatus, OutboxState } from "./types.js";

/**
 * What a store implements to become a journal: storage, not rules. `createJournal(driver)` holds
 * every rule (idempotency, retakes, grants, approvals, recovery claims) and seals the audit chain;
 * a driver keeps the chain's links, the outbox entries, the approval requests and the sealed
 * records (authority state) as text, and runs
 * a transaction atomically. Memory, SQLite and PostgreSQL are drivers; each passes
 * `describeJournal()` from `@toolgate/core/testing` through `createJournal`.
 *
 * A driver may batch: transactions started in the same turn of the event loop may share one
 * database transaction (group commit), as long as each runs in call order, sees what the ones
 * before it wrote, and its promise resolves only once its writes are durable.
 */
export interface JournalDriver {
  /** `memory`, `sqlite`, `postgres`, …: shown in receipts. */
  readonly kind: string;

  /**
   * Run `fn` once, synchronously, inside a write transaction, and resolve with what it returned
   * once the transaction has committed.
   *
   * - Atomic with the chain: `tx.head()` is the chain's last link, and no other writer (another
   *   handle, process or machine on the same store) appends between it and this commit.
   * - A `ToolError` thrown by `fn` is a refusal: the journal throws it before its first write, so
   *   the driver rejects with it and keeps the other calls of its batch.
   * - Any other error is the store's own failure: nothing `fn` wrote may be kept. Reject with a
   *   `ToolError` `journal_failed` (keeping the error as its `cause`), failing no other call.
   *
   * `reads` lists every row `fn` will read, so a driver that fetches before it runs can fetch a
   * whole batch in one round trip; a driver that reads on demand may ignore it.
   */
  transaction<T>(reads: TransactionReads, fn: (tx: JournalTransaction) => T): Promise<T>;

  /**
   * Optional: a number that moves whenever anything stored may have changed, read synchronously.
   * A transaction takes the next number when it starts (so `fn` reads its own) and moves it once
   * more if it rolls back; every other change (an edit behind the journal) moves it too. A number
   * still current after a transaction therefore means that transaction committed and nothing else
   * changed since. The journal answers a record read again from what it verified while the number
   * stands still (see record-index.ts). Omit it unless every change moves it (the memory driver
   * has it; a database shared with other processes cannot tell without a read).
   */
  changes?(): number;
  /** The last committed link (`seq` 0 and `GENESIS_MAC` when the chain is empty). */
  head(): Promise<AuditHead>;
  /** Links with `seq` above `afterSeq`, in order, at most `limit` (all when undefined), each with its stored `subject` column. */
  readAudit(range: { readonly afterSeq: number; readonly limit: number | undefined }): Promise<readonly SealedAuditEvent[]>;
  /** An outbox entry with its subject's latest event (`entry:<key>`); `text` undefined when there is no row. */
  getEntry(key: string): Promise<StoredRow>;
  /** Entries (all, or in one of `states`) in the order they were first written. */
  listEntries(filter: ListFilter<OutboxState>): Promise<readonly StoredRow[]>;
  /** An approval request with its subject's latest event (`request:<id>`); `text` undefined when there is no row. */
  getRequest(id: string): Promise<StoredRow>;
  /** Requests (all, or in one of `statuses`) in the order they were first written. */
  listRequests(filter: ListFilter<ApprovalStatus>): Promise<readonly StoredRow[]>;
  /** A sealed record with its subject's latest event (`<kind>:<id>`); `text` undefined when there is no row. */
  getRecord(kind: string, id: string): Promise<StoredRow>;
  /** Every record of `kind` in the order first written (`id` is the record's id). */
  listRecords(kind: string): Promise<readonly StoredRow[]>;
  /** Every kind with at least one record stored (for verifying the whole journal). */
  recordKinds(): Promise<readonly string[]>;

  /** Finish what was started, then release files, connections and pools. Called once. */
  close(): Promise<void>;
}

/**
 * One write transaction as the journal's rules see it. Every method is synchronous: a driver that
 * cannot read on demand (a batch fetched in one round trip) answers from the rows `reads` declared,
 * and throws a plain `Error` (a failure, not a refusal) when asked for one it was not told about.
 */
export interface JournalTransaction {
  /** The chain's last link as this transaction sees it, its own appends included. */
  head(): AuditHead;
  /**
   * Store the next link: `sealed.seq` is `head().seq + 1`, and `head()` returns it after. A link
   * with a `subject` becomes that subject's latest event for the reads after it.
   */
  appendAudit(sealed: SealedAuditEvent): void;
  getEntry(key: string): StoredRow;
  /** Insert or replace the entry with this key; a replaced entry keeps its place in list order. */
  putEntry(entry: StoredEntry): void;
  /**
   * Entries in one of `claim.states` whose `updatedMs` is below `claim.updatedBeforeMs`, in list
   * order, at most `claim.limit`, none of them held by a concurrent claim (a driver shared by
   * several writers skips what another transaction holds rather than waiting for it).
   */
  claimable(claim: OutboxClaim): readonly StoredRow[];
  getRequest(id: string): StoredRow;
  /** Insert or replace the request with this id; a replaced request keeps its place in list order. */
  putRequest(request: StoredRequest): void;
  /** Requests with status `pending` or `granted` and this input hash, in list order. */
  openRequests(inputHash: string): readonly StoredRow[];
  getRecord(kind: string, id: string): StoredRow;
  /** Insert or replace the record with this kind and id; a replaced record keeps its place in list order. */
  putRecord(record: StoredRecord): void;
}

/**
 * A row as read: its key or id (the column, not the JSON), its stored text, and the latest audit
 * event whose `subject` is this row (the highest `seq`), found through the audit table's indexed
 * subject column in the same read. The journal checks the row's seal against that event.
 */
export interface StoredRow {
  readonly id: string;
  /** Undefined when no row is stored under `id`. */
  readonly text: string | undefined;
  readonly latest: RowEvent | undefined;
}

/** The audit event that recorded a row's version: a row's seal covers its `seq` and `prevMac`. */
export interface RowEvent {
  readonly seq: number;
  readonly prevMac: string;
}

/** The rows a transaction reads (see {@link JournalDriver.transaction}). */
export interface TransactionReads {
  /** Outbox keys passed to `getEntry`. */
  readonly entries?: readonly string[];
  /** Request ids passed to `getRequest`. */
  readonly requests?: readonly string[];
  /** Input hashes passed to `openRequests`. */
  readonly open?: readonly string[];
  /** Records passed to `getRecord`. A driver shared by several writers holds these rows until commit. */
  readonly records?: readonly RecordRef[];
  /** The claim passed to `claimable`. */
  readonly claim?: OutboxClaim;
}

export interface OutboxClaim {
  readonly states: readonly OutboxState[];
  readonly updatedBeforeMs: number;
  /** A whole number, 0 or more. */
  readonly limit: number;
}

/** An outbox entry as stored: its JSON text and the columns it is found by. */
export interface StoredEntry {
  readonly key: string;
  readonly state: OutboxState;
  /** `updatedAt` in epoch milliseconds. */
  readonly updatedMs: number;
  readonly text: string;
}

/** An approval request as stored: its JSON text and the columns it is found by. */
export interface StoredRequest {
  readonly id: string;
  readonly status: ApprovalStatus;
  readonly inputHash: string;
  readonly text: string;
}

/** A sealed authority record as stored: its kind, id and JSON text. */
export interface StoredRecord {
  readonly kind: string;
  readonly id: string;
  readonly text: string;
}

export interface RecordRef {
  readonly kind: string;
  readonly id: string;
}

export interface AuditHead {
  readonly seq: number;
  readonly mac: string;
}

export interface ListFilter<TState extends string> {
  /** Only rows in one of these; all rows when undefined. */
  readonly states: readonly TState[] | undefined;
  /** A whole number, 0 or more; no limit when undefined. */
  readonly limit: number | undefined;
}
