/**
 * One argument against everything a session has seen. Content is trusted when it is copied whole
 * from trusted text; a destination when it is copied whole from trusted text compared strictly
 * (only case, compatibility forms, invisible characters and white space undone), or is a display
 * name around such an address. A value is untrusted when it carries a run of untrusted text, one of
 * its atoms (addresses, links, codes, long ids), or is copied whole from it; new otherwise. What is
 * also in trusted text does not count against a value: the user said it too.
 */
import { evidenceIn, prepareValue } from "./derive.js";
import { K, normalizeStrict } from "./fingerprint.js";
import type { SeenIndex } from "./seen-index.js";
import type { SeenEntry, SessionState } from "./session.js";
import type { ProvenanceLabel } from "./types.js";

export interface ValueProvenance {
  readonly label: ProvenanceLabel;
  /** As a destination: copied whole from trusted text under the strict comparison (or a display name around such an address). */
  readonly trustedDestination: boolean;
  readonly trustedFrom: readonly SeenEntry[];
  readonly untrustedFrom: readonly SeenEntry[];
  /** Atoms found in untrusted text only, and `copied` / `text` for a whole copy or a shared run. */
  readonly found: readonly string[];
}

const NOTHING: ValueProvenance = Object.freeze({ label: "new", trustedDestination: false, trustedFrom: [], untrustedFrom: [], found: [] });
/** Texts looked at per value and index; atoms per value. Past them a value is not checked whole, and is not trusted. */
const MAX_CANDIDATES = 64;
const MAX_ATOMS = 32;
const TOO_MANY: ValueProvenance = Object.freeze({
  label: "untrusted",
  trustedDestination: false,
  trustedFrom: [],
  untrustedFrom: [],
  found: ["too many addresses, links and codes to check"],
});
// `Name <address>`: the address is the destination, the name is only shown.
const DISPLAY_FORM = /^[^<>@]*<\s*([^<>\s]+)\s*>$/u;
// Characters that continue an address or a path: a match next to one is part of a longer destination.
const JOINS = /[\p{L}\p{N}_%+@-]/u;
const WORD = /[\p{L}\p{N}]/u;

/** `needle` in `haystack` not continued on either side by an address's or path's characters (a `.` joins only between them). */
export function containsStrict(haystack: string, needle: string): boolean {
  for (let at = haystack.indexOf(needle); at !== -1; at = haystack.indexOf(needle, at + 1)) {
    const before = haystack[at - 1] ?? "";
    const after = haystack[at + needle.length] ?? "";
    const joinsBefore = JOINS.test(before) || (before === "." && WORD.test(haystack[at - 2] ?? ""));
    const joinsAfter = JOINS.test(after) || (after === "." && WORD.test(haystack[at + needle.length + 1] ?? ""));
    if (!joinsBefore && !joinsAfter) return true;
  }
  return false;
}

/** `destination`: a short value copied whole from untrusted text counts (an id, a name); elsewhere a short word shared by chance does not. */
export function labelValue(value: string, state: SessionState, destination: boolean): ValueProvenance {
  const prepared = prepareValue(value);
  const { normalized, prints, atoms: valueAtoms } = prepared;
  if (normalized === "") return NOTHING;
  if (valueAtoms.size > MAX_ATOMS) return TOO_MANY;
  const entries = [...candidates(state.host, normalized, prints, valueAtoms), ...candidates(state.outputs, normalized, prints, valueAtoms)];
  const trustedFrom: SeenEntry[] = [];
  const trustedAtoms = new Set<string>();
  const trustedPrints = new Set<number>();
  let copiedTrusted = false;
  const perUntrusted: { entry: SeenEntry; copied: boolean; atoms: string[]; prints: number[] }[] = [];
  for (const entry of entries) {
    const { copied, atoms: shared, prints: sharedPrints } = evidenceIn(prepared, entry);
    if (!copied && shared.length === 0 && sharedPrints.length === 0) continue;
    if (entry.source.untrusted) {
      perUntrusted.push({ entry, copied, atoms: shared, prints: sharedPrints });
      continue;
    }
    trustedFrom.push(entry);
    copiedTrusted ||= copied;
    for (const a of shared) trustedAtoms.add(a);
    for (const h of sharedPrints) trustedPrints.add(h);
  }
  const trustedDestination = destination && strictlyTrusted(value, trustedFrom, state);
  if (destination ? trustedDestination : copiedTrusted) return { label: "trusted", trustedDestination, trustedFrom, untrustedFrom: [], found: [] };
  const found = new Set<string>();
  const untrustedFrom: SeenEntry[] = [];
  for (const u of perUntrusted) {
    const atomsOnly = u.atoms.filter((a) => !trustedAtoms.has(a));
    const printsOnly = u.prints.filter((h) => !trustedPrints.has(h));
    const wholeCopy = u.copied && (destination || normalized.length >= K || valueAtoms.size > 0);
    if (atomsOnly.length === 0 && printsOnly.length === 0 && !wholeCopy) continue;
    untrustedFrom.push(u.entry);
    if (wholeCopy) found.add("copied");
    else if (printsOnly.length > 0) found.add("text");
    for (const a of atomsOnly) found.add(a);
  }
  if (untrustedFrom.length > 0) return { label: "untrusted", trustedDestination, trustedFrom, untrustedFrom, found: [...found] };
  return { label: "new", trustedDestination, trustedFrom, untrustedFrom, found: [] };
}

/**
 * A destination copied from trusted text compared strictly: the host's texts (few) looked at whole,
 * trusted outputs among the candidates found. A display name around an address counts as the address.
 */
function strictlyTrusted(value: string, trustedFrom: readonly SeenEntry[], state: SessionState): boolean {
  const strict = normalizeStrict(value);
  const address = DISPLAY_FORM.exec(strict)?.[1];
  const wanted = address === undefined ? [strict] : [strict, address];
  const texts = [...state.host.entries, ...trustedFrom.filter((e) => e.source.kind === "output")];
  return texts.some((e) => wanted.some((w) => w !== "" && containsStrict(e.strict, w)));
}

/** The texts of `index` that hold the value, one of its atoms or one of its fingerprints, in the order seen; at most `MAX_CANDIDATES`. */
function candidates(index: SeenIndex<SeenEntry>, normalized: string, prints: ReadonlySet<number>, valueAtoms: ReadonlySet<string>): SeenEntry[] {
  const ids = new Set<number>();
  index.containing(normalized, ids);
  for (const a of valueAtoms) index.containing(a, ids);
  index.sharing(prints, ids);
  return [...ids]
    .sort((a, b) => a - b)
    .slice(0, MAX_CANDIDATES)
    .map((id) => index.entries[id]!);
}
