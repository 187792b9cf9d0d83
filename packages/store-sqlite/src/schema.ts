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
  // 2: sealed rows. Each audit link may name the row it wrote a version of; a read finds the row's
  // latest link through this index. (Older rows carry no seal: see migrate.)
  `
  ALTER TABLE audit ADD COLUMN subject TEXT;
  CREATE INDEX audit_subject ON audit (subject, seq) WHERE subject IS NOT NULL;
  `,
  // 3: sealed authority records (operators, credentials, clients, switches), sealed like the rows
  // above; and the index a request joins open (pending or granted) requests by.
  `
  CREATE TABLE records (
    id INTEGER PRIMARY KEY,
    kind TEXT NOT NULL,
    record_id TEXT NOT NULL,
    record TEXT NOT NULL,
    UNIQUE (kind, record_id)
  ) STRICT;
  DROP INDEX approvals_pending;
  CREATE INDEX approvals_open ON approvals (input_hash) WHERE status IN ('pending', 'granted');
  `,
];

/** The schema version this code writes and understands. */
export const SQLITE_SCHEMA_VERSION = MIGRATIONS.length;

const KEY_CHECK = "audit_key_check";

/**
 * A file from before sealed rows (schema 1) with outbox entries or approval requests is refused:
 * sealing its rows now would bless rows that may already have been edited. An empty one (audit
 * events only) is upgraded in place.
 */
function refuseUnsealedRows(db: Database, path: string, version: number): void {
  const rows = db.prepare("SELECT (SELECT count(*) FROM outbox) + (SELECT count(*) FROM approvals)").pluck().get() as number;
  if (rows === 0) return;
  throw new ToolError(
    "journal_failed",
    `journal ${path} has schema version ${version}, from before rows were sealed, and holds ${rows} outbox entries and approval requests that cannot be sealed without trusting them unverified; ` +
      "resolve its pending work with the version that wrote it (recover the outbox, decide open requests), keep the file as an archive (its audit chain still verifies), and point the journal at a new file",
  );
}

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
    if (version >= 1 && version < 2) refuseUnsealedRows(db, path, version);
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
