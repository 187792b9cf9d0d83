import pg from "pg";
import { ToolError, type Journal } from "@toolgate/core";
import { type AuditKey } from "@toolgate/core/operator";
import { auditKeyCheck, createJournal } from "@toolgate/core/store-kit";
import type { PostgresBatchTiming } from "./batch-types.js";
import { postgresDriver } from "./driver.js";
import { timeoutsOf, type PostgresTimeouts } from "./session.js";
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
  /**
   * Keep the output body of reads in the outbox (default false: a read keeps its output hash,
   * not its output). Side-effectful results always keep theirs. See `CreateJournalOptions`.
   */
  readonly retainReadOutputs?: boolean;
  /**
   * Told after each committed batch how many calls it held and how long it waited for and held
   * the audit head row lock (for load tests and metrics; it must not throw).
   */
  readonly onBatch?: (timing: PostgresBatchTiming) => void;
  /**
   * Every transaction that takes the audit head lock sets these itself (`SET LOCAL`), so a writer
   * that stalls holding the lock loses it: `statementTimeoutMs` (default 15 000, the wait for the
   * lock included), `idleInTransactionTimeoutMs` (default 5 000; below the statement timeout) and
   * `commitOutcomeTimeoutMs` (default 30 000: how long a batch whose connection was lost during
   * its commit asks the server whether it committed). Whole milliseconds from 1.
   */
  readonly timeouts?: Partial<PostgresTimeouts>;
}

export interface PostgresJournal extends Journal {
  readonly kind: "postgres";
  readonly schema: string;
  readonly schemaVersion: number;
}

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
  const timeouts = timeoutsOf(options.timeouts ?? {});
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
    throw ToolError.is(cause)
      ? cause
      : new ToolError("journal_failed", `could not open journal schema ${schema}: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
  }

  const journal = createJournal(postgresDriver(pool, { schema, maxBatch, ownsPool, onBatch: options.onBatch, timeouts }), {
    auditKey,
    retainReadOutputs: options.retainReadOutputs === true,
  });
  return { ...journal, kind: "postgres", schema, schemaVersion: POSTGRES_SCHEMA_VERSION };
}
