import { hashCanonical } from "../canonical-json.js";
import { ToolError } from "../errors.js";
import { equalHex, macText, type AuditKey } from "./audit-chain.js";
import type { OutboxClaim, RowEvent, StoredEntry, StoredRecord, StoredRequest, StoredRow } from "./driver.js";
import { decodeEntry, decodeRequest } from "./records.js";
import { isSideEffectful } from "../manifest.js";
import type { ApprovalRequest, OutboxEntry } from "./types.js";

/**
 * Rows that carry their own proof. Each stored outbox entry and approval request is an envelope
 * `{"seal":"<seq>:<mac>","row":{…}[,"output":…]}`: the MAC is an HMAC with the audit key over a
 * domain tag, the row's kind and key or id, the `seq` and `prevMac` of the audit event that
 * recorded this version, and the row's JSON. A read recomputes it against the subject's latest
 * event (which the driver finds in the same read), so an edited, forged, copied or re-stated row
 * fails, and so does a row with no event or an event with no row.
 *
 * An entry's result body (`output`) sits beside the sealed row, not in it: the row seals
 * `outputHash`, and a read checks a present body against it. So a body can be dropped (retention,
 * prune) while the seal still holds.
 */

const DOMAIN = "toolgate.journal-row.v1";

/** `record`: a sealed authority record (its id in problems and errors is `<kind>:<id>`). */
export type RowKind = "entry" | "request" | "record";

/**
 * What a seal names: an entry, a request, or a record of a kind (`record:<kind>`, so no record
 * is ever taken for an entry or a request, whatever its kind is called).
 */
type SealKind = "entry" | "request" | `record:${string}`;

/** A row's subject: `entry:<key>`, `request:<id>`, or `<kind>:<id>` for a record. */
export const subjectOf = (kind: string, id: string): string => `${kind}:${id}`;

function rowMac(key: AuditKey, kind: SealKind, id: string, event: RowEvent, content: string): string {
  return macText(key, `${DOMAIN}\n${kind}\n${id.length}:${id}\n${event.seq}\n${event.prevMac}\n${content}`);
}

const envelope = (event: RowEvent, mac: string, content: string, body: string): string => `{"seal":"${event.seq}:${mac}","row":${content}${body}}`;

/** Seal an entry as the event at `event` records it; its output body is kept only when `keepOutput`. */
export function sealEntry(key: AuditKey, entry: OutboxEntry, event: RowEvent, keepOutput: boolean): StoredEntry {
  let content: string;
  let body = "";
  if (entry.result === undefined) content = JSON.stringify(entry);
  else {
    const { output, outputPruned, ...proof } = entry.result;
    content = JSON.stringify({ ...entry, result: proof });
    if (keepOutput && outputPruned !== true) body = `,"output":${JSON.stringify(output ?? null)}`;
  }
  const text = envelope(event, rowMac(key, "entry", entry.key, event, content), content, body);
  return { key: entry.key, state: entry.state, updatedMs: claimableAfter(entry), text };
}

/** Attempts in all (the call's, a caller's retakes, recovery's claims) after which recovery no longer retries an unknown entry. */
export const RECOVERY_ATTEMPTS = 4;

/**
 * Whether recovery may retry an entry whose effect state is unknown: with its own key, only an
 * idempotent side effect whose recorded input is whole (nothing redacted), fewer than
 * {@link RECOVERY_ATTEMPTS} times in all. Every other unknown entry waits for an operator.
 */
export const retriesUnknown = (entry: OutboxEntry): boolean =>
  isSideEffectful(entry.effect) && entry.idempotent && !entry.inputRedacted && entry.attempts < RECOVERY_ATTEMPTS;

/**
 * An entry's time column (`updatedMs`), which claims select by: its `updatedAt`, except for an
 * unknown entry recovery must not retry, which no claim's cutoff ever reaches.
 */
export const claimableAfter = (entry: OutboxEntry): number =>
  entry.state === "unknown" && !retriesUnknown(entry) ? Number.MAX_VALUE : Date.parse(entry.updatedAt);

export function sealRequest(key: AuditKey, request: ApprovalRequest, event: RowEvent): StoredRequest {
  const content = JSON.stringify(request);
  const text = envelope(event, rowMac(key, "request", request.id, event, content), content, "");
  return { id: request.id, status: request.status, inputHash: request.inputHash, text };
}

/** An entry without its output body, as prune stores it (the seal is unchanged). */
export function withoutBody(text: string): string | undefined {
  const envelope = JSON.parse(text) as { seal: string; row: unknown; output?: unknown };
  if (!("output" in envelope)) return undefined;
  return `{"seal":${JSON.stringify(envelope.seal)},"row":${JSON.stringify(envelope.row)}}`;
}

/**
 * What is wrong with a row: `seal` (edited, forged, or copied from another journal), `restated`
 * (an older, validly sealed version put back), `no_event` (no audit event recorded it), `missing`
 * (an event recorded it, the row is gone), `schema` (the sealed JSON is not a row of its kind),
 * `moved` (stored under another key or id), `index` (a column the store selects rows by, or the
 * audit table's subject column, disagrees with what is sealed).
 */
export type RowProblem = "seal" | "restated" | "no_event" | "missing" | "schema" | "moved" | "index";

export function tampered(kind: SealKind, id: string, problem: RowProblem, what: string): ToolError {
  const record = kind.startsWith("record:") ? kind.slice("record:".length) : undefined;
  const name = record !== undefined ? `${record} record` : kind === "entry" ? "outbox entry" : "approval request";
  return new ToolError("journal_tampered", `the stored ${name} ${id} ${what}; it was not used`, {
    boundary: "pre_effect_refusal",
    details: record !== undefined ? { kind: "record", id: subjectOf(record, id), problem } : { kind, id, problem },
  });
}

