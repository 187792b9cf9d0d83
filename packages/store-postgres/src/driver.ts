import type pg from "pg";
import { ToolError } from "@toolgate/core";
import {
  type JournalDriver,
  type JournalTransaction,
  type ListFilter,
  type StoredEntry,
  type StoredRequest,
  type TransactionReads,
} from "@toolgate/core/store-kit";

export interface PostgresDriverOptions {
  /** The schema holding the journal's tables (created, migrated and checked by the caller). */
  readonly schema: string;
  /** Most calls in one transaction. */
  readonly maxBatch: number;
  /** End the pool on close (it was made for this journal). */
  readonly ownsPool: boolean;
}

interface QueuedOp {
  readonly reads: TransactionReads;
  readonly run: (tx: JournalTransaction) => unknown;
  readonly resolve: (value: unknown) => void;
  readonly reject: (reason: unknown) => void;
}

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
  const { schema, maxBatch } = options;
  const s = `"${schema}"`;
  const q = {
    beginAndLockHead: `BEGIN; SELECT seq, mac FROM ${s}.audit_head WHERE id = 1 FOR UPDATE`,
    head: `SELECT seq, mac FROM ${s}.audit_head WHERE id = 1`,
    readAudit: `SELECT seq, payload, prev_mac, mac FROM ${s}.audit WHERE seq > $1 ORDER BY seq LIMIT $2`,
    fetch: `SELECT 'e' AS kind, key AS id, entry AS body, NULL AS status, NULL AS input_hash, id AS ord FROM ${s}.outbox WHERE key = ANY($1::text[])
      UNION ALL
      SELECT 'r', request_id, request, status, input_hash, id FROM ${s}.approvals WHERE request_id = ANY($2::text[]) OR (status = 'pending' AND input_hash = ANY($3::text[]))
      ORDER BY kind, ord`,
    write: `WITH appended AS (
        INSERT INTO ${s}.audit (seq, payload, prev_mac, mac)
        SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[])
      ), entries AS (
        INSERT INTO ${s}.outbox (key, state, updated_ms, entry)
        SELECT key, state, updated_ms, entry FROM unnest($5::text[], $6::text[], $7::double precision[], $8::text[]) WITH ORDINALITY AS u(key, state, updated_ms, entry, n)
        ORDER BY n
        ON CONFLICT (key) DO UPDATE SET state = EXCLUDED.state, updated_ms = EXCLUDED.updated_ms, entry = EXCLUDED.entry
      ), requests AS (
        INSERT INTO ${s}.approvals (request_id, status, input_hash, request)
        SELECT id, status, input_hash, request FROM unnest($9::text[], $10::text[], $11::text[], $12::text[]) WITH ORDINALITY AS u(id, status, input_hash, request, n)
        ORDER BY n
        ON CONFLICT (request_id) DO UPDATE SET status = EXCLUDED.status, request = EXCLUDED.request
      )
      UPDATE ${s}.audit_head SET seq = $13, mac = $14 WHERE id = 1`,
    getEntry: `SELECT entry FROM ${s}.outbox WHERE key = $1`,
    listEntries: `SELECT entry FROM ${s}.outbox WHERE ($1::text[] IS NULL OR state = ANY($1)) ORDER BY id LIMIT $2`,
    claimable: `SELECT key, entry FROM ${s}.outbox WHERE state = ANY($1) AND updated_ms < $2 ORDER BY id LIMIT $3 FOR UPDATE SKIP LOCKED`,
    getRequest: `SELECT request FROM ${s}.approvals WHERE request_id = $1`,
    listRequests: `SELECT request FROM ${s}.approvals WHERE ($1::text[] IS NULL OR status = ANY($1)) ORDER BY id LIMIT $2`,
  };
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
   * order against those rows, and writes all changes and audit events in one statement: four
   * round trips however many calls it holds. A refusal (a ToolError) changes nothing; a failure of
   * the database rolls the batch back, and its calls then run again one per transaction, so only
   * the failing one fails.
   */
  const runBatch = async (batch: readonly QueuedOp[]): Promise<void> => {
    let client: pg.PoolClient;
    try {
      client = await pool.connect();
    } catch (cause) {
      for (const op of batch) op.reject(failure(cause));
      return;
    }
    let retryAlone = false;
    try {
      for (let attempt = 1; ; attempt++) {
        const outcomes: ({ ok: true; value: unknown } | { ok: false; error: unknown })[] = [];
        try {
          const locked = (await client.query(q.beginAndLockHead)) as unknown as pg.QueryResult<{ seq: string; mac: string }>[];
          const row = locked[1]?.rows[0];
          if (!row) throw new ToolError("journal_failed", `journal schema ${schema} has no audit head`);
          let head = { seq: Number(row.seq), mac: row.mac };

          const declared = { entries: new Set<string>(), requests: new Set<string>(), pending: new Set<string>() };
          for (const { reads } of batch) {
            for (const k of reads.entries ?? []) declared.entries.add(k);
            for (const r of reads.requests ?? []) declared.requests.add(r);
            for (const h of reads.pending ?? []) declared.pending.add(h);
          }
          const entries = new Map<string, string>();
          const requests = new Map<string, StoredRequest>();
          // A claim runs alone in its batch: rows someone else holds are skipped, never waited for,
          // so concurrent claims stay disjoint.
          const claim = batch[0]!.reads.claim;
          const claimed: string[] = [];
          if (claim) {
            const rows = (await client.query<{ key: string; entry: string }>(q.claimable, [claim.states, claim.updatedBeforeMs, claim.limit])).rows;
            for (const r of rows) claimed.push(r.entry);
          }
          if (declared.entries.size + declared.requests.size + declared.pending.size > 0) {
            const fetched = await client.query<{ kind: string; id: string; body: string; status: StoredRequest["status"]; input_hash: string }>(q.fetch, [
              [...declared.entries],
              [...declared.requests],
              [...declared.pending],
            ]);
            for (const r of fetched.rows) {
              if (r.kind === "e") entries.set(r.id, r.body);
              else requests.set(r.id, { id: r.id, status: r.status, inputHash: r.input_hash, text: r.body });
            }
          }
          const dirtyEntries = new Map<string, StoredEntry>();
          const dirtyRequests = new Map<string, StoredRequest>();
          const audit = { seqs: [] as number[], payloads: [] as string[], prevMacs: [] as string[], macs: [] as string[] };
          const check = (set: Set<string>, id: string, what: string): void => {
            if (!set.has(id)) throw new Error(`the journal read ${what} ${id} it did not declare`);
          };
          const tx: JournalTransaction = {
            head: () => head,
            appendAudit(sealed) {
              audit.seqs.push(sealed.seq);
              audit.payloads.push(sealed.payload);
              audit.prevMacs.push(sealed.prevMac);
              audit.macs.push(sealed.mac);
              head = { seq: sealed.seq, mac: sealed.mac };
            },
            getEntry(key) {
              check(declared.entries, key, "outbox entry");
              return entries.get(key);
            },
            putEntry(entry) {
              entries.set(entry.key, entry.text);
              dirtyEntries.set(entry.key, entry);
            },
            claimable() {
              if (!claim) throw new Error("the journal claimed entries it did not declare");
              return claimed;
            },
            getRequest(id) {
              check(declared.requests, id, "approval request");
              return requests.get(id)?.text;
            },
            putRequest(request) {
              requests.set(request.id, request);
              dirtyRequests.set(request.id, request);
            },
            pendingRequests(inputHash) {
              check(declared.pending, inputHash, "pending requests for input");
              return [...requests.values()].filter((r) => r.status === "pending" && r.inputHash === inputHash).map((r) => r.text);
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
          // Rows go out in the order the batch first wrote them, so new rows' ids (and list order)
          // follow creation order.
          const e = [...dirtyEntries.values()];
          const r = [...dirtyRequests.values()];
          if (audit.seqs.length + e.length + r.length > 0) {
            await client.query(q.write, [
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
            ]);
          }
          await client.query("COMMIT");
        } catch (cause) {
          await client.query("ROLLBACK").catch(() => undefined);
          const inner = cause instanceof BatchFailure ? cause.cause : cause;
          const code = (inner as { code?: unknown } | null)?.code;
          if (typeof code === "string" && RETRY_CODES.has(code) && attempt < MAX_ATTEMPTS) continue;
          if (batch.length > 1 && !ToolError.is(inner)) {
            retryAlone = true;
            return;
          }
          for (const op of batch) op.reject(failure(inner));
          return;
        }
        batch.forEach((op, i) => {
          const outcome = outcomes[i]!;
          if (outcome.ok) op.resolve(outcome.value);
          else op.reject(failure(outcome.error));
        });
        return;
      }
    } finally {
      client.release();
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
    try {
      return pick((await pool.query<R>(text, values)).rows);
    } catch (cause) {
      throw failure(cause);
    }
  };
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
      read(q.readAudit, [afterSeq, limit ?? null], (rows: { seq: string; payload: string; prev_mac: string; mac: string }[]) =>
        rows.map((r) => ({ seq: Number(r.seq), payload: r.payload, prevMac: r.prev_mac, mac: r.mac })),
      ),
    getEntry: (key) => read(q.getEntry, [key], (rows: { entry: string }[]) => rows[0]?.entry),
    listEntries: (filter) => read(q.listEntries, list(filter), (rows: { entry: string }[]) => rows.map((r) => r.entry)),
    getRequest: (id) => read(q.getRequest, [id], (rows: { request: string }[]) => rows[0]?.request),
    listRequests: (filter) => read(q.listRequests, list(filter), (rows: { request: string }[]) => rows.map((r) => r.request)),
    async close() {
      await drained;
      if (options.ownsPool) await pool.end();
    },
  };
}
