/**
 * Where a value came from: compared with every text a session has seen (what the host declared
 * trusted, what each tool returned), a value is copied from a source (the whole value is in it),
 * carries text from it (a run of its text, or one of its atoms: an address, a link, a code), or
 * neither. Labels and policy are the caller's; this reports the evidence.
 */
import { fingerprints, K, normalizeForMatch } from "./fingerprint.js";

/** A text the session has seen. */
export interface SeenText {
  readonly id: string;
  readonly text: string;
}

/** How a value relates to one seen text. */
export interface Evidence {
  readonly id: string;
  /** The whole value is in the text (after normalising). */
  readonly copied: boolean;
  /** Share of the value's fingerprints found in the text (0 for a value shorter than `K`). */
  readonly coverage: number;
  /** Atoms (addresses, links, codes, long identifiers) of the value that the text holds too. */
  readonly atoms: readonly string[];
}

// Addresses, links, runs of 4+ digits (codes, numbers), identifiers of 16+ letters, digits, - and _.
const ATOM = /[\p{L}\p{N}._%+-]+@[\p{L}\p{N}.-]+\.[\p{L}]{2,}|[a-z][a-z0-9+.-]*:\/\/[^\s<>()]+|\p{N}{4,}|[\p{L}\p{N}_-]{16,}/gu;

/** The atoms of normalised text, trailing sentence punctuation removed. */
export function atoms(normalized: string): Set<string> {
  const out = new Set<string>();
  for (const match of normalized.matchAll(ATOM)) out.add(match[0].replace(/[.,;:!?]+$/u, ""));
  return out;
}

/** A seen text prepared once for many comparisons. */
export interface PreparedText {
  readonly id: string;
  readonly normalized: string;
  readonly fingerprints: ReadonlySet<number>;
  readonly atoms: ReadonlySet<string>;
}

export function prepareText(seen: SeenText): PreparedText {
  const normalized = normalizeForMatch(seen.text);
  return { id: seen.id, normalized, fingerprints: fingerprints(normalized), atoms: atoms(normalized) };
}

const WORD = /[\p{L}\p{N}]/u;

/** Whether the occurrence of `needle` at `at` in `haystack` is not inside a longer word or number. */
export function boundedAt(haystack: string, at: number, needle: string): boolean {
  const before = haystack[at - 1] ?? "";
  const after = haystack[at + needle.length] ?? "";
  return !(WORD.test(before) && WORD.test(needle[0]!)) && !(WORD.test(after) && WORD.test(needle[needle.length - 1]!));
}

/** Whether `needle` occurs in `haystack` not inside a longer word or number. */
export function containsBounded(haystack: string, needle: string): boolean {
  for (let at = haystack.indexOf(needle); at !== -1; at = haystack.indexOf(needle, at + 1)) if (boundedAt(haystack, at, needle)) return true;
  return false;
}

/** A value prepared once for comparison with many texts. */
export interface PreparedValue {
  readonly normalized: string;
  /** Empty for a value shorter than `K` (short values are compared whole). */
  readonly prints: ReadonlySet<number>;
  readonly atoms: ReadonlySet<string>;
}

export function prepareValue(value: string): PreparedValue {
  const normalized = normalizeForMatch(value);
  return { normalized, prints: normalized.length >= K ? fingerprints(normalized) : new Set<number>(), atoms: atoms(normalized) };
}

/** What one text holds of a value: the whole of it, which of its atoms, which of its fingerprints. */
export function evidenceIn(value: PreparedValue, text: PreparedText): { copied: boolean; atoms: string[]; prints: number[] } {
  return {
    copied: containsBounded(text.normalized, value.normalized),
    atoms: [...value.atoms].filter((a) => text.atoms.has(a) || containsBounded(text.normalized, a)),
    prints: [...value.prints].filter((h) => text.fingerprints.has(h)),
  };
}

/** The evidence linking `value` to each seen text it relates to (texts it does not relate to are left out). */
export function derive(value: string, seen: readonly PreparedText[]): Evidence[] {
  const prepared = prepareValue(value);
  if (prepared.normalized === "") return [];
  const out: Evidence[] = [];
  for (const text of seen) {
    const { copied, atoms: shared, prints } = evidenceIn(prepared, text);
    const share = prepared.prints.size === 0 ? 0 : prints.length / prepared.prints.size;
    if (copied || share > 0 || shared.length > 0) out.push({ id: text.id, copied, coverage: copied && prepared.prints.size > 0 ? 1 : share, atoms: shared });
  }
  return out;
}
