import type { SealedAuditEvent } from "./audit-chain.js";
import type { RowEvent, StoredRow } from "./driver.js";
import { EFFECT_BOUNDARIES } from "../errors.js";
import { EFFECTS } from "../manifest.js";
import type { OutboxEntry } from "./types.js";

/**
 * What this process sealed a moment ago, so reading it straight back does not pay for a second
 * HMAC, a JSON parse and a schema decode. The rule is string equality with what was sealed: a
 * stored link or row equal, field for field, to what this process MACed with its own key is one
 * the full check would accept too (its MAC is the one computed over exactly that text), so the
 * skip never accepts anything the check would refuse. Anything else (an edited, replaced,
 * restated or rolled-back row or link) differs in some field and gets the full check, as
 * before. Nothing is trusted for having been remembered: a batch that failed leaves behind a
 * remembered seal that no stored text equals, or one that equals a validly MACed text.
 *
 * Both are bounded (oldest dropped first): at most `MAX` of each and `MAX_CHARS` of stored text
 * in all, so a process that writes and never reads back, or writes large rows, keeps little.
 */
const MAX = 4096;
const MAX_CHARS = 16 * 1024 * 1024;

/** A map that forgets its oldest values past `MAX` of them or `MAX_CHARS` of their text. */
function bounded<K, V>(charsOf: (value: V) => number) {
  const map = new Map<K, V>();
  let chars = 0;
  const forget = (key: K): void => {
    const value = map.get(key);
    if (value === undefined) return;
    chars -= charsOf(value);
    map.delete(key);
  };
  return {
    get: (key: K): V | undefined => map.get(key),
    forget,
    keep(key: K, value: V): void {
      forget(key);
      const size = charsOf(value);
      if (size > MAX_CHARS) return;
      map.set(key, value);
      chars += size;
      while (map.size > MAX || chars > MAX_CHARS) forget(map.keys().next().value as K);
    },
  };
}

/** The links this process appended, by seq. */
export interface OwnLinks {
  remember(sealed: SealedAuditEvent): void;
  /**
   * The remembered link at `link.seq` (forgotten once asked for) when the stored link equals it in
   * every field; undefined when it is not remembered or differs in any (then: the full check).
   */
  take(link: SealedAuditEvent): SealedAuditEvent | undefined;
}

export function ownLinks(): OwnLinks {
  const sealed = bounded<number, SealedAuditEvent>((link) => link.payload.length);
  return {
    remember: (link) => sealed.keep(link.seq, link),
    take(link) {
      const mine = sealed.get(link.seq);
      if (mine === undefined) return undefined;
      sealed.forget(link.seq);
      return mine.seq === link.seq && mine.payload === link.payload && mine.mac === link.mac && mine.prevMac === link.prevMac ? mine : undefined;
    },
  };
}

interface SealedEntry {
  readonly text: string;
  readonly seq: number;
  readonly prevMac: string;
  readonly entry: OutboxEntry;
}

/** The result-less outbox entries (an intent, a claim) this process sealed, by key. */
export interface OwnEntries {
  /** `entry` was sealed as `text` by the event at `event`. Entries with a result or error are not kept. */
  remember(entry: OutboxEntry, text: string, event: RowEvent): void;
  /**
   * The entry as `openEntry` would decode it (frozen), when the row's id, stored text and latest
   * event equal what was sealed; undefined otherwise (then: the full check).
   */
  opened(row: StoredRow): OutboxEntry | undefined;
}

export function ownEntries(): OwnEntries {
  // The text, and about as much again for the decoded copy.
  const sealed = bounded<string, SealedEntry>((own) => 2 * own.text.length);
  return {
    remember(entry, text, event) {
      // Kept only when the schema would decode it (else its read-back refuses it as today).
      if (entry.result !== undefined || entry.error !== undefined || !decodable(entry)) sealed.forget(entry.key);
      // Copied now: the caller keeps the object it handed in, and may change it after.
      else sealed.keep(entry.key, { text, seq: event.seq, prevMac: event.prevMac, entry: asDecoded(entry) });
    },
    opened(row) {
      const mine = sealed.get(row.id);
      const latest = row.latest;
      if (mine === undefined || latest === undefined) return undefined;
      return mine.entry.key === row.id && mine.text === row.text && mine.seq === latest.seq && mine.prevMac === latest.prevMac ? mine.entry : undefined;
    },
  };
}

