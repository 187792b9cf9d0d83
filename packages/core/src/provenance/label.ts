/**
 * One argument against everything a session has seen: trusted when it is copied from trusted text
 * (or every address, link, code and identifier in it is), untrusted when it carries a run of
 * untrusted text, one of its atoms, or is copied whole from it, new otherwise. What is also in
 * trusted text does not count against a value: the user said it too.
 */
import { atoms, containsBounded } from "./derive.js";
import { fingerprints, K, normalizeForMatch } from "./fingerprint.js";
import type { SeenIndex } from "./seen-index.js";
import type { SeenEntry, SessionState } from "./session.js";
import type { ProvenanceLabel } from "./types.js";

export interface ValueProvenance {
  readonly label: ProvenanceLabel;
  /** As a destination: copied from trusted text, or every atom of it is in trusted text (a display name around a trusted address is not the destination). */
  readonly trustedDestination: boolean;
  readonly trustedFrom: readonly SeenEntry[];
  readonly untrustedFrom: readonly SeenEntry[];
  /** Atoms found in untrusted text only, and `copied` / `text` for a whole copy or a shared run. */
  readonly found: readonly string[];
}

const NOTHING: ValueProvenance = Object.freeze({ label: "new", trustedDestination: false, trustedFrom: [], untrustedFrom: [], found: [] });

/** `destination`: a short value copied whole from untrusted text counts (an id, a name); elsewhere a short word shared by chance does not. */
export function labelValue(value: string, state: SessionState, destination: boolean): ValueProvenance {
  const normalized = normalizeForMatch(value);
  if (normalized === "") return NOTHING;
  const prints = normalized.length >= K ? fingerprints(normalized) : new Set<number>();
  const valueAtoms = atoms(normalized);
  const entries = [...candidates(state.host, normalized, prints, valueAtoms), ...candidates(state.outputs, normalized, prints, valueAtoms)];
  const trustedFrom: SeenEntry[] = [];
  const trustedAtoms = new Set<string>();
  const trustedPrints = new Set<number>();
  let copiedTrusted = false;
  const perUntrusted: { entry: SeenEntry; copied: boolean; atoms: string[]; prints: number[] }[] = [];
  for (const entry of entries) {
    const copied = containsBounded(entry.normalized, normalized);
    const shared = [...valueAtoms].filter((a) => entry.atoms.has(a) || containsBounded(entry.normalized, a));
    const sharedPrints = [...prints].filter((h) => entry.fingerprints.has(h));
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
  const allAtomsTrusted = valueAtoms.size > 0 && [...valueAtoms].every((a) => trustedAtoms.has(a));
  const trustedDestination = copiedTrusted || allAtomsTrusted;
  if (copiedTrusted) return { label: "trusted", trustedDestination, trustedFrom, untrustedFrom: [], found: [] };
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
  if (allAtomsTrusted) return { label: "trusted", trustedDestination, trustedFrom, untrustedFrom, found: [] };
  return { label: "new", trustedDestination, trustedFrom, untrustedFrom, found: [] };
}

/** The texts of `index` that hold the value, one of its atoms or one of its fingerprints, in the order seen. */
function candidates(index: SeenIndex<SeenEntry>, normalized: string, prints: ReadonlySet<number>, valueAtoms: ReadonlySet<string>): SeenEntry[] {
  const ids = new Set<number>();
  index.containing(normalized, ids);
  for (const a of valueAtoms) index.containing(a, ids);
  index.sharing(prints, ids);
  return [...ids].sort((a, b) => a - b).map((id) => index.entries[id]!);
}
