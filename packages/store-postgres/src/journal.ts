import pg from "pg";
import {
  checkGrant,
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
import { migrate, POSTGRES_SCHEMA_VERSION, SCHEMA_NAME } from "./schema.js";

export interface PostgresJournalOptions {
  /** HMAC key for the audit chain. Every worker on the same schema must use the same one. */
  readonly auditKey: AuditKey;
  /** The schema holding the journal's tables (default `toolgate`); created when missing. */
  readonly schema?: string;
  /** Pool size when connecting by URL (default 10). A pool you pass in is used as it is. */
  readonly poolSize?: number;
  /** Most calls in one transaction (default 256). */
  readonly maxBatch?: number;
}

export interface PostgresJournal extends Journal {
  readonly kind: "postgres";
  readonly schema: string;
  readonly schemaVersion: number;
}

/**
 * What a call sees inside its batch's transaction: the rows it declared it needs, as the calls
 * before it in the batch left them, and the audit chain from the locked head.
 */
interface BatchState {
  entry(key: string): OutboxEntry | undefined;
  putEntry(entry: OutboxEntry): void;
  request(id: string): ApprovalRequest | undefined;
  putRequest(request: ApprovalRequest): void;
  /** Pending requests with this input hash, oldest first. */
  pendingFor(inputHash: string): ApprovalRequest[];
  emit(event: AuditEventInput): JournalReceipt;
}

/** The rows a call reads, fetched for the whole batch in one query after the head is locked. */
interface Needs {
  readonly keys?: readonly string[];
  readonly requests?: readonly string[];
  readonly pendingHashes?: readonly string[];
}

interface QueuedOp {
  readonly needs: Needs;
  /** Checks first, then writes: a refusal thrown as a ToolError has changed nothing. */
  readonly run: (state: BatchState, client: pg.PoolClient) => unknown;
  /** Runs alone in its transaction, with the client (a claim's `FOR UPDATE SKIP LOCKED`). */
  readonly alone?: (client: pg.PoolClient) => Promise<Needs>;
  readonly resolve: (value: unknown) => void;
  readonly reject: (reason: unknown) => void;
}

/** Commit the transaction, then reject with `error`. */
class CommittedRefusal {
  constructor(readonly error: Error) {}
}

/** A failure of the database itself inside a batch. */
class BatchFailure {
  constructor(readonly cause: unknown) {}
}

// deadlock_detected, serialization_failure: the transaction did nothing; run it again.
const RETRY_CODES = new Set(["40P01", "40001"]);
const MAX_ATTEMPTS = 5;

/**
 * Connect a journal to PostgreSQL (creating or migrating its schema when needed). Many workers on
 * many machines may share one schema: every change is one transaction that appends its audit
 * events after locking the single head row, so the chain stays one chain.
 */
export async function connectPostgresJournal(target: string | pg.Pool, options: PostgresJournalOptions): Promise<PostgresJournal> {
  const schema = options.schema ?? "toolgate";
  if (!SCHEMA_NAME.test(schema)) throw new TypeError(`schema must match ${String(SCHEMA_NAME)}, not ${JSON.stringify(schema)}`);
  const auditKey = options.auditKey;
  if (auditKey === undefined || auditKey.length === 0) throw new TypeError("connectPostgresJournal needs the audit key");
  const maxBatch = Math.max(1, options.maxBatch ?? 256);
  const ownsPool = typeof target === "string";
  const pool = typeof target === "string" ? new pg.Pool({ connectionString: target, max: options.poolSize ?? 10 }) : target;
  // An idle client's connection dropping must not crash the process; the next query reports it.
  if (ownsPool) pool.on("error", () => undefined);

  try {
    const client = await pool.connect();
    try {
      await migrate(client, schema, auditKeyCheck(auditKey));
    } finally {
      client.release();
    }
  } catch (cause) {
    if (ownsPool) await pool.end().catch(() => undefined);
    throw ToolError.is(cause) ? cause : new ToolError("journal_failed", `could not open journal schema ${schema}: ${messageOf(cause)}`, { cause });
  }

  const s = `"${schema}"`;
  const q = {
    beginAndLockHead: `BEGIN; SELECT seq, mac FROM ${s}.audit_head WHERE id = 1 FOR UPDATE`,
    head: `SELECT seq, mac FROM ${s}.audit_head WHERE id = 1`,
    readAudit: `SELECT seq, payload, prev_mac, mac FROM ${s}.audit WHERE seq > $1 ORDER BY seq LIMIT $2`,
    fetch: `SELECT 'e' AS kind, key AS id, entry AS body, id AS ord FROM ${s}.outbox WHERE key = ANY($1::text[])
      UNION ALL
      SELECT 'r', request_id, request, id FROM ${s}.approvals WHERE request_id = ANY($2::text[]) OR (status = 'pending' AND input_hash = ANY($3::text[]))
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
    claimable: `SELECT key FROM ${s}.outbox WHERE state = ANY($1) AND updated_ms < $2 ORDER BY id LIMIT $3 FOR UPDATE SKIP LOCKED`,
    getRequest: `SELECT request FROM ${s}.approvals WHERE request_id = $1`,
    listRequests: `SELECT request FROM ${s}.approvals WHERE ($1::text[] IS NULL OR status = ANY($1)) ORDER BY id LIMIT $2`,
  };

  let closed = false;
  const ensureOpen = (): void => {
    if (closed) throw new ToolError("journal_failed", `journal schema ${schema} is closed`);
  };
  const failure = (cause: unknown): ToolError =>
    ToolError.is(cause) ? cause : new ToolError("journal_failed", `journal schema ${schema}: ${messageOf(cause)}`, { cause });

  // ---- the write queue: a batch of calls per transaction, each resolved after its commit ----
  let queue: QueuedOp[] = [];
  let draining = false;
  let drained: Promise<void> = Promise.resolve();

  /**
   * Run a batch in one transaction that first locks the audit head row. Writers on every pool and
   * machine take their turn there, so the chain has one order and the rows a batch read cannot
   * change under it. The batch reads every row its calls need in one query, runs the calls in
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

          const needs = { keys: new Set<string>(), requests: new Set<string>(), pendingHashes: new Set<string>() };
          const extra: Needs[] = [];
          for (const op of batch) if (op.alone) extra.push(await op.alone(client));
          for (const need of [...batch.map((op) => op.needs), ...extra]) {
            for (const k of need.keys ?? []) needs.keys.add(k);
            for (const r of need.requests ?? []) needs.requests.add(r);
            for (const h of need.pendingHashes ?? []) needs.pendingHashes.add(h);
          }
          const entries = new Map<string, OutboxEntry>();
          const requests = new Map<string, ApprovalRequest>();
          if (needs.keys.size + needs.requests.size + needs.pendingHashes.size > 0) {
            const fetched = await client.query<{ kind: string; id: string; body: string }>(q.fetch, [[...needs.keys], [...needs.requests], [...needs.pendingHashes]]);
            for (const r of fetched.rows) {
              if (r.kind === "e") entries.set(r.id, decodeEntry(r.body));
              else requests.set(r.id, decodeRequest(r.body));
            }
          }
          const dirtyEntries = new Map<string, OutboxEntry>();
          const dirtyRequests = new Map<string, ApprovalRequest>();
          const audit = { seqs: [] as number[], payloads: [] as string[], prevMacs: [] as string[], macs: [] as string[] };
          const state: BatchState = {
            entry: (key) => entries.get(key),
            putEntry(entry) {
              entries.set(entry.key, entry);
              dirtyEntries.set(entry.key, entry);
            },
            request: (id) => requests.get(id),
            putRequest(request) {
              requests.set(request.id, request);
              dirtyRequests.set(request.id, request);
            },
            pendingFor: (inputHash) => [...requests.values()].filter((r) => r.status === "pending" && r.inputHash === inputHash),
            emit(event) {
              const sealed = sealAuditEvent(auditKey, head, event);
              audit.seqs.push(sealed.seq);
              audit.payloads.push(sealed.payload);
              audit.prevMacs.push(sealed.prevMac);
              audit.macs.push(sealed.mac);
              head = { seq: sealed.seq, mac: sealed.mac };
              return { journal: "postgres", seq: sealed.seq, mac: sealed.mac, at: event.at };
            },
          };
          for (const op of batch) {
            const mark = { head, events: audit.seqs.length };
            try {
              outcomes.push({ ok: true, value: op.run(state, client) });
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
              audit.seqs, audit.payloads, audit.prevMacs, audit.macs,
              e.map((x) => x.key), e.map((x) => x.state), e.map((x) => Date.parse(x.updatedAt)), e.map((x) => JSON.stringify(x)),
              r.map((x) => x.id), r.map((x) => x.status), r.map((x) => x.inputHash), r.map((x) => JSON.stringify(x)),
              head.seq, head.mac,
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
          if (!outcome.ok) op.reject(failure(outcome.error));
          else if (outcome.value instanceof CommittedRefusal) op.reject(outcome.value.error);
          else op.resolve(outcome.value);
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
        // A call that runs alone takes a batch of its own.
        let size = 0;
        while (size < queue.length && size < maxBatch && !(size > 0 && queue[size]!.alone) && !queue[size - 1]?.alone) size++;
        const batch = queue.slice(0, size);
        queue = queue.slice(size);
        await runBatch(batch);
      }
    } finally {
      draining = false;
    }
  };

  const write = <T>(needs: Needs, run: (state: BatchState) => T | CommittedRefusal, alone?: (client: pg.PoolClient) => Promise<Needs>): Promise<T> => {
    if (closed) return Promise.reject(new ToolError("journal_failed", `journal schema ${schema} is closed`));
    return new Promise<T>((resolve, reject) => {
      queue.push({ needs, run, ...(alone ? { alone } : {}), resolve: resolve as (value: unknown) => void, reject });
      if (!draining) drained = drain();
    });
  };

  const read = async <T>(fn: () => Promise<T>): Promise<T> => {
    ensureOpen();
    try {
      return await fn();
    } catch (cause) {
      throw failure(cause);
    }
  };

  const consume = (state: BatchState, check: GrantCheck): GrantOutcome => {
    const request = state.request(check.requestId);
    const verdict = checkGrant(request, check);
    if (!("ok" in verdict)) return verdict;
    const consumed: ApprovalRequest = { ...request!, status: "consumed", consumedAt: check.at, consumedBy: check.invocationId };
    state.putRequest(consumed);
    return { status: "consumed", request: consumed, receipt: state.emit(consumedEvent(consumed, check)) };
  };
  const limitParam = (limit: number | undefined): number | null => (limit === undefined ? null : Math.max(0, Math.floor(limit)));

  const journal: PostgresJournal = {
    kind: "postgres",
    schema,
    schemaVersion: POSTGRES_SCHEMA_VERSION,

    append(event) {
      return write({}, (state) => state.emit(event));
    },
    readAudit(opts = {}) {
      return read(async () => {
        const rows = (await pool.query<{ seq: string; payload: string; prev_mac: string; mac: string }>(q.readAudit, [Math.max(0, opts.afterSeq ?? 0), limitParam(opts.limit)])).rows;
        return rows.map((r) => unsealAuditEvent({ seq: Number(r.seq), payload: r.payload, prevMac: r.prev_mac, mac: r.mac }));
      });
    },
    head() {
      return read(async () => {
        const row = (await pool.query<{ seq: string; mac: string }>(q.head)).rows[0]!;
        return { seq: Number(row.seq), mac: row.mac };
      });
    },

    beginIntent(intent: IntentInput, opts: BeginIntentOptions = {}) {
      const needs = { keys: [intent.key], ...(opts.grant ? { requests: [opts.grant.requestId] } : {}) };
      return write(needs, (state): BeginIntentResult => {
        const existing = state.entry(intent.key);
        if (existing) {
          const retake = opts.retake;
          if (!retake || retake.attempts !== existing.attempts || !retake.states.includes(existing.state)) {
            return { status: "existing", entry: existing };
          }
        }
        let grantId: string | undefined;
        if (opts.grant) {
          const outcome = consume(state, opts.grant);
          if (outcome.status !== "consumed") return { status: "grant_refused", outcome };
          grantId = outcome.request.id;
        }
        const entry = startedEntry(intent, (existing?.attempts ?? 0) + 1, grantId);
        state.putEntry(entry);
        const receipt = state.emit(intentEvent(intent, entry.attempts, grantId));
        return { status: "started", entry, receipt };
      });
    },
    settleIntent(key: string, st: Settlement) {
      return write({ keys: [key] }, (state) => {
        const entry = state.entry(key);
        if (!entry) throw new ToolError("journal_failed", `no intent recorded under key ${key}`);
        if (entry.intentHash !== st.intentHash) throw new ToolError("journal_failed", `settlement for ${key} is bound to another intent`);
        state.putEntry(settledEntry(entry, st));
        return state.emit(settledEvent(entry, key, st));
      });
    },
    getIntent(key) {
      return read(async () => {
        const row = (await pool.query<{ entry: string }>(q.getEntry, [key])).rows[0];
        return row ? decodeEntry(row.entry) : undefined;
      });
    },
    listOutbox(opts = {}) {
      return read(async () => {
        const rows = (await pool.query<{ entry: string }>(q.listEntries, [opts.states ?? null, limitParam(opts.limit)])).rows;
        return rows.map((r) => decodeEntry(r.entry));
      });
    },
    claimOutbox(opts: ClaimOutboxOptions) {
      let keys: string[] = [];
      return write(
        {},
        (state) =>
          keys.map((key) => {
            const entry = state.entry(key)!;
            const next: OutboxEntry = { ...entry, attempts: entry.attempts + 1, updatedAt: opts.leaseUntil ?? opts.at };
            state.putEntry(next);
            state.emit(claimedEvent(entry, opts.claimant, next.attempts, opts.at));
            return next;
          }),
        async (client) => {
          // Rows someone else holds are skipped, never waited for: concurrent claims stay disjoint.
          const rows = (await client.query<{ key: string }>(q.claimable, [opts.states, Date.parse(opts.updatedBefore), limitParam(opts.limit)])).rows;
          keys = rows.map((r) => r.key);
          return { keys };
        },
      );
    },

    requestApproval(input: ApprovalRequestInput) {
      return write({ requests: [input.id], pendingHashes: [input.inputHash] }, (state) => {
        for (const r of state.pendingFor(input.inputHash)) {
          if (joins(r, input)) return { request: r, created: false, receipt: state.emit(requestedEvent(r, input.invocationId, false, input.createdAt)) };
        }
        if (state.request(input.id)) throw new ToolError("journal_failed", `an approval request with id ${input.id} already exists`);
        const request: ApprovalRequest = { ...input, status: "pending" };
        state.putRequest(request);
        return { request, created: true, receipt: state.emit(requestedEvent(request, input.invocationId, true, input.createdAt)) };
      });
    },
    getApproval(id) {
      return read(async () => {
        const row = (await pool.query<{ request: string }>(q.getRequest, [id])).rows[0];
        return row ? decodeRequest(row.request) : undefined;
      });
    },
    listApprovals(opts: { readonly status?: readonly ApprovalStatus[]; readonly limit?: number } = {}) {
      return read(async () => {
        const rows = (await pool.query<{ request: string }>(q.listRequests, [opts.status ?? null, limitParam(opts.limit)])).rows;
        return rows.map((r) => decodeRequest(r.request));
      });
    },
    decideApproval(id: string, decision: ApprovalDecision) {
      return write({ requests: [id] }, (state) => {
        const request = state.request(id);
        if (!request) throw new ToolError("approval_unknown", `no approval request ${id}`);
        if (request.status !== "pending") throw new ToolError("approval_consumed", `approval request ${id} was already ${request.status}`);
        if (Date.parse(request.expiresAt) <= Date.parse(decision.at)) {
          state.putRequest({ ...request, status: "expired" });
          return new CommittedRefusal(new ToolError("approval_expired", `approval request ${id} expired at ${request.expiresAt}`));
        }
        const decided = decidedRequest(request, decision);
        state.putRequest(decided);
        return { request: decided, receipt: state.emit(decidedEvent(request, id, decision)) };
      });
    },
    consumeGrant(check: GrantCheck, event: AuditEventInput) {
      return write({ requests: [check.requestId] }, (state) => {
        const outcome = consume(state, check);
        if (outcome.status === "consumed") state.emit(event);
        return outcome;
      });
    },

    async close() {
      if (closed) return;
      closed = true;
      await drained;
      if (ownsPool) await pool.end();
    },
  };
  return journal;
}

function messageOf(cause: unknown): string {
  return cause instanceof Error ? cause.message : String(cause);
}
