import { createHash } from "node:crypto";
/**
 * The driver's SQL for a schema. Statements a batch sends while it holds the audit head lock are
 * sent as simple queries (several statements in one round trip), so they run as prepared
 * statements given literals ({@link execute}); every other statement takes parameters.
 */
export function queries(schema: string) {
  const s = `"${schema}"`;
  // The latest link whose subject is the row: one lookup in the audit_subject index per row.
  const latest = (subject: string): string =>
    `LEFT JOIN LATERAL (SELECT seq, prev_mac FROM ${s}.audit WHERE subject = ${subject} ORDER BY seq DESC LIMIT 1) a ON true`;
  const entryRows = `SELECT o.key AS id, o.entry AS text, a.seq, a.prev_mac FROM ${s}.outbox o ${latest("'entry:' || o.key")}`;
  const requestRows = `SELECT o.request_id AS id, o.request AS text, a.seq, a.prev_mac FROM ${s}.approvals o ${latest("'request:' || o.request_id")}`;
  return {
    lockHead: `SELECT seq, mac FROM ${s}.audit_head WHERE id = 1 FOR UPDATE`,
    // The server's clock once the lock is held (milliseconds since the epoch), for onBatch, and the
    // transaction's id, to ask whether it committed when the connection is lost during its commit.
    lockedAt: `SELECT (extract(epoch FROM clock_timestamp()) * 1000)::float8 AS at, pg_current_xact_id()::text AS xid`,
    head: `SELECT seq, mac FROM ${s}.audit_head WHERE id = 1`,
    link: `SELECT mac FROM ${s}.audit WHERE seq = $1`,
    readAudit: `SELECT seq, subject, payload, prev_mac, mac FROM ${s}.audit WHERE seq > $1 ORDER BY seq LIMIT $2`,
    // Every declared row with its latest link, in one round trip: entries by key (stored or not),
    // requests by id or open input hash, declared requests that are not stored but have a link, and
    // records by kind and id (stored or not).
    fetch: `SELECT 'e' AS kind, k.id, o.entry AS body, NULL::text AS status, NULL::text AS input_hash, o.id AS ord, a.seq, a.prev_mac
      FROM unnest($1::text[]) AS k(id) LEFT JOIN ${s}.outbox o ON o.key = k.id ${latest("'entry:' || k.id")}
      UNION ALL
      SELECT 'r', o.request_id, o.request, o.status, o.input_hash, o.id, a.seq, a.prev_mac FROM ${s}.approvals o ${latest("'request:' || o.request_id")}
      WHERE o.request_id = ANY($2::text[]) OR (o.status IN ('pending', 'granted') AND o.input_hash = ANY($3::text[]))
      UNION ALL
      SELECT 'm', k.id, NULL, NULL, NULL, NULL, a.seq, a.prev_mac FROM unnest($2::text[]) AS k(id) ${latest("'request:' || k.id")}
      WHERE a.seq IS NOT NULL AND NOT EXISTS (SELECT 1 FROM ${s}.approvals WHERE request_id = k.id)
      UNION ALL
      SELECT 'c', k.kind || ':' || k.id, o.record, NULL, NULL, o.id, a.seq, a.prev_mac
      FROM unnest($4::text[], $5::text[]) AS k(kind, id) LEFT JOIN ${s}.records o ON o.kind = k.kind AND o.record_id = k.id ${latest("k.kind || ':' || k.id")}
      ORDER BY kind, ord`,
    write: `WITH appended AS (
        INSERT INTO ${s}.audit (seq, subject, payload, prev_mac, mac)
        SELECT * FROM unnest($1::bigint[], $15::text[], $2::text[], $3::text[], $4::text[])
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
      ), records AS (
        INSERT INTO ${s}.records (kind, record_id, record)
        SELECT kind, id, record FROM unnest($16::text[], $17::text[], $18::text[]) WITH ORDINALITY AS u(kind, id, record, n)
        ORDER BY n
        ON CONFLICT (kind, record_id) DO UPDATE SET record = EXCLUDED.record
      )
      UPDATE ${s}.audit_head SET seq = $13, mac = $14 WHERE id = 1`,
    getEntry: `SELECT k.id, o.entry AS text, a.seq, a.prev_mac FROM (SELECT $1::text AS id) k LEFT JOIN ${s}.outbox o ON o.key = k.id ${latest("'entry:' || k.id")}`,
    listEntries: `${entryRows} WHERE ($1::text[] IS NULL OR o.state = ANY($1)) ORDER BY o.id LIMIT $2`,
    claimable: `${entryRows} WHERE o.state = ANY($1::text[]) AND o.updated_ms < $2::double precision ORDER BY o.id LIMIT $3::bigint FOR UPDATE OF o SKIP LOCKED`,
    getRequest: `SELECT k.id, o.request AS text, a.seq, a.prev_mac FROM (SELECT $1::text AS id) k LEFT JOIN ${s}.approvals o ON o.request_id = k.id ${latest("'request:' || k.id")}`,
    listRequests: `${requestRows} WHERE ($1::text[] IS NULL OR o.status = ANY($1)) ORDER BY o.id LIMIT $2`,
    // Records by kind and id, one row each in the order asked (many callers' reads in one query).
    getRecords: `SELECT k.id, o.record AS text, a.seq, a.prev_mac FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS k(kind, id, n)
      LEFT JOIN ${s}.records o ON o.kind = k.kind AND o.record_id = k.id ${latest("k.kind || ':' || k.id")} ORDER BY k.n`,
    listRecords: `SELECT o.record_id AS id, o.record AS text, a.seq, a.prev_mac FROM ${s}.records o ${latest("o.kind || ':' || o.record_id")}
      WHERE o.kind = $1 ORDER BY o.id`,
    recordKinds: `SELECT DISTINCT kind FROM ${s}.records ORDER BY kind`,
  };
}

