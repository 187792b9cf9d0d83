import type { PoolClient } from "pg";
import { ToolError } from "@toolgate/core";
import { GENESIS_MAC } from "@toolgate/core/store-kit";

/**
 * Schema migrations, in order, written for a schema name `S` (quoted before use). The meta table's
 * `schema_version` row is the number applied. Append only; never edit one that has shipped.
 */
export const MIGRATIONS: readonly ((s: string) => string)[] = [
  (s) => `
  CREATE TABLE ${s}.audit (
    seq bigint PRIMARY KEY,
    payload text NOT NULL,
    prev_mac text NOT NULL,
    mac text NOT NULL
  );
  CREATE TABLE ${s}.audit_head (
    id smallint PRIMARY KEY CHECK (id = 1),
    seq bigint NOT NULL,
    mac text NOT NULL
  );
  INSERT INTO ${s}.audit_head (id, seq, mac) VALUES (1, 0, '${GENESIS_MAC}');
  CREATE TABLE ${s}.outbox (
    id bigserial PRIMARY KEY,
    key text NOT NULL UNIQUE,
    state text NOT NULL,
    updated_ms double precision,
    entry text NOT NULL
  );
  CREATE INDEX outbox_claim ON ${s}.outbox (state, updated_ms);
  CREATE TABLE ${s}.approvals (
    id bigserial PRIMARY KEY,
    request_id text NOT NULL UNIQUE,
    status text NOT NULL,
    input_hash text NOT NULL,
    request text NOT NULL
  );
  CREATE INDEX approvals_pending ON ${s}.approvals (input_hash) WHERE status = 'pending';
  `,
  // 2: sealed rows. Each audit link may name the row it wrote a version of; a read finds the row's
  // latest link through this index. (Older rows carry no seal: see migrate.)
  (s) => `
  ALTER TABLE ${s}.audit ADD COLUMN subject text;
  CREATE INDEX audit_subject ON ${s}.audit (subject, seq) WHERE subject IS NOT NULL;
  `,
  // 3: sealed authority records (operators, credentials, clients, switches), sealed like the rows
  // above; and the index a request joins open (pending or granted) requests by.
  (s) => `
  CREATE TABLE ${s}.records (
    id bigserial PRIMARY KEY,
    kind text NOT NULL,
    record_id text NOT NULL,
    record text NOT NULL,
    UNIQUE (kind, record_id)
  );
  DROP INDEX ${s}.approvals_pending;
  CREATE INDEX approvals_open ON ${s}.approvals (input_hash) WHERE status IN ('pending', 'granted');
  `,
];

/** The schema version this code writes and understands. */
export const POSTGRES_SCHEMA_VERSION = MIGRATIONS.length;

export const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/**
 * A schema from before sealed rows (version 1) with outbox entries or approval requests is
 * refused: sealing its rows now would bless rows that may already have been edited. An empty one
 * (audit events only) is upgraded in place.
 */
async function refuseUnsealedRows(client: PoolClient, schema: string): Promise<void> {
  const s = `"${schema}"`;
  const { rows } = await client.query<{ n: string }>(`SELECT (SELECT count(*) FROM ${s}.outbox) + (SELECT count(*) FROM ${s}.approvals) AS n`);
  const n = Number(rows[0]?.n ?? 0);
  if (n === 0) return;
  throw new ToolError(
    "journal_failed",
    `journal schema ${schema} has version 1, from before rows were sealed, and holds ${n} outbox entries and approval requests that cannot be sealed without trusting them unverified; ` +
      "resolve its pending work with the version that wrote it (recover the outbox, decide open requests), keep the schema as an archive (its audit chain still verifies), and point the journal at a new schema",
  );
}

/**
 * Create or upgrade the schema under a transaction-scoped advisory lock, so workers starting
 * together migrate once. Refuses a schema written by newer code and an audit key that is not the
 * one the chain was started with.
 */
export async function migrate(client: PoolClient, schema: string, keyCheck: string): Promise<void> {
  const s = `"${schema}"`;
  await client.query("BEGIN");
  try {
    await client.query("SELECT pg_advisory_xact_lock(hashtext('toolgate.migrate'), hashtext($1))", [schema]);
    await client.query(`CREATE SCHEMA IF NOT EXISTS ${s}`);
    await client.query(`CREATE TABLE IF NOT EXISTS ${s}.toolgate_meta (name text PRIMARY KEY, value text NOT NULL)`);
    const meta = await client.query<{ name: string; value: string }>(`SELECT name, value FROM ${s}.toolgate_meta`);
    const read = (name: string): string | undefined => meta.rows.find((r) => r.name === name)?.value;
    const version = Number(read("schema_version") ?? 0);
    if (version > POSTGRES_SCHEMA_VERSION) {
      throw new ToolError(
        "journal_failed",
        `journal schema ${schema} has version ${version}, newer than this @toolgate/store-postgres understands (${POSTGRES_SCHEMA_VERSION}); upgrade the package rather than connect with older code`,
      );
    }
    if (version === 1) await refuseUnsealedRows(client, schema);
    for (let v = version; v < POSTGRES_SCHEMA_VERSION; v++) await client.query(MIGRATIONS[v]!(s));
    await client.query(`INSERT INTO ${s}.toolgate_meta (name, value) VALUES ('schema_version', $1) ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value`, [
      String(Math.max(version, POSTGRES_SCHEMA_VERSION)),
    ]);
    const stored = read("audit_key_check");
    if (stored === undefined) {
      await client.query(`INSERT INTO ${s}.toolgate_meta (name, value) VALUES ('audit_key_check', $1)`, [keyCheck]);
    } else if (stored !== keyCheck) {
      throw new ToolError("journal_failed", `journal schema ${schema} was started with another audit key; appending with this one would break its chain`);
    }
    await client.query("COMMIT");
  } catch (cause) {
    await client.query("ROLLBACK").catch(() => undefined);
    throw cause;
  }
}
