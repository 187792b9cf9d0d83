import { chmodSync, existsSync } from "node:fs";
import Database from "better-sqlite3";
import {
  checkGrant,
  GENESIS_MAC,
  requestedEvent,
  sealAuditEvent,
  ToolError,
  unsealAuditEvent,
  type ApprovalDecision,
  type ApprovalRequest,
  type ApprovalRequestInput,
  type ApprovalStatus,
  type AuditEventInput,
  type AuditKey,
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
} from "@toolgate/core";
import {
  auditKeyCheck,
  claimedEvent,
  consumedEvent,
  decidedEvent,
  decidedRequest,
  decodeEntry,
  decodeRequest,
  intentEvent,
  joinsPendingRequest as joins,
  settledEntry,
  settledEvent,
  startedEntry,
} from "@toolgate/core";
import { migrate, SQLITE_SCHEMA_VERSION } from "./schema.js";

/**
 * `full` (the default): every commit is fsynced before its promise resolves, so an intent survives
 * a power loss or kernel crash as well as a killed process. `normal`: in WAL mode a commit survives
 * a killed process but the last commits can be lost with the machine; faster. `extra`: `full`
 * plus a directory sync.
 */
export type SqliteSynchronous = "full" | "normal" | "extra";

export interface SqliteJournalOptions {
  /** HMAC key for the audit chain. Every process opening the file must use the same one. */
  readonly auditKey: AuditKey;
  /** Default `full`: see {@link SqliteSynchronous}. */
  readonly synchronous?: SqliteSynchronous;
  /** How long a write waits for another process's transaction, in ms (default 5000). */
  readonly busyTimeoutMs?: number;
  /**
   * Batch the writes that arrive in the same event-loop turn into one transaction (default true).
   * Each call still resolves only after the transaction holding it commits.
   */
  readonly groupCommit?: boolean;
  /** Most writes in one batch (default 512). */
  readonly maxBatch?: number;
}

export interface SqliteJournal extends Journal {
  readonly kind: "sqlite";
  readonly path: string;
  readonly schemaVersion: number;
  /** The `synchronous` level the connection reports (read back from SQLite, not the option). */
  readonly synchronous: SqliteSynchronous | "off";
}

/** A failure of the database itself inside a batch run without savepoints. */
class BatchFailure {
  constructor(readonly cause: unknown) {}
}

/** A refusal decided inside a transaction whose writes must still commit. */
class CommittedRefusal {
  constructor(readonly error: Error) {}
}

interface Tx {
  append(event: AuditEventInput): JournalReceipt;
}

interface QueuedOp {
  readonly run: (tx: Tx) => unknown;
  readonly resolve: (value: unknown) => void;
  readonly reject: (reason: unknown) => void;
}

interface Row {
  readonly entry: string;
}

/**
 * Open (creating and migrating when needed) a journal in one SQLite file. Several processes may
 * open the same file: every write is one `BEGIN IMMEDIATE` transaction that reads the audit head
 * and appends after it, so they keep one chain.
 */
