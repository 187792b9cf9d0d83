import type Database from "better-sqlite3";
import type { Checkpointer } from "./checkpointer.js";
import type { WalSync } from "./wal-sync.js";
import { ToolError } from "@toolgate/core";
import {
  GENESIS_MAC,
  type AuditHead,
  type JournalDriver,
  type JournalTransaction,
  type ListFilter,
  type SealedAuditEvent,
  type StoredRow,
} from "@toolgate/core/store-kit";

export interface SqliteDriverOptions {
  /** Batch the transactions that arrive in the same event-loop turn into one. */
  readonly groupCommit: boolean;
  /** Most transactions in one batch. */
  readonly maxBatch: number;
  /**
   * Syncs the write-ahead log off the event loop (`synchronous: "full"` on a connection at
   * NORMAL): a batch's promises, and a read's, resolve only once what they saw is on disk.
   * Undefined: each commit is as durable as the connection's own level makes it when it returns.
   */
  readonly sync: WalSync | undefined;
  /** Checkpoints in a worker thread (with `sync`); undefined: the connection's own automatic ones. */
  readonly checkpoint: Checkpointer | undefined;
}

/** A failure of the database itself inside a batch run without savepoints. */
class BatchFailure {
  constructor(readonly cause: unknown) {}
}

interface ListParams {
  readonly states: string | null;
  readonly limit: number;
}

/** A row with its subject's latest audit link, as the queries below select it. */
interface RowResult {
  readonly id: string;
  readonly text: string | null;
  readonly seq: number | null;
  readonly prevMac: string | null;
}

const rowOf = (r: RowResult): StoredRow => ({ id: r.id, text: r.text ?? undefined, latest: r.seq === null ? undefined : { seq: r.seq, prevMac: r.prevMac! } });

// The latest link whose subject is the row: one lookup in the audit_subject index per row.
const latestOf = (subject: string): string => `LEFT JOIN audit a ON a.seq = (SELECT max(seq) FROM audit WHERE subject = ${subject})`;
const ENTRY_ROW = `SELECT o.key AS id, o.entry AS text, a.seq AS seq, a.prev_mac AS prevMac FROM outbox o ${latestOf("'entry:' || o.key")}`;
const REQUEST_ROW = `SELECT o.request_id AS id, o.request AS text, a.seq AS seq, a.prev_mac AS prevMac FROM approvals o ${latestOf("'request:' || o.request_id")}`;
const RECORD_ROW = `SELECT o.record_id AS id, o.record AS text, a.seq AS seq, a.prev_mac AS prevMac FROM records o ${latestOf("o.kind || ':' || o.record_id")}`;
// One row by key, whether or not it is stored: its latest link shows a deleted row.
const ONE_ROW = (table: string, idColumn: string, textColumn: string, kind: string): string =>
  `SELECT k.id AS id, (SELECT ${textColumn} FROM ${table} WHERE ${idColumn} = k.id) AS text, a.seq AS seq, a.prev_mac AS prevMac
   FROM (SELECT ? AS id) k ${latestOf(`'${kind}:' || k.id`)}`;

interface QueuedOp {
  readonly run: () => unknown;
  readonly resolve: (value: unknown) => void;
  readonly reject: (reason: unknown) => void;
}

/**
 * The journal's storage in one SQLite file (opened, migrated and checked by the caller). Every
 * batch is one `BEGIN IMMEDIATE` transaction that reads the audit head and appends after it, so
 * several processes on the same file keep one chain.
 */
