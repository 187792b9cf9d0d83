import type pg from "pg";
import { ToolError } from "@toolgate/core";

/**
 * How long the journal lets a transaction that holds the audit head lock run or sit idle. Both are
 * set with `SET LOCAL` inside every such transaction, before the lock is asked for, so they hold
 * whatever the server, role or database says; milliseconds.
 */
export interface PostgresTimeouts {
  /**
   * `statement_timeout`: one statement may run this long, the wait for the head lock included.
   * Above `idleInTransactionTimeoutMs`, so a writer waiting behind a stalled one outlives it.
   */
  readonly statementTimeoutMs: number;
  /**
   * `idle_in_transaction_session_timeout`: a writer that holds the lock and sends nothing for this
   * long (paused, swapped out, cut off) has its session ended by the server, which frees the lock.
   */
  readonly idleInTransactionTimeoutMs: number;
  /**
   * When the connection is lost while a batch's commit is under way, the batch asks the server
   * (on a new connection) whether its transaction committed, for at most this long.
   */
  readonly commitOutcomeTimeoutMs: number;
}

export const DEFAULT_TIMEOUTS: PostgresTimeouts = { statementTimeoutMs: 15_000, idleInTransactionTimeoutMs: 5_000, commitOutcomeTimeoutMs: 30_000 };

/** The timeouts asked for, checked (whole milliseconds, at least 1, statement above idle); a TypeError otherwise. */
export function timeoutsOf(asked: Partial<PostgresTimeouts>): PostgresTimeouts {
  const t = { ...DEFAULT_TIMEOUTS };
  for (const name of Object.keys(DEFAULT_TIMEOUTS) as (keyof PostgresTimeouts)[]) {
    const value = asked[name];
    if (value === undefined) continue;
    if (!Number.isSafeInteger(value) || value < 1 || value > 2_147_483_647)
      throw new TypeError(`${name} must be a whole number of milliseconds from 1, not ${String(value)}`);
    t[name] = value;
  }
  if (t.statementTimeoutMs <= t.idleInTransactionTimeoutMs) {
    throw new TypeError(
      `statementTimeoutMs (${t.statementTimeoutMs}) must be above idleInTransactionTimeoutMs (${t.idleInTransactionTimeoutMs}): it bounds the wait for a stalled writer's lock`,
    );
  }
  return t;
}

/** The statements that open a locking transaction: BEGIN and its two timeouts (numbers checked by {@link timeoutsOf}). */
export const beginWithTimeouts = (t: PostgresTimeouts): string[] => [
  "BEGIN",
  `SET LOCAL statement_timeout = ${t.statementTimeoutMs}`,
  `SET LOCAL idle_in_transaction_session_timeout = ${t.idleInTransactionTimeoutMs}`,
];

// query_canceled (a statement timeout), idle_in_transaction_session_timeout, lock_not_available,
// admin_shutdown, crash_shutdown, cannot_connect_now; and class 08, connection exceptions.
const LOST_CODES = new Set(["57014", "25P03", "55P03", "57P01", "57P02", "57P03"]);

/**
 * A failure that says nothing about the batch's own calls: the session timed out, was ended, or
 * its connection failed (no SQLSTATE at all: a socket error, a connection the server closed). The
 * same calls may pass when tried again.
 */
export function sessionFailed(cause: unknown): boolean {
  const code = (cause as { code?: unknown } | null)?.code;
  return typeof code !== "string" || !/^[0-9A-Z]{5}$/.test(code) || code.startsWith("08") || LOST_CODES.has(code);
}

/** The session itself is gone (not a statement refused on a live one): its commit, if sent, may have happened. */
export function connectionLost(cause: unknown): boolean {
  const code = (cause as { code?: unknown } | null)?.code;
  return sessionFailed(cause) && code !== "57014" && code !== "55P03";
}

/** A retryable `journal_failed`: nothing of the batch was committed. */
export function sessionError(schema: string, cause: unknown): ToolError {
  const why = cause instanceof Error ? cause.message : String(cause);
  return new ToolError("journal_failed", `journal schema ${schema}: the database session failed, nothing was recorded (${why}); try again`, {
    cause,
    retryable: true,
    details: { committed: false },
  });
}

/**
 * The commit's outcome could not be learnt: the calls may or may not have been recorded. Not
 * retryable; its boundary tells the gate that an intent in it may be pending, for recovery.
 */
export function unknownCommitError(schema: string, cause: unknown, waitedMs: number): ToolError {
  return new ToolError(
    "journal_failed",
    `journal schema ${schema}: the connection was lost during a commit and the database did not say within ${waitedMs} ms whether it happened`,
    {
      cause,
      boundary: "effect_state_unknown",
      details: { committed: "unknown" },
    },
  );
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** What a lost batch would have left if it committed: its first audit link. */
export interface CommitProbe {
  /** The transaction's id, while it may still be running. */
  readonly xid: string;
  /** `SELECT mac FROM <schema>.audit WHERE seq = $1`. */
  readonly linkQuery: string;
  readonly seq: number;
  readonly mac: string;
}

/**
 * Whether the batch committed, asked on new connections until `timeoutMs` passes (the server may
 * be restarting): `true`, `false`, or undefined when no answer came. First its transaction must be
 * over (`pg_xact_status` not `in progress`: its session may not have ended yet); then the answer
 * is the chain itself: its first link stored with its MAC. The id alone is not the answer: after a
 * crash the server may hand an id that never reached its log to a new transaction ("in the
 * future" until then), whose outcome is not this batch's.
 */
export async function committed(pool: pg.Pool, probe: CommitProbe, timeoutMs: number): Promise<boolean | undefined> {
  const until = Date.now() + timeoutMs;
  for (let wait = 50; ; wait = Math.min(wait * 2, 1000)) {
    try {
      const status = await pool.query<{ status: string | null }>("SELECT pg_xact_status($1::xid8) AS status", [probe.xid]).then(
        ({ rows }) => rows[0]?.status,
        // invalid_parameter_value: an id "in the future", lost in a crash (so its transaction is over)
        (cause: unknown) => {
          if ((cause as { code?: unknown } | null)?.code === "22023") return "lost";
          throw cause;
        },
      );
      if (status !== "in progress") {
        const { rows } = await pool.query<{ mac: string }>(probe.linkQuery, [probe.seq]);
        return rows[0]?.mac === probe.mac;
      }
    } catch {
      // the server is not back yet
    }
    if (Date.now() + wait > until) return undefined;
    await sleep(wait);
  }
}