/*
 * Values written into statements: the batch's statements go several to a round trip as a simple
 * query, which takes no parameters, so each runs as `EXECUTE name(literal, …)` of a statement
 * prepared on the connection. Every string becomes an escape-string literal with its backslashes
 * and quotes doubled, which reads back as exactly the string whatever `standard_conforming_strings`
 * says; an array becomes the array literal of its elements' strings (each double-quoted, its
 * backslashes and double quotes escaped), itself written as such a string; null and undefined
 * become NULL. Values are only ever arguments: no statement text is built from them.
 */

const names = new Map<string, string>();
/** The name a statement is prepared under on every connection: derived from its text (schema included). */
export function statementName(text: string): string {
  let name = names.get(text);
  if (name === undefined) names.set(text, (name = `tg_${createHash("sha256").update(text).digest("hex").slice(0, 32)}`));
  return name;
}

/** Prepare a statement on a connection once, so running it costs no parse and, after a few runs, no planning. */
export const prepare = (text: string): string => `PREPARE ${statementName(text)} AS ${text}`;

/** Run a statement made with {@link prepare}, its values written as literals (see above). */
export const execute = (text: string, values: readonly unknown[]): string => `EXECUTE ${statementName(text)}(${values.map(literal).join(", ")})`;

const quoted = (text: string): string => `E'${text.replace(/[\\']/g, "$&$&")}'`;
const element = (value: unknown): string => (value === null || value === undefined ? "NULL" : `"${scalar(value).replace(/[\\"]/g, "\\$&")}"`);

function scalar(value: unknown): string {
  if (typeof value === "string") return value;
  if (typeof value === "number" || typeof value === "bigint") return String(value);
  throw new TypeError(`cannot write a ${typeof value} into SQL`);
}

function literal(value: unknown): string {
  if (value === null || value === undefined) return "NULL";
  if (Array.isArray(value)) return quoted(`{${value.map(element).join(",")}}`);
  return quoted(scalar(value));
}
