/**
 * Text fingerprints for provenance: whether a value a model put into a call's argument carries
 * text it read somewhere. Both sides are normalised first (the trivial changes a model makes when
 * it copies: Unicode compatibility forms, case, invisible characters, quoting and emphasis marks,
 * runs of whitespace), then compared by winnowed k-gram hashes: any shared run of at least
 * `WINNOW_GUARANTEE` normalised characters is always found, and one of `K` characters usually is.
 */

/** Characters per k-gram. */
export const K = 12;
/** Window of the winnowing: one fingerprint is kept per window of `W` consecutive k-gram hashes. */
export const W = 13;
/** A shared run of this many normalised characters is always detected (`W + K - 1`). */
export const WINNOW_GUARANTEE = W + K - 1;

// Invisible or formatting characters a copy may add or drop: zero-widths, bidi controls, the soft
// hyphen, the BOM, variation selectors and tags.
const INVISIBLE =
  /[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0]|\udb40[\udc00-\udfff]/g;
// Quotes, backticks, emphasis and list or quote markers: a model wraps or unwraps text in them.
const MARKS = /["'`*_~>\u2018\u2019\u201a\u201b\u201c\u201d\u201e\u201f\u00ab\u00bb\u2039\u203a\u300c\u300d]/g;

/** The text as compared: NFKC, invisible characters and marks removed, lower case, whitespace runs as one space, trimmed. */
export function normalizeForMatch(text: string): string {
  return text.normalize("NFKC").replace(INVISIBLE, "").replace(MARKS, "").toLowerCase().replace(/\s+/gu, " ").trim();
}

/** FNV-1a over a string's UTF-16 units, as an unsigned 32-bit number. */
function hash(text: string, start: number, end: number): number {
  let h = 0x811c9dc5;
  for (let i = start; i < end; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/**
 * The winnowed fingerprints of already normalised text: for each window of `W` k-gram hashes the
 * rightmost smallest. Text shorter than `K` has none (short values are compared whole).
 */
export function fingerprints(normalized: string): Set<number> {
  const out = new Set<number>();
  const count = normalized.length - K + 1;
  if (count <= 0) return out;
  const hashes = new Array<number>(count);
  for (let i = 0; i < count; i++) hashes[i] = hash(normalized, i, i + K);
  if (count <= W) {
    out.add(Math.min(...hashes));
    return out;
  }
  for (let start = 0; start + W <= count; start++) {
    let min = start;
    for (let i = start + 1; i < start + W; i++) if (hashes[i]! <= hashes[min]!) min = i;
    out.add(hashes[min]!);
  }
  return out;
}

/** The share (0..1) of `value`'s fingerprints found in `source`'s; 0 when the value has none. */
export function coverage(value: ReadonlySet<number>, source: ReadonlySet<number>): number {
  if (value.size === 0) return 0;
  let found = 0;
  for (const h of value) if (source.has(h)) found++;
  return found / value.size;
}
