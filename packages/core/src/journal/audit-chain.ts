import { createHmac, createSecretKey, timingSafeEqual, type KeyObject } from "node:crypto";
import { canonicalJson } from "../canonical-json.js";
import { GENESIS_MAC, type AuditEventInput, type AuditRecord } from "./types.js";

export type AuditKey = string | Uint8Array;

/** The fields a MAC covers, in canonical form. Stores persist exactly these. */
export function auditPayload(seq: number, event: AuditEventInput): string {
  return payloadOf(seq, event, event.subject);
}

/** The payload of `event` with `subject` as its subject (the journal's rows name theirs without copying the event). */
function payloadOf(seq: number, event: AuditEventInput, subject: string | undefined): string {
  // The envelope's keys are fixed, so it is written in canonical (sorted) order directly; only
  // `data` needs the general canonicalizer. Equal to canonicalJson of the whole envelope.
  let out = `{"at":${JSON.stringify(event.at)},"data":${canonicalJson(event.data)}`;
  if (event.invocationId !== undefined) out += `,"invocationId":${JSON.stringify(event.invocationId)}`;
  if (event.principal !== undefined) out += `,"principal":${JSON.stringify(event.principal)}`;
  if (!Number.isSafeInteger(seq)) throw new TypeError("audit seq must be a safe integer");
  out += `,"seq":${seq}`;
  if (subject !== undefined) out += `,"subject":${JSON.stringify(subject)}`;
  if (event.tenant !== undefined) out += `,"tenant":${JSON.stringify(event.tenant)}`;
  if (event.toolId !== undefined) out += `,"toolId":${JSON.stringify(event.toolId)}`;
  return `${out},"type":${JSON.stringify(event.type)}}`;
}

// Importing a raw key on every MAC costs more than the MAC; keep the imported key per raw key.
const stringKeys = new Map<string, KeyObject>();
const bufferKeys = new WeakMap<Uint8Array, KeyObject>();
function keyObject(key: AuditKey): KeyObject {
  if (typeof key === "string") {
    let found = stringKeys.get(key);
    if (!found) {
      found = createSecretKey(Buffer.from(key, "utf8"));
      if (stringKeys.size < 64) stringKeys.set(key, found);
    }
    return found;
  }
  let found = bufferKeys.get(key);
  if (!found) {
    found = createSecretKey(Buffer.from(key));
    bufferKeys.set(key, found);
  }
  return found;
}

/** HMAC-SHA256 over the previous MAC and the canonical event. */
export function computeAuditMac(key: AuditKey, prevMac: string, seq: number, event: AuditEventInput): string {
  return macOf(key, prevMac, auditPayload(seq, event));
}

function macOf(key: AuditKey, prevMac: string, payload: string): string {
  return macText(key, `${prevMac}\n${payload}`);
}

/** HMAC-SHA256 of `text` under the audit key, hex. Callers put a domain tag first. */
export function macText(key: AuditKey, text: string): string {
  return createHmac("sha256", keyObject(key)).update(text).digest("hex");
}

/**
 * The next link of a chain in its stored form: the canonical payload (which includes `seq`) and
 * its MAC. Stores call this while they hold the head, and keep the payload text as it is.
 */
export interface SealedAuditEvent {
  readonly seq: number;
  /**
   * The row this event recorded a version of (`entry:<key>`, `request:<id>`), copied from the
   * payload into an indexed column so a read finds a row's latest event in one lookup.
   */
  readonly subject?: string | undefined;
  readonly payload: string;
  readonly prevMac: string;
  readonly mac: string;
}

export function sealAuditEvent(key: AuditKey, head: { readonly seq: number; readonly mac: string }, event: AuditEventInput): SealedAuditEvent {
  return sealLink(key, head, event, event.subject);
}

/** `sealAuditEvent` with `subject` in place of the event's own. */
export function sealLink(
  key: AuditKey,
  head: { readonly seq: number; readonly mac: string },
  event: AuditEventInput,
  subject: string | undefined,
): SealedAuditEvent {
  const seq = head.seq + 1;
  const payload = payloadOf(seq, event, subject);
  return { seq, subject, payload, prevMac: head.mac, mac: macOf(key, head.mac, payload) };
}

/** A stored link back as a record. */
export function unsealAuditEvent(sealed: SealedAuditEvent): AuditRecord {
  const event = JSON.parse(sealed.payload) as AuditEventInput & { seq: number };
  return { ...event, seq: sealed.seq, prevMac: sealed.prevMac, mac: sealed.mac };
}

/** Build the next record of a chain. */
export function chainAuditEvent(key: AuditKey, head: { readonly seq: number; readonly mac: string }, event: AuditEventInput): AuditRecord {
  const sealed = sealAuditEvent(key, head, event);
  return { ...event, seq: sealed.seq, prevMac: sealed.prevMac, mac: sealed.mac };
}

export type AuditChainVerdict =
  | { readonly ok: true; readonly count: number; readonly head: { readonly seq: number; readonly mac: string } }
  | { readonly ok: false; readonly seq: number; readonly reason: string };

export interface VerifyAuditChainOptions {
  /** The journal's audit key. */
  readonly key: AuditKey;
  /**
   * The head an operator recorded elsewhere (a receipt, a log line). Without it, cutting events
   * off the end of the chain cannot be told apart from a shorter chain.
   */
  readonly expectedHead?: { readonly seq: number; readonly mac: string };
  /** Verify a slice that starts after this event (e.g. an archived prefix). */
  readonly after?: { readonly seq: number; readonly mac: string };
}

/**
 * Walk a chain and recompute every MAC. Finds an edited event (its MAC no longer matches), a
 * deleted or inserted one (sequence and previous-MAC breaks), and reordering.
 */
export function verifyAuditChain(records: Iterable<AuditRecord>, options: VerifyAuditChainOptions): AuditChainVerdict {
  let prev = options.after ?? { seq: 0, mac: GENESIS_MAC };
  let count = 0;
  for (const record of records) {
    if (record.seq !== prev.seq + 1) {
      return { ok: false, seq: record.seq, reason: `sequence break: expected ${prev.seq + 1}, found ${record.seq} (an event was deleted, inserted or moved)` };
    }
    if (record.prevMac !== prev.mac) {
      return { ok: false, seq: record.seq, reason: "previous-MAC link broken (an event before it was deleted, inserted or moved)" };
    }
    const expected = computeAuditMac(options.key, prev.mac, record.seq, record);
    if (!equalHex(expected, record.mac)) {
      return { ok: false, seq: record.seq, reason: "MAC mismatch (the event was edited, or written without the key)" };
    }
    prev = { seq: record.seq, mac: record.mac };
    count++;
  }
  if (options.expectedHead && (options.expectedHead.seq !== prev.seq || !equalHex(options.expectedHead.mac, prev.mac))) {
    return { ok: false, seq: prev.seq, reason: `chain ends at ${prev.seq}, expected head ${options.expectedHead.seq} (events were cut off the end)` };
  }
  return { ok: true, count, head: prev };
}

export function equalHex(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  return timingSafeEqual(Buffer.from(a, "utf8"), Buffer.from(b, "utf8"));
}