const str = (v: unknown): boolean => typeof v === "string";
const OUTBOX_STATES: readonly unknown[] = ["pending", "completed", "failed", "unknown"];
/**
 * The schema's checks (records.ts, OutboxEntrySchema) of a result-less entry, on its fields' types:
 * the journal does not validate what it is handed, so a malformed intent is written and refused on
 * read-back ("schema"); its own read-back must refuse it too.
 */
function decodable(e: OutboxEntry): boolean {
  return (
    str(e.key) &&
    str(e.invocationId) &&
    str(e.toolId) &&
    str(e.principal) &&
    str(e.tenant) &&
    str(e.inputHash) &&
    typeof e.inputRedacted === "boolean" &&
    (EFFECTS as readonly unknown[]).includes(e.effect) &&
    typeof e.idempotent === "boolean" &&
    (e.target === undefined || str(e.target)) &&
    str(e.intentHash) &&
    str(e.at) &&
    OUTBOX_STATES.includes(e.state) &&
    (EFFECT_BOUNDARIES as readonly unknown[]).includes(e.boundary) &&
    Number.isSafeInteger(e.attempts) &&
    e.attempts >= 0 &&
    str(e.updatedAt) &&
    (e.grantId === undefined || str(e.grantId)) &&
    (e.edited === undefined || editedDecodable(e.edited))
  );
}

/** An intent's `edited` as the schema's EditedIntent takes it: the request, the input hash as asked and the changes by path. */
function editedDecodable(edited: unknown): boolean {
  if (typeof edited !== "object" || edited === null) return false;
  const { requestId, askedInputHash, changes } = edited as { requestId?: unknown; askedInputHash?: unknown; changes?: unknown };
  return (
    str(requestId) &&
    str(askedInputHash) &&
    Array.isArray(changes) &&
    changes.every((c: unknown) => typeof c === "object" && c !== null && str((c as { path?: unknown }).path))
  );
}

/**
 * A result-less entry as reading its sealed JSON back gives it (`decodeEntry`): the schema's keys
 * only, in the schema's order, undefined ones dropped (JSON has none) except `input` (defaulted)
 * and `target` (put back last when absent), the input a JSON copy; frozen all through, since
 * callers share it. own-seals.test.ts holds it equal to the full check's decode, key order included.
 */
function asDecoded(e: OutboxEntry): OutboxEntry {
  const json = JSON.stringify(e.input) as string | undefined;
  const input = json === undefined ? undefined : deepFreeze(JSON.parse(json) as unknown);
  // A literal and added keys, not spreads: a spread of this many keys costs more than the decode it spares.
  const out: { -readonly [K in keyof OutboxEntry]?: OutboxEntry[K] } = {
    key: e.key,
    invocationId: e.invocationId,
    toolId: e.toolId,
    principal: e.principal,
    tenant: e.tenant,
    inputHash: e.inputHash,
    input,
    inputRedacted: e.inputRedacted,
    effect: e.effect,
    idempotent: e.idempotent,
  };
  if (e.target !== undefined) out.target = e.target;
  if (e.edited !== undefined) out.edited = deepFreeze(JSON.parse(JSON.stringify(e.edited))) as NonNullable<OutboxEntry["edited"]>;
  out.intentHash = e.intentHash;
  out.at = e.at;
  out.state = e.state;
  out.boundary = e.boundary;
  out.attempts = e.attempts;
  out.updatedAt = e.updatedAt;
  if (e.grantId !== undefined) out.grantId = e.grantId;
  if (e.target === undefined) out.target = undefined;
  return Object.freeze(out) as OutboxEntry;
}

function deepFreeze(value: unknown): unknown {
  if (typeof value === "object" && value !== null) {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}
