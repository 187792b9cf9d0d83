/**
 * What a session has seen, indexed so that judging a value costs what the value touches, not the
 * session's size: texts concatenated in chunks searched natively (a copy or an atom is found with
 * `indexOf`, not by looping over every text), and fingerprints mapped to the texts holding them.
 */
import { boundedAt, type PreparedText } from "./derive.js";

const SEPARATOR = "\u0000"; // never in normalised text's words: a match cannot run from one text into the next
const CHUNK_CHARS = 1024 * 1024;
/** Occurrences looked at per search: past it, texts further on are not reported (a value that common is no evidence of much). */
const MAX_OCCURRENCES = 4096;

interface Chunk {
  parts: string[];
  /** Offset of each text in the chunk, and which entry it is. */
  starts: number[];
  ids: number[];
  length: number;
  flat: string | undefined;
}

export class SeenIndex<E extends PreparedText> {
  readonly entries: E[] = [];
  readonly #chunks: Chunk[] = [];
  readonly #prints = new Map<number, number[]>();

  add(entry: E): void {
    const id = this.entries.push(entry) - 1;
    let chunk = this.#chunks.at(-1);
    if (chunk === undefined || (chunk.length > 0 && chunk.length + entry.normalized.length > CHUNK_CHARS)) {
      chunk = { parts: [], starts: [], ids: [], length: 0, flat: undefined };
      this.#chunks.push(chunk);
    }
    chunk.starts.push(chunk.length);
    chunk.ids.push(id);
    chunk.parts.push(entry.normalized);
    chunk.length += entry.normalized.length + 1;
    chunk.flat = undefined;
    for (const h of entry.fingerprints) {
      const list = this.#prints.get(h);
      if (list === undefined) this.#prints.set(h, [id]);
      else if (list.at(-1) !== id) list.push(id);
    }
  }

  /** Entries holding `needle` not inside a longer word or number (`boundedAt`, as `containsBounded`). */
  containing(needle: string, into: Set<number>): void {
    if (needle === "") return;
    let seen = 0;
    for (const chunk of this.#chunks) {
      chunk.flat ??= chunk.parts.join(SEPARATOR) + SEPARATOR;
      const text = chunk.flat;
      for (let at = text.indexOf(needle); at !== -1; at = text.indexOf(needle, at + 1)) {
        if (++seen > MAX_OCCURRENCES) return;
        if (boundedAt(text, at, needle)) into.add(chunk.ids[lastAtOrBefore(chunk.starts, at)]!);
      }
    }
  }

  /** Entries holding any of `prints`. */
  sharing(prints: Iterable<number>, into: Set<number>): void {
    for (const h of prints) for (const id of this.#prints.get(h) ?? []) into.add(id);
  }
}

function lastAtOrBefore(sorted: readonly number[], value: number): number {
  let lo = 0;
  let hi = sorted.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (sorted[mid]! <= value) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}
