import type { Database } from "better-sqlite3";
import { ToolError } from "@toolgate/core";

/**
 * Schema migrations, in order: the file's `user_version` is the number of migrations applied.
 * Append only; never edit a migration that has shipped.
 */
export const MIGRATIONS: readonly string[] = [
  `
  CREATE TABLE toolgate_meta (name TEXT PRIMARY KEY, value TEXT NOT NULL) STRICT;
  CREATE TABLE audit (
    seq INTEGER PRIMARY KEY,
    payload TEXT NOT NULL,
    prev_mac TEXT NOT NULL,
    mac TEXT NOT NULL
  ) STRICT;
  CREATE TABLE outbox (
    id INTEGER PRIMARY KEY,
    key TEXT NOT NULL UNIQUE,
    state TEXT NOT NULL,
    updated_ms REAL,
    entry TEXT NOT NULL
  ) STRICT;
  CREATE INDEX outbox_claim ON outbox (state, updated_ms);
  CREATE TABLE approvals (
    id INTEGER PRIMARY KEY,
    request_id TEXT NOT NULL UNIQUE,
    status TEXT NOT NULL,
    input_hash TEXT NOT NULL,
    request TEXT NOT NULL
  ) STRICT;
  CREATE INDEX approvals_pending ON approvals (input_hash) WHERE status = 'pending';
  `,
];

/** The schema version this code writes and understands. */
export const SQLITE_SCHEMA_VERSION = MIGRATIONS.length;

const KEY_CHECK = "audit_key_check";

/**
 * Bring the file to the current schema inside one write transaction, so several processes opening
 * a new file at once migrate it once. Refuses a file written by newer code, and a key that is not
 * the one the chain was started with.
 */
export function migrate(db: Database, path: string, keyCheck: string): void {
  const begin = db.prepare("BEGIN IMMEDIATE");
  begin.run();
  try {
    const version = db.pragma("user_version", { simple: true }) as number;
    if (version > SQLITE_SCHEMA_VERSION) {
      throw new ToolError(
        "journal_failed",
        `journal ${path} has schema version ${version}, newer than this @toolgate/store-sqlite understands (${SQLITE_SCHEMA_VERSION}); upgrade the package rather than open it with older code`,
      );
    }
    for (let v = version; v < SQLITE_SCHEMA_VERSION; v++) db.exec(MIGRATIONS[v]!);
    if (version < SQLITE_SCHEMA_VERSION) db.pragma(`user_version = ${SQLITE_SCHEMA_VERSION}`);
    const stored = db.prepare("SELECT value FROM toolgate_meta WHERE name = ?").pluck().get(KEY_CHECK) as string | undefined;
    if (stored === undefined) {
      db.prepare("INSERT INTO toolgate_meta (name, value) VALUES (?, ?)").run(KEY_CHECK, keyCheck);
    } else if (stored !== keyCheck) {
      throw new ToolError("journal_failed", `journal ${path} was started with another audit key; appending with this one would break its chain`);
    }
    db.exec("COMMIT");
  } catch (cause) {
    if (db.inTransaction) db.exec("ROLLBACK");
    throw cause;
  }
}
