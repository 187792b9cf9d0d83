import type pg from "pg";
import type { FetchedRow, PostgresBatchTiming, QueuedOp } from "./batch-types.js";
import { latestOf, pointReads, rowOf, type RowResult } from "./reads.js";
import { execute, prepare, queries, statementName } from "./sql.js";
import { beginWithTimeouts, committed, connectionLost, sessionError, sessionFailed, unknownCommitError, type PostgresTimeouts } from "./session.js";
import { ToolError } from "@toolgate/core";
import {
  type JournalDriver,
  type JournalTransaction,
  type ListFilter,
  type RecordRef,
  type RowEvent,
  type StoredEntry,
  type StoredRecord,
  type StoredRequest,
  type StoredRow,
  type TransactionReads,
} from "@toolgate/core/store-kit";

export interface PostgresDriverOptions {
  /** The schema holding the journal's tables (created, migrated and checked by the caller). */
  readonly schema: string;
  /** Most calls in one transaction. */
  readonly maxBatch: number;
  /** End the pool on close (it was made for this journal). */
  readonly ownsPool: boolean;
  /** Told after each committed batch how long it took (see {@link PostgresBatchTiming}). */
  readonly onBatch?: ((timing: PostgresBatchTiming) => void) | undefined;
  /** The timeouts every transaction that takes the audit head lock runs under (see session.ts). */
  readonly timeouts: PostgresTimeouts;
}

/** Milliseconds since the epoch, to a fraction: comparable with the server's clock_timestamp() on the same machine. */
const wallClock = (): number => performance.timeOrigin + performance.now();

/**
 * The statements prepared on each connection, by name. Names come from the statement's text, so
 * journals sharing a pool (and a schema) share them.
 */
const prepared = new WeakMap<pg.PoolClient, Set<string>>();

/** A failure of the database itself inside a batch. */
class BatchFailure {
  constructor(readonly cause: unknown) {}
}

// deadlock_detected, serialization_failure: the transaction did nothing; run it again.
const RETRY_CODES = new Set(["40P01", "40001"]);
const MAX_ATTEMPTS = 5;

/**
 * The journal's storage in one PostgreSQL schema. Many workers on many machines may share it:
 * every transaction locks the single audit head row first, so the chain stays one chain.
 */