export function sqliteDriver(db: Database.Database, path: string, options: SqliteDriverOptions): JournalDriver {
  const sql = {
    begin: db.prepare("BEGIN IMMEDIATE"),
    commit: db.prepare("COMMIT"),
    rollback: db.prepare("ROLLBACK"),
    savepoint: db.prepare("SAVEPOINT op"),
    release: db.prepare("RELEASE op"),
    rollbackTo: db.prepare("ROLLBACK TO op"),
    head: db.prepare<[], AuditHead>("SELECT seq, mac FROM audit ORDER BY seq DESC LIMIT 1"),
    insertAudit: db.prepare("INSERT INTO audit (seq, subject, payload, prev_mac, mac) VALUES (?, ?, ?, ?, ?)"),
    readAudit: db.prepare<[number, number], SealedAuditEvent & { subject: string | null }>(
      "SELECT seq, subject, payload, prev_mac AS prevMac, mac FROM audit WHERE seq > ? ORDER BY seq LIMIT ?",
    ),
    getEntry: db.prepare<[string], RowResult>(ONE_ROW("outbox", "key", "entry", "entry")),
    putEntry: db.prepare(
      `INSERT INTO outbox (key, state, updated_ms, entry) VALUES (?, ?, ?, ?)
       ON CONFLICT (key) DO UPDATE SET state = excluded.state, updated_ms = excluded.updated_ms, entry = excluded.entry`,
    ),
    listEntries: db.prepare<[ListParams], RowResult>(
      `${ENTRY_ROW} WHERE @states IS NULL OR o.state IN (SELECT value FROM json_each(@states)) ORDER BY o.id LIMIT @limit`,
    ),
    claimable: db.prepare<[string, number, number], RowResult>(
      `${ENTRY_ROW} WHERE o.state IN (SELECT value FROM json_each(?)) AND o.updated_ms < ? ORDER BY o.id LIMIT ?`,
    ),
    getRequest: db.prepare<[string], RowResult>(ONE_ROW("approvals", "request_id", "request", "request")),
    putRequest: db.prepare(
      `INSERT INTO approvals (request_id, status, input_hash, request) VALUES (?, ?, ?, ?)
       ON CONFLICT (request_id) DO UPDATE SET status = excluded.status, request = excluded.request`,
    ),
    open: db.prepare<[string], RowResult>(`${REQUEST_ROW} WHERE o.status IN ('pending', 'granted') AND o.input_hash = ? ORDER BY o.id`),
    listRequests: db.prepare<[ListParams], RowResult>(
      `${REQUEST_ROW} WHERE @states IS NULL OR o.status IN (SELECT value FROM json_each(@states)) ORDER BY o.id LIMIT @limit`,
    ),
    getRecord: db.prepare<[string, string], RowResult>(
      `SELECT k.id AS id, (SELECT record FROM records WHERE kind = k.kind AND record_id = k.id) AS text, a.seq AS seq, a.prev_mac AS prevMac
       FROM (SELECT ? AS kind, ? AS id) k ${latestOf("k.kind || ':' || k.id")}`,
    ),
    putRecord: db.prepare(
      `INSERT INTO records (kind, record_id, record) VALUES (?, ?, ?) ON CONFLICT (kind, record_id) DO UPDATE SET record = excluded.record`,
    ),
    listRecords: db.prepare<[string], RowResult>(`${RECORD_ROW} WHERE o.kind = ? ORDER BY o.id`),
    recordKinds: db.prepare<[], string>("SELECT DISTINCT kind FROM records ORDER BY kind").pluck(),
  };
  const readHead = (): AuditHead => sql.head.get() ?? { seq: 0, mac: GENESIS_MAC };

  // The head as the running batch left it: read when the batch takes the write lock.
  let head: AuditHead = { seq: 0, mac: GENESIS_MAC };
  const tx: JournalTransaction = {
    head: () => head,
    appendAudit(sealed) {
      sql.insertAudit.run(sealed.seq, sealed.subject ?? null, sealed.payload, sealed.prevMac, sealed.mac);
      head = { seq: sealed.seq, mac: sealed.mac };
    },
    getEntry: (key) => rowOf(sql.getEntry.get(key)!),
    putEntry: (e) => void sql.putEntry.run(e.key, e.state, e.updatedMs, e.text),
    claimable: (c) => sql.claimable.all(JSON.stringify(c.states), c.updatedBeforeMs, c.limit).map(rowOf),
    getRequest: (id) => rowOf(sql.getRequest.get(id)!),
    putRequest: (r) => void sql.putRequest.run(r.id, r.status, r.inputHash, r.text),
    openRequests: (inputHash) => sql.open.all(inputHash).map(rowOf),
    getRecord: (kind, id) => rowOf(sql.getRecord.get(kind, id)!),
    putRecord: (r) => void sql.putRecord.run(r.kind, r.id, r.text),
  };

  let queue: QueuedOp[] = [];
  let scheduled = false;

  const failure = (cause: unknown): ToolError =>
    ToolError.is(cause)
      ? cause
      : new ToolError("journal_failed", `journal ${path}: ${cause instanceof Error ? cause.message : String(cause)}`, {
          cause,
          retryable: (cause as { code?: string } | null)?.code === "SQLITE_BUSY",
        });

  /**
   * Run a batch in one write transaction. A refusal (a ToolError) is thrown before its op's first
   * write, so it needs no savepoint. Any other failure (the database's own) rolls the whole batch
   * back, which then runs again with a savepoint per op so that only the failing op fails. The
   * outcomes are handed out once the commit is on disk (see {@link SqliteDriverOptions.sync}).
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
          outcomes.push({ ok: true, value: op.run() });
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
    const handOut = (): void =>
      batch.forEach((op, i) => {
        const outcome = outcomes[i]!;
        if (outcome.ok) op.resolve(outcome.value);
        else op.reject(failure(outcome.error));
      });
    options.checkpoint?.committed();
    if (options.sync === undefined) return handOut();
    options.sync.committed().then(handOut, (cause: unknown) => {
      const error = notDurable(cause);
      for (const op of batch) op.reject(error);
    });
  };

  /** The commit happened but is not known to be on disk: the caller must not act on it. */
  const notDurable = (cause: unknown): ToolError =>
    new ToolError("journal_failed", `journal ${path}: could not sync the write-ahead log: ${cause instanceof Error ? cause.message : String(cause)}`, {
      cause,
    });

  const flush = (): void => {
    scheduled = false;
    while (queue.length > 0) {
      // No write transaction while the worker checkpoints (see checkpointer.ts): the writes wait for it.
      const checkpoint = options.checkpoint?.running();
      if (checkpoint !== undefined) {
        scheduled = true;
        void checkpoint.then(flush);
        return;
      }
      const batch = queue.length <= options.maxBatch ? queue : queue.slice(0, options.maxBatch);
      queue = queue.length <= options.maxBatch ? [] : queue.slice(options.maxBatch);
      runBatch(batch, false);
    }
  };

  const write = <T>(run: () => T): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      queue.push({ run, resolve: resolve as (value: unknown) => void, reject });
      if (!options.groupCommit) return flush();
      if (!scheduled) {
        scheduled = true;
        setImmediate(flush);
      }
    });

  /**
   * Reads see every write issued before them: behind queued writes they wait their turn. A read
   * that saw a commit not yet on disk answers once it is.
   */
  const read = <T>(run: () => T): Promise<T> => {
    if (queue.length > 0) return write(run);
    let value: T;
    try {
      value = run();
    } catch (cause) {
      return Promise.reject(failure(cause));
    }
    const synced = options.sync?.caughtUp();
    return synced === undefined
      ? Promise.resolve(value)
      : synced.then(
          () => value,
          (cause: unknown) => Promise.reject(notDurable(cause)),
        );
  };
  const list = (filter: ListFilter<string>): ListParams => ({
    states: filter.states === undefined ? null : JSON.stringify(filter.states),
    limit: filter.limit ?? -1,
  });

  return {
    kind: "sqlite",
    transaction: (_reads, fn) => write(() => fn(tx)),
    head: () => read(readHead),
    readAudit: ({ afterSeq, limit }) => read(() => sql.readAudit.all(afterSeq, limit ?? -1).map((r) => ({ ...r, subject: r.subject ?? undefined }))),
    getEntry: (key) => read(() => tx.getEntry(key)),
    listEntries: (filter) => read(() => sql.listEntries.all(list(filter)).map(rowOf)),
    getRequest: (id) => read(() => tx.getRequest(id)),
    listRequests: (filter) => read(() => sql.listRequests.all(list(filter)).map(rowOf)),
    getRecord: (kind, id) => read(() => tx.getRecord(kind, id)),
    listRecords: (kind) => read(() => sql.listRecords.all(kind).map(rowOf)),
    recordKinds: () => read(() => sql.recordKinds.all()),
    async close() {
      for (let checkpoint = options.checkpoint?.running(); checkpoint; checkpoint = options.checkpoint?.running()) await checkpoint;
      flush();
      try {
        await options.sync?.close();
        await options.checkpoint?.close();
      } finally {
        db.close();
      }
    },
  };
}