export async function openSqliteJournal(path: string, options: SqliteJournalOptions): Promise<SqliteJournal> {
  const synchronous = options.synchronous ?? "full";
  if (!["full", "normal", "extra"].includes(synchronous)) throw new TypeError(`synchronous must be full, normal or extra, not ${String(synchronous)}`);
  const busyTimeoutMs = options.busyTimeoutMs ?? 5000;
  const maxBatch = Math.max(1, options.maxBatch ?? 512);
  const groupCommit = options.groupCommit ?? true;
  const auditKey = options.auditKey;
  if (auditKey === undefined || auditKey.length === 0) throw new TypeError("openSqliteJournal needs the audit key");

  let db: Database.Database;
  try {
    const created = path !== ":memory:" && !existsSync(path);
    db = new Database(path, { timeout: busyTimeoutMs });
    // The journal holds (redacted) inputs and results: readable by its owner only.
    if (created) chmodSync(path, 0o600);
  } catch (cause) {
    throw new ToolError("journal_failed", `could not open journal ${path}`, { cause });
  }
  try {
    db.pragma("journal_mode = WAL");
    db.pragma(`synchronous = ${synchronous.toUpperCase()}`);
    migrate(db, path, auditKeyCheck(auditKey));
  } catch (cause) {
    db.close();
    throw ToolError.is(cause) ? cause : new ToolError("journal_failed", `could not open journal ${path}`, { cause });
  }

  const sql = {
    begin: db.prepare("BEGIN IMMEDIATE"),
    commit: db.prepare("COMMIT"),
    rollback: db.prepare("ROLLBACK"),
    savepoint: db.prepare("SAVEPOINT op"),
    release: db.prepare("RELEASE op"),
    rollbackTo: db.prepare("ROLLBACK TO op"),
    head: db.prepare("SELECT seq, mac FROM audit ORDER BY seq DESC LIMIT 1"),
    insertAudit: db.prepare("INSERT INTO audit (seq, payload, prev_mac, mac) VALUES (?, ?, ?, ?)"),
    readAudit: db.prepare("SELECT seq, payload, prev_mac AS prevMac, mac FROM audit WHERE seq > ? ORDER BY seq LIMIT ?"),
    getEntry: db.prepare<[string], Row>("SELECT entry FROM outbox WHERE key = ?"),
    insertEntry: db.prepare("INSERT INTO outbox (key, state, updated_ms, entry) VALUES (?, ?, ?, ?)"),
    updateEntry: db.prepare("UPDATE outbox SET state = ?, updated_ms = ?, entry = ? WHERE key = ?"),
    listEntries: db.prepare<[{ states: string | null; limit: number }], Row>(
      "SELECT entry FROM outbox WHERE @states IS NULL OR state IN (SELECT value FROM json_each(@states)) ORDER BY id LIMIT @limit",
    ),
    claimable: db.prepare<[string, number, number], Row>(
      "SELECT entry FROM outbox WHERE state IN (SELECT value FROM json_each(?)) AND updated_ms < ? ORDER BY id LIMIT ?",
    ),
    getRequest: db.prepare<[string], { request: string }>("SELECT request FROM approvals WHERE request_id = ?"),
    pendingFor: db.prepare<[string], { request: string }>("SELECT request FROM approvals WHERE status = 'pending' AND input_hash = ? ORDER BY id"),
    insertRequest: db.prepare("INSERT INTO approvals (request_id, status, input_hash, request) VALUES (?, ?, ?, ?)"),
    updateRequest: db.prepare("UPDATE approvals SET status = ?, request = ? WHERE request_id = ?"),
    listRequests: db.prepare<[{ states: string | null; limit: number }], { request: string }>(
      "SELECT request FROM approvals WHERE @states IS NULL OR status IN (SELECT value FROM json_each(@states)) ORDER BY id LIMIT @limit",
    ),
  };

  // ---- the write queue: one transaction per batch, each call resolved after its commit ----
  let head = { seq: 0, mac: GENESIS_MAC };
  const tx: Tx = {
    append(event) {
      const sealed = sealAuditEvent(auditKey, head, event);
      sql.insertAudit.run(sealed.seq, sealed.payload, sealed.prevMac, sealed.mac);
      head = { seq: sealed.seq, mac: sealed.mac };
      return { journal: "sqlite", seq: sealed.seq, mac: sealed.mac, at: event.at };
    },
  };
  const readHead = (): { seq: number; mac: string } => {
    const row = sql.head.get() as { seq: number; mac: string } | undefined;
    return row ?? { seq: 0, mac: GENESIS_MAC };
  };

  let queue: QueuedOp[] = [];
  let scheduled = false;
  let closed = false;

  const failure = (cause: unknown): ToolError =>
    ToolError.is(cause)
      ? cause
      : new ToolError("journal_failed", `journal ${path}: ${cause instanceof Error ? cause.message : String(cause)}`, {
          cause,
          retryable: (cause as { code?: string } | null)?.code === "SQLITE_BUSY",
        });

  /**
   * Run a batch in one write transaction. Every op makes its checks before its first write and
   * refuses with a ToolError, so a refusal leaves nothing behind and needs no savepoint. Any other
   * failure (the database's own) rolls the whole batch back, which then runs again with a
   * savepoint per op so that only the failing op fails.
   */
  const runBatch = (batch: readonly QueuedOp[], isolated: boolean): void => {
    const outcomes: ({ ok: true; value: unknown } | { ok: false; error: unknown })[] = [];
    try {
      sql.begin.run();
      head = readHead();
      for (const op of batch) {
        const saved = head;
        if (isolated) sql.savepoint.run();
        try {
          outcomes.push({ ok: true, value: op.run(tx) });
          if (isolated) sql.release.run();
        } catch (error) {
          if (!isolated && !ToolError.is(error)) throw new BatchFailure(error);
          if (isolated) {
            sql.rollbackTo.run();
            sql.release.run();
          }
          head = saved;
          outcomes.push({ ok: false, error });
        }
      }
      sql.commit.run();
    } catch (cause) {
      try {
        if (db.inTransaction) sql.rollback.run();
      } catch {
        // the connection is gone; every op in the batch is rejected below
      }
      if (cause instanceof BatchFailure && batch.length > 1) return runBatch(batch, true);
      const error = failure(cause instanceof BatchFailure ? cause.cause : cause);
      for (const op of batch) op.reject(error);
      return;
    }
    batch.forEach((op, i) => {
      const outcome = outcomes[i]!;
      if (!outcome.ok) op.reject(failure(outcome.error));
      else if (outcome.value instanceof CommittedRefusal) op.reject(outcome.value.error);
      else op.resolve(outcome.value);
    });
  };

  const flush = (): void => {
    scheduled = false;
    while (queue.length > 0) {
      const batch = queue.length <= maxBatch ? queue : queue.slice(0, maxBatch);
      queue = queue.length <= maxBatch ? [] : queue.slice(maxBatch);
      runBatch(batch, false);
    }
  };

  const write = <T>(run: (tx: Tx) => T | CommittedRefusal): Promise<T> => {
    if (closed) return Promise.reject(new ToolError("journal_failed", `journal ${path} is closed`));
    return new Promise<T>((resolve, reject) => {
      queue.push({ run, resolve: resolve as (value: unknown) => void, reject });
      if (!groupCommit) return flush();
      if (!scheduled) {
        scheduled = true;
        setImmediate(flush);
      }
    });
  };

  /** Reads see every write issued before them: behind queued writes they wait their turn. */
  const read = <T>(run: () => T): Promise<T> => {
    if (closed) return Promise.reject(new ToolError("journal_failed", `journal ${path} is closed`));
    if (queue.length > 0) return write(run);
    try {
      return Promise.resolve(run());
    } catch (cause) {
      return Promise.reject(failure(cause));
    }
  };

  // ---- the state changes, each run inside a batch's transaction ----
  const getEntry = (key: string): OutboxEntry | undefined => {
    const row = sql.getEntry.get(key);
    return row ? decodeEntry(row.entry) : undefined;
  };
  const getRequest = (id: string): ApprovalRequest | undefined => {
    const row = sql.getRequest.get(id);
    return row ? decodeRequest(row.request) : undefined;
  };
  const putRequest = (request: ApprovalRequest): void => {
    sql.updateRequest.run(request.status, JSON.stringify(request), request.id);
  };
  const consume = (t: Tx, check: GrantCheck): GrantOutcome => {
    const request = getRequest(check.requestId);
    const verdict = checkGrant(request, check);
    if (!("ok" in verdict)) return verdict;
    const consumed: ApprovalRequest = { ...request!, status: "consumed", consumedAt: check.at, consumedBy: check.invocationId };
    putRequest(consumed);
    return { status: "consumed", request: consumed, receipt: t.append(consumedEvent(consumed, check)) };
  };
  const statesParam = (states: readonly string[] | undefined): string | null => (states === undefined ? null : JSON.stringify(states));
  const limitParam = (limit: number | undefined): number => (limit === undefined ? -1 : Math.max(0, Math.floor(limit)));

  const journal: SqliteJournal = {
    kind: "sqlite",
    path,
    schemaVersion: SQLITE_SCHEMA_VERSION,
    synchronous: (["off", "normal", "full", "extra"] as const)[db.pragma("synchronous", { simple: true }) as number] ?? "off",

    append(event) {
      return write((t) => t.append(event));
    },
    readAudit(opts = {}) {
      return read(() =>
        (sql.readAudit.all(Math.max(0, opts.afterSeq ?? 0), limitParam(opts.limit)) as { seq: number; payload: string; prevMac: string; mac: string }[]).map(
          (row): AuditRecord => unsealAuditEvent(row),
        ),
      );
    },
    head() {
      return read(readHead);
    },

    beginIntent(intent: IntentInput, opts: BeginIntentOptions = {}) {
      return write((t): BeginIntentResult => {
        const existing = getEntry(intent.key);
        if (existing) {
          const retake = opts.retake;
          if (!retake || retake.attempts !== existing.attempts || !retake.states.includes(existing.state)) {
            return { status: "existing", entry: existing };
          }
        }
        let grantId: string | undefined;
        if (opts.grant) {
          const outcome = consume(t, opts.grant);
          if (outcome.status !== "consumed") return { status: "grant_refused", outcome };
          grantId = outcome.request.id;
        }
        const entry = startedEntry(intent, (existing?.attempts ?? 0) + 1, grantId);
        const text = JSON.stringify(entry);
        if (existing) sql.updateEntry.run(entry.state, Date.parse(entry.updatedAt), text, intent.key);
        else sql.insertEntry.run(intent.key, entry.state, Date.parse(entry.updatedAt), text);
        const receipt = t.append(intentEvent(intent, entry.attempts, grantId));
        return { status: "started", entry, receipt };
      });
    },
    settleIntent(key: string, s: Settlement) {
      return write((t) => {
        const entry = getEntry(key);
        if (!entry) throw new ToolError("journal_failed", `no intent recorded under key ${key}`);
        if (entry.intentHash !== s.intentHash) throw new ToolError("journal_failed", `settlement for ${key} is bound to another intent`);
        const settled = settledEntry(entry, s);
        sql.updateEntry.run(settled.state, Date.parse(settled.updatedAt), JSON.stringify(settled), key);
        return t.append(settledEvent(entry, key, s));
      });
    },
    getIntent(key) {
      return read(() => getEntry(key));
    },
    listOutbox(opts = {}) {
      return read(() => sql.listEntries.all({ states: statesParam(opts.states), limit: limitParam(opts.limit) }).map((row) => decodeEntry(row.entry)));
    },
    claimOutbox(opts: ClaimOutboxOptions) {
      return write((t) => {
        const rows = sql.claimable.all(JSON.stringify(opts.states), Date.parse(opts.updatedBefore), limitParam(opts.limit));
        const claimed: OutboxEntry[] = [];
        for (const row of rows) {
          const entry = decodeEntry(row.entry);
          const next: OutboxEntry = { ...entry, attempts: entry.attempts + 1, updatedAt: opts.leaseUntil ?? opts.at };
          sql.updateEntry.run(next.state, Date.parse(next.updatedAt), JSON.stringify(next), next.key);
          claimed.push(next);
          t.append(claimedEvent(entry, opts.claimant, next.attempts, opts.at));
        }
        return claimed;
      });
    },

    requestApproval(input: ApprovalRequestInput) {
      return write((t) => {
        for (const row of sql.pendingFor.all(input.inputHash)) {
          const r = decodeRequest(row.request);
          if (joins(r, input)) return { request: r, created: false, receipt: t.append(requestedEvent(r, input.invocationId, false, input.createdAt)) };
        }
        if (getRequest(input.id)) throw new ToolError("journal_failed", `an approval request with id ${input.id} already exists`);
        const request: ApprovalRequest = { ...input, status: "pending" };
        sql.insertRequest.run(request.id, request.status, request.inputHash, JSON.stringify(request));
        return { request, created: true, receipt: t.append(requestedEvent(request, input.invocationId, true, input.createdAt)) };
      });
    },
    getApproval(id) {
      return read(() => getRequest(id));
    },
    listApprovals(opts: { readonly status?: readonly ApprovalStatus[]; readonly limit?: number } = {}) {
      return read(() => sql.listRequests.all({ states: statesParam(opts.status), limit: limitParam(opts.limit) }).map((row) => decodeRequest(row.request)));
    },
    decideApproval(id: string, decision: ApprovalDecision) {
      return write((t) => {
        const request = getRequest(id);
        if (!request) throw new ToolError("approval_unknown", `no approval request ${id}`);
        if (request.status !== "pending") throw new ToolError("approval_consumed", `approval request ${id} was already ${request.status}`);
        if (Date.parse(request.expiresAt) <= Date.parse(decision.at)) {
          putRequest({ ...request, status: "expired" });
          return new CommittedRefusal(new ToolError("approval_expired", `approval request ${id} expired at ${request.expiresAt}`));
        }
        const decided = decidedRequest(request, decision);
        putRequest(decided);
        return { request: decided, receipt: t.append(decidedEvent(request, id, decision)) };
      });
    },
    consumeGrant(check: GrantCheck, event: AuditEventInput) {
      return write((t) => {
        const outcome = consume(t, check);
        if (outcome.status === "consumed") t.append(event);
        return outcome;
      });
    },

    async close() {
      if (closed) return;
      flush();
      closed = true;
      db.close();
    },
  };
  return journal;
}