export function postgresDriver(pool: pg.Pool, options: PostgresDriverOptions): JournalDriver {
  const { schema, maxBatch, timeouts } = options;
  const q = queries(schema);
  const failure = (cause: unknown): ToolError =>
    ToolError.is(cause)
      ? cause
      : new ToolError("journal_failed", `journal schema ${schema}: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });

  // ---- the write queue: a batch of calls per transaction, each resolved after its commit ----
  let queue: QueuedOp[] = [];
  let draining = false;
  let drained: Promise<void> = Promise.resolve();

  /**
   * Run a batch in one transaction that first locks the audit head row. Writers on every pool and
   * machine take their turn there, so the chain has one order and the rows a batch read cannot
   * change under it. The batch reads every row its calls declared in one query, runs the calls in
   * order against those rows, and writes all changes and audit events in one statement: two
   * round trips however many calls it holds (lock and read, write and commit), so the lock is held
   * for half the first, the run here, the second and the commit's fsync. A refusal (a ToolError) changes nothing; a failure of
   * the database rolls the batch back, and its calls then run again one per transaction, so only
   * the failing one fails.
   */
  const runBatch = async (batch: readonly QueuedOp[]): Promise<void> => {
    let client: pg.PoolClient;
    try {
      client = await pool.connect();
    } catch (cause) {
      for (const op of batch) op.reject(sessionFailed(cause) ? sessionError(schema, cause) : failure(cause));
      return;
    }
    // A connection that fails while checked out (the server ended the session, restarted, or the
    // socket broke) says so here, never as an unhandled 'error' event; it is then dropped, not reused.
    let broken: unknown;
    const onLost = (cause: unknown): void => void (broken ??= cause);
    client.on("error", onLost);
    // Each connection prepares the batch's statements once, before it first takes the lock; one
    // that cannot is dropped, not reused.
    const names = prepared.get(client) ?? new Set<string>();
    const missing = [q.claimable, q.fetch, q.write].filter((text) => !names.has(statementName(text)));
    if (missing.length > 0) {
      try {
        await client.query(missing.map(prepare).join(";\n"));
        for (const text of missing) names.add(statementName(text));
        prepared.set(client, names);
      } catch (cause) {
        client.off("error", onLost);
        client.release(cause instanceof Error ? cause : new Error(String(cause)));
        for (const op of batch) op.reject(sessionFailed(cause) ? sessionError(schema, cause) : failure(cause));
        return;
      }
    }
    let retryAlone = false;
    try {
      const declared = { entries: new Set<string>(), requests: new Set<string>(), open: new Set<string>(), records: new Map<string, RecordRef>() };
      for (const { reads } of batch) {
        for (const k of reads.entries ?? []) declared.entries.add(k);
        for (const r of reads.requests ?? []) declared.requests.add(r);
        for (const h of reads.open ?? []) declared.open.add(h);
        for (const c of reads.records ?? []) declared.records.set(`${c.kind}:${c.id}`, c);
      }
      // A claim runs alone in its batch: rows someone else holds are skipped, never waited for,
      // so concurrent claims stay disjoint.
      const claim = batch[0]!.reads.claim;
      const refs = [...declared.records.values()];
      const fetching = declared.entries.size + declared.requests.size + declared.open.size + declared.records.size > 0;
      // One round trip takes the lock and reads the rows: each statement of a simple query takes
      // its own snapshot, so the reads after the lock see every batch committed before it.
      // BEGIN and the timeouts come first, so the wait for the lock runs under them too.
      const lockAndRead = [
        ...beginWithTimeouts(timeouts),
        q.lockHead,
        q.lockedAt,
        ...(claim ? [execute(q.claimable, [claim.states, claim.updatedBeforeMs, claim.limit])] : []),
        ...(fetching
          ? [execute(q.fetch, [[...declared.entries], [...declared.requests], [...declared.open], refs.map((c) => c.kind), refs.map((c) => c.id)])]
          : []),
      ].join(";\n");
      const asked = wallClock();
      let locked = asked;
      let fetched = asked;
      let ran = asked;
      let done = asked;
      for (let attempt = 1; ; attempt++) {
        const outcomes: ({ ok: true; value: unknown } | { ok: false; error: unknown })[] = [];
        // Set once the write and COMMIT are sent: a connection lost after that may have committed.
        let committing = false;
        let xid: string | undefined;
        let sent: { seq: number; mac: string } | null | undefined; // null: nothing written
        try {
          const results = (await client.query(lockAndRead)) as unknown as pg.QueryResult[];
          fetched = wallClock();
          const row = (results[3]?.rows as { seq: string; mac: string }[] | undefined)?.[0];
          if (!row) throw new ToolError("journal_failed", `journal schema ${schema} has no audit head`);
          ({ at: locked, xid } = results[4]!.rows[0] as { at: number; xid: string });
          locked = Number(locked);
          let head = { seq: Number(row.seq), mac: row.mac };

          const entries = new Map<string, string>();
          const requests = new Map<string, StoredRequest>();
          const records = new Map<string, string>();
          // Each row's latest link, as fetched and as this batch's appends move it.
          const latestLinks = new Map<string, RowEvent>();
          const seen = (subject: string, event: RowEvent | undefined): void => void (event && latestLinks.set(subject, event));
          const claimed: string[] = [];
          for (const r of claim ? (results[5]!.rows as RowResult[]) : []) {
            claimed.push(r.id);
            entries.set(r.id, r.text!);
            seen(`entry:${r.id}`, latestOf(r));
          }
          for (const r of fetching ? (results.at(-1)!.rows as FetchedRow[]) : []) {
            if (r.kind === "c") {
              if (r.body !== null) records.set(r.id, r.body);
              seen(r.id, latestOf(r));
            } else if (r.kind === "e") {
              if (r.body !== null) entries.set(r.id, r.body);
              seen(`entry:${r.id}`, latestOf(r));
            } else {
              if (r.kind === "r") requests.set(r.id, { id: r.id, status: r.status, inputHash: r.input_hash, text: r.body! });
              seen(`request:${r.id}`, latestOf(r));
            }
          }
          const entryRow = (key: string): StoredRow => ({ id: key, text: entries.get(key), latest: latestLinks.get(`entry:${key}`) });
          const requestRow = (id: string): StoredRow => ({ id, text: requests.get(id)?.text, latest: latestLinks.get(`request:${id}`) });
          const dirtyEntries = new Map<string, StoredEntry>();
          const dirtyRequests = new Map<string, StoredRequest>();
          const dirtyRecords = new Map<string, StoredRecord>();
          const audit = { seqs: [] as number[], subjects: [] as (string | null)[], payloads: [] as string[], prevMacs: [] as string[], macs: [] as string[] };
          const check = (set: Set<string>, id: string, what: string): void => {
            if (!set.has(id)) throw new Error(`the journal read ${what} ${id} it did not declare`);
          };
          const tx: JournalTransaction = {
            head: () => head,
            appendAudit(sealed) {
              audit.seqs.push(sealed.seq);
              audit.subjects.push(sealed.subject ?? null);
              if (sealed.subject !== undefined) latestLinks.set(sealed.subject, { seq: sealed.seq, prevMac: sealed.prevMac });
              audit.payloads.push(sealed.payload);
              audit.prevMacs.push(sealed.prevMac);
              audit.macs.push(sealed.mac);
              head = { seq: sealed.seq, mac: sealed.mac };
            },
            getEntry(key) {
              check(declared.entries, key, "outbox entry");
              return entryRow(key);
            },
            putEntry(entry) {
              entries.set(entry.key, entry.text);
              dirtyEntries.set(entry.key, entry);
            },
            claimable() {
              if (!claim) throw new Error("the journal claimed entries it did not declare");
              return claimed.map(entryRow);
            },
            getRequest(id) {
              check(declared.requests, id, "approval request");
              return requestRow(id);
            },
            putRequest(request) {
              requests.set(request.id, request);
              dirtyRequests.set(request.id, request);
            },
            openRequests(inputHash) {
              check(declared.open, inputHash, "open requests for input");
              const open = (r: StoredRequest) => (r.status === "pending" || r.status === "granted") && r.inputHash === inputHash;
              return [...requests.values()].filter(open).map((r) => requestRow(r.id));
            },
            getRecord(kind, id) {
              const subject = `${kind}:${id}`;
              if (!declared.records.has(subject)) throw new Error(`the journal read record ${subject} it did not declare`);
              return { id, text: records.get(subject), latest: latestLinks.get(subject) };
            },
            putRecord(record) {
              records.set(`${record.kind}:${record.id}`, record.text);
              dirtyRecords.set(`${record.kind}:${record.id}`, record);
            },
          };
          for (const op of batch) {
            const mark = { head, events: audit.seqs.length };
            try {
              outcomes.push({ ok: true, value: op.run(tx) });
            } catch (error) {
              if (!ToolError.is(error)) throw new BatchFailure(error);
              head = mark.head;
              for (const list of Object.values(audit)) list.length = mark.events;
              outcomes.push({ ok: false, error });
            }
          }
          ran = wallClock();
          // Rows go out in the order the batch first wrote them, so new rows' ids (and list order)
          // follow creation order.
          const e = [...dirtyEntries.values()];
          const r = [...dirtyRequests.values()];
          const c = [...dirtyRecords.values()];
          // One round trip writes and commits (the commit returns after its fsync).
          const writing = audit.seqs.length + e.length + r.length + c.length > 0;
          committing = true;
          sent = audit.seqs.length > 0 ? { seq: audit.seqs[0]!, mac: audit.macs[0]! } : writing ? undefined : null;
          await client.query(
            writing
              ? `${execute(q.write, [
                  audit.seqs,
                  audit.payloads,
                  audit.prevMacs,
                  audit.macs,
                  e.map((x) => x.key),
                  e.map((x) => x.state),
                  e.map((x) => x.updatedMs),
                  e.map((x) => x.text),
                  r.map((x) => x.id),
                  r.map((x) => x.status),
                  r.map((x) => x.inputHash),
                  r.map((x) => x.text),
                  head.seq,
                  head.mac,
                  audit.subjects,
                  c.map((x) => x.kind),
                  c.map((x) => x.id),
                  c.map((x) => x.text),
                ])};\nCOMMIT`
              : "COMMIT",
          );
          done = wallClock();
        } catch (cause) {
          const inner = cause instanceof BatchFailure ? cause.cause : cause;
          // The session timed out or its connection failed: nothing the calls did was wrong.
          const session = !(cause instanceof BatchFailure) && !ToolError.is(inner) && (broken !== undefined || sessionFailed(inner));
          if (session && (broken !== undefined || connectionLost(inner))) broken ??= inner;
          if (broken === undefined) await client.query("ROLLBACK").catch(() => undefined);
          let outcome: boolean | undefined = false;
          // A batch that wrote nothing has nothing to lose; one that did is found by its first link.
          if (broken !== undefined && committing) {
            outcome = sent === null ? true : sent && (await committed(pool, { xid: xid!, linkQuery: q.link, ...sent }, timeouts.commitOutcomeTimeoutMs));
          }
          if (outcome === undefined) {
            for (const op of batch) op.reject(unknownCommitError(schema, inner, timeouts.commitOutcomeTimeoutMs));
            return;
          }
          if (!outcome) {
            if (session) {
              for (const op of batch) op.reject(sessionError(schema, inner));
              return;
            }
            const code = (inner as { code?: unknown } | null)?.code;
            // invalid_sql_statement_name: the session lost its prepared statements; prepare again next time.
            if (code === "26000") prepared.delete(client);
            if (typeof code === "string" && RETRY_CODES.has(code) && attempt < MAX_ATTEMPTS) continue;
            if (batch.length > 1 && !ToolError.is(inner)) {
              retryAlone = true;
              return;
            }
            for (const op of batch) op.reject(failure(inner));
            return;
          }
          // The connection was lost during the commit, and the server says it committed.
          done = wallClock();
        }
        batch.forEach((op, i) => {
          const outcome = outcomes[i]!;
          if (outcome.ok) op.resolve(outcome.value);
          else op.reject(failure(outcome.error));
        });
        // Clamped: the two clocks are one machine's, but ours is read through a monotonic offset.
        const since = (from: number, to: number): number => Math.max(0, to - from);
        // A metrics hook: whatever it throws is its own, never the batch's.
        try {
          options.onBatch?.({
            calls: batch.length,
            attempts: attempt,
            lockMs: since(asked, locked),
            fetchMs: since(locked, fetched),
            runMs: since(fetched, ran),
            commitMs: since(ran, done),
          });
        } catch {
          // ignored: the batch committed and its calls are resolved
        }
        return;
      }
    } finally {
      client.off("error", onLost);
      client.release(broken === undefined ? undefined : broken instanceof Error ? broken : new Error(String(broken)));
      if (retryAlone) for (const op of batch) await runBatch([op]);
    }
  };

  const drain = async (): Promise<void> => {
    draining = true;
    try {
      while (queue.length > 0) {
        // Calls made in the same turn of the event loop join the batch.
        await new Promise((resolve) => setImmediate(resolve));
        // A claim takes a batch of its own.
        let size = 0;
        while (size < queue.length && size < maxBatch && !(size > 0 && queue[size]!.reads.claim) && !queue[size - 1]?.reads.claim) size++;
        const batch = queue.slice(0, size);
        queue = queue.slice(size);
        await runBatch(batch);
      }
    } finally {
      draining = false;
    }
  };

  const read = async <R extends pg.QueryResultRow, T>(text: string, values: unknown[], pick: (rows: R[]) => T): Promise<T> => {
    let rows: R[];
    try {
      rows = (await pool.query<R>({ name: statementName(text), text, values })).rows;
    } catch (cause) {
      throw sessionFailed(cause) ? sessionError(schema, cause) : failure(cause);
    }
    try {
      return pick(rows);
    } catch (cause) {
      throw failure(cause);
    }
  };
  const records = pointReads(read, q.getRecords);
  const list = (filter: ListFilter<string>): unknown[] => [filter.states ?? null, filter.limit ?? null];

  return {
    kind: "postgres",
    transaction: (reads, fn) =>
      new Promise((resolve, reject) => {
        queue.push({ reads, run: fn, resolve: resolve as (value: unknown) => void, reject });
        if (!draining) drained = drain();
      }),
    head: () => read(q.head, [], (rows: { seq: string; mac: string }[]) => ({ seq: Number(rows[0]!.seq), mac: rows[0]!.mac })),
    readAudit: ({ afterSeq, limit }) =>
      read(q.readAudit, [afterSeq, limit ?? null], (rows: { seq: string; subject: string | null; payload: string; prev_mac: string; mac: string }[]) =>
        rows.map((r) => ({ seq: Number(r.seq), subject: r.subject ?? undefined, payload: r.payload, prevMac: r.prev_mac, mac: r.mac })),
      ),
    getEntry: (key) => read(q.getEntry, [key], (rows: RowResult[]) => rowOf(rows[0]!)),
    listEntries: (filter) => read(q.listEntries, list(filter), (rows: RowResult[]) => rows.map(rowOf)),
    getRequest: (id) => read(q.getRequest, [id], (rows: RowResult[]) => rowOf(rows[0]!)),
    listRequests: (filter) => read(q.listRequests, list(filter), (rows: RowResult[]) => rows.map(rowOf)),
    getRecord: (kind, id) => records.get(kind, id),
    listRecords: (kind) => read(q.listRecords, [kind], (rows: RowResult[]) => rows.map(rowOf)),
    recordKinds: () => read(q.recordKinds, [], (rows: { kind: string }[]) => rows.map((r) => r.kind)),
    async close() {
      await drained;
      if (options.ownsPool) await pool.end();
    },
  };
}