interface Opened {
  readonly row: unknown;
  readonly envelope: { readonly output?: unknown };
}

/** Check a row's seal against its subject's latest event; throws `journal_tampered` when it fails. */
function openRow(key: AuditKey, kind: SealKind, row: StoredRow & { readonly text: string }, latest: RowEvent | undefined): Opened {
  let parsed: unknown;
  try {
    parsed = JSON.parse(row.text);
  } catch {
    throw tampered(kind, row.id, "seal", "is not JSON");
  }
  const { seal, row: content } = (parsed ?? {}) as { seal?: unknown; row?: unknown };
  const match = typeof seal === "string" ? /^(\d{1,16}):([0-9a-f]{64})$/.exec(seal) : null;
  if (!match || typeof content !== "object" || content === null) throw tampered(kind, row.id, "seal", "carries no seal");
  if (!latest) throw tampered(kind, row.id, "no_event", "has no audit event that recorded it (inserted outside the journal)");
  if (!equalHex(rowMac(key, kind, row.id, latest, JSON.stringify(content)), match[2]!)) {
    throw Number(match[1]) < latest.seq
      ? tampered(kind, row.id, "restated", `is an older version (sealed at event ${match[1]}; event ${latest.seq} recorded a later one)`)
      : tampered(kind, row.id, "seal", "fails its seal (edited, forged, or copied from another journal)");
  }
  return { row: content, envelope: parsed as Opened["envelope"] };
}

function stored(kind: SealKind, row: StoredRow): row is StoredRow & { readonly text: string } {
  if (row.text !== undefined) return true;
  if (row.latest) throw tampered(kind, row.id, "missing", `is missing, though audit event ${row.latest.seq} recorded it (deleted outside the journal)`);
  return false;
}

/** Verify a row and decode what it seals; undefined when there is no row and no event. */
function openDecoded<T>(key: AuditKey, kind: SealKind, row: StoredRow, latest: RowEvent | undefined, decode: (row: unknown) => T, idOf: (value: T) => string) {
  if (!stored(kind, latest === row.latest ? row : { ...row, latest })) return undefined;
  const opened = openRow(key, kind, row as StoredRow & { readonly text: string }, latest);
  let value: T;
  try {
    value = decode(opened.row);
  } catch (cause) {
    throw tampered(kind, row.id, "schema", `does not match its schema (${cause instanceof Error ? cause.message : String(cause)})`);
  }
  if (idOf(value) !== row.id) throw tampered(kind, row.id, "moved", `is stored under another ${kind === "entry" ? "key" : "id"} (${idOf(value)})`);
  return { value, envelope: opened.envelope };
}

/**
 * Verify and decode an entry. `latest` defaults to the event the driver found; verification of a
 * whole journal passes the one the MACed chain names instead.
 */
export function openEntry(key: AuditKey, row: StoredRow, latest = row.latest): OutboxEntry | undefined {
  const opened = openDecoded(key, "entry", row, latest, decodeEntry, (e) => e.key);
  if (!opened) return undefined;
  const { value: entry, envelope } = opened;
  if (entry.result === undefined) return entry;
  if (!("output" in envelope)) return { ...entry, result: { ...entry.result, output: undefined, outputPruned: true } };
  const output = envelope.output;
  if (hashCanonical(output ?? null) !== entry.result.outputHash) throw tampered("entry", row.id, "seal", "has an output that does not match its sealed hash");
  return { ...entry, result: { ...entry.result, output } };
}

export function openRequest(key: AuditKey, row: StoredRow, latest = row.latest): ApprovalRequest | undefined {
  return openDecoded(key, "request", row, latest, decodeRequest, (r) => r.id)?.value;
}

/** Seal a record's value as the event at `event` records it. `value` must be JSON. */
export function sealRecord(key: AuditKey, kind: string, id: string, value: unknown, event: RowEvent): StoredRecord {
  const content = JSON.stringify({ kind, id, value });
  const text = envelope(event, rowMac(key, `record:${kind}`, id, event, content), content, "");
  return { kind, id, text };
}

function decodeRecord(kind: string) {
  return (row: unknown): { readonly id: string; readonly value: unknown } => {
    const { kind: sealedKind, id, value } = row as { kind?: unknown; id?: unknown; value?: unknown };
    if (typeof id !== "string" || !("value" in (row as object))) throw new Error("a record is {kind, id, value}");
    // A record of another kind copied here is stored under another subject: "moved", like an id.
    return { id: sealedKind === kind ? id : `${String(sealedKind)}:${id}`, value };
  };
}

/** Verify a record and return what it seals; undefined when there is no row and no event. */
export function openRecord(key: AuditKey, kind: string, row: StoredRow, latest = row.latest): { readonly id: string; readonly value: unknown } | undefined {
  return openDecoded(key, `record:${kind}`, row, latest, decodeRecord(kind), (r) => r.id)?.value;
}

/**
 * A row a claim selected by its columns, opened: the entry to claim, or undefined for an unknown
 * entry recovery must not retry (its time column edited, or written before that was its rule).
 * Throws `journal_tampered` when the row fails its seal or its sealed state and time disagree
 * with the columns (which are not sealed).
 */
export function claimableEntry(key: AuditKey, row: StoredRow, claim: OutboxClaim): OutboxEntry | undefined {
  const entry = openEntry(key, row)!;
  if (!claim.states.includes(entry.state) || !(Date.parse(entry.updatedAt) < claim.updatedBeforeMs)) {
    throw tampered("entry", row.id, "index", `is claimable by its columns but not by its sealed state (${entry.state}, ${entry.updatedAt})`);
  }
  return entry.state === "unknown" && !retriesUnknown(entry) ? undefined : entry;
}
