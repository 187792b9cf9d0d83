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

// Invisible or formatting characters a copy may add or drop: control characters (not the white
// space ones), zero-widths, bidi controls, the soft hyphen, the BOM, variation selectors and tags.
const INVISIBLE =
  /[\u0000-\u0008\u000e-\u001f\u007f-\u009f\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0]|\udb40[\udc00-\udfff]/g;
// Quotes, backticks, emphasis and list or quote markers: a model wraps or unwraps text in them.
const MARKS = /["'`*_~>\u2018\u2019\u201a\u201b\u201c\u201d\u201e\u201f\u00ab\u00bb\u2039\u203a\u300c\u300d]/g;

/**
 * The text as a destination is compared: NFKC, invisible characters removed, lower case, white
 * space runs as one space, trimmed — nothing else, so `j_smith@` and `jsmith@` stay two mailboxes.
 */
export function normalizeStrict(text: string): string {
  return text.normalize("NFKC").replace(INVISIBLE, "").toLowerCase().replace(/\s+/gu, " ").trim();
}

/** The text as compared: NFKC, invisible characters and marks removed, lower case, whitespace runs as one space, trimmed. */
export function normalizeForMatch(text: string): string {
  return text.normalize("NFKC").replace(INVISIBLE, "").replace(MARKS, "").toLowerCase().replace(/\s+/gu, " ").trim();
}

const BASE = 0x01000193;
// BASE^(K-1) mod 2^32: what the character leaving a window weighed.
const OUTGOING = Array.from({ length: K - 1 }).reduce<number>((p) => Math.imul(p, BASE), 1);

/** A 32-bit finaliser: the rolling hash's low bits are weak, and winnowing keeps minima. */
function mix(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

/**
 * The winnowed fingerprints of already normalised text: for each window of `W` k-gram hashes the
 * rightmost smallest. Text shorter than `K` has none (short values are compared whole). The k-gram
 * hashes roll (one multiply per character) and the window minima come from a monotonic queue, so
 * the cost is linear in the text, whatever `K` and `W`.
 */
export function fingerprints(normalized: string): Set<number> {
  const out = new Set<number>();
  const count = normalized.length - K + 1;
  if (count <= 0) return out;
  const hashes = new Uint32Array(count);
  let rolling = 0;
  for (let i = 0; i < K; i++) rolling = (Math.imul(rolling, BASE) + normalized.charCodeAt(i)) | 0;
  hashes[0] = mix(rolling);
  for (let i = 1; i < count; i++) {
    rolling = (Math.imul(rolling - Math.imul(normalized.charCodeAt(i - 1), OUTGOING), BASE) + normalized.charCodeAt(i + K - 1)) | 0;
    hashes[i] = mix(rolling);
  }
  // Indices of hashes in the current window, their hashes increasing; equal ones keep the rightmost.
  const queue = new Int32Array(count);
  let head = 0;
  let tail = 0;
  const window = Math.min(W, count);
  for (let i = 0; i < count; i++) {
    while (tail > head && hashes[queue[tail - 1]!]! >= hashes[i]!) tail--;
    queue[tail++] = i;
    if (queue[head]! <= i - window) head++;
    if (i >= window - 1) out.add(hashes[queue[head]!]!);
  }
  return out;
}
