/**
 * The provenance of a call: every string of its input labelled against the session, the rules of
 * its manifest and profile applied, and a verdict with reasons a human can read.
 */
import { labelValue, type ValueProvenance } from "./label.js";
import { MEMBER_NAME, type SessionState } from "./session.js";
import type { FieldProvenance, ProvenanceRules, ProvenanceSource, ProvenanceVerdict } from "./types.js";

export type { CallProvenance, ProvenanceRules } from "./types.js";

const MAX_LEAVES = 2000;
/** Milliseconds one call's judgement may take; past it what is left is not checked, and the call is not trusted. */
const BUDGET_MS = 250;
const MAX_FIELDS_SHOWN = 50;
const MAX_SOURCES = 3;
const MAX_FOUND = 5;
const MAX_FOUND_CHARS = 80;

/** A judged call, before the step decides what to do with it. */
export interface Judgement {
  readonly verdict: ProvenanceVerdict;
  readonly violations: readonly string[];
  readonly fields: readonly FieldProvenance[];
}

/** The strings (and numbers, as text) of an input with their JSON Pointers. */
export function leavesOf(value: unknown): { leaves: { path: string; value: string }[]; truncated: boolean } {
  const out: { path: string; value: string }[] = [];
  let truncated = false;
  const walk = (v: unknown, path: string, depth: number): void => {
    if (out.length >= MAX_LEAVES || depth > 64) {
      truncated = true;
      return;
    }
    if (typeof v === "string") out.push({ path, value: v });
    else if (typeof v === "number" && Number.isFinite(v)) out.push({ path, value: String(v) });
    else if (Array.isArray(v)) v.forEach((item, i) => walk(item, `${path}/${i}`, depth + 1));
    else if (v !== null && typeof v === "object") {
      for (const [key, item] of Object.entries(v)) {
        const member = `${path}/${key.replace(/~/g, "~0").replace(/\//g, "~1")}`;
        // A key is data too when it is not a member's name: a record keyed by an address carries the address.
        if (!MEMBER_NAME.test(key)) out.push({ path: member, value: key });
        walk(item, member, depth + 1);
      }
    }
  };
  walk(value, "", 0);
  return { leaves: out, truncated };
}

/** A pattern (`/to`, `/attendees/*` + `/email`) covers a pointer when its segments are a prefix of the pointer's, `*` matching any one. */
export function covers(pattern: string, pointer: string): boolean {
  const want = pattern.split("/").slice(1);
  const have = pointer.split("/").slice(1);
  if (want.length > have.length) return false;
  return want.every((segment, i) => segment === "*" || segment === have[i]);
}

/** Pointers a rule names must be JSON Pointers (`*` allowed as a whole segment); the problems, if any. */
export function rulesProblems(rules: unknown, where: string, manifest = false): string[] {
  if (rules === undefined) return [];
  if (rules === null || typeof rules !== "object" || Array.isArray(rules)) return [`${where} must be an object { destinations?, content? }`];
  const problems: string[] = [];
  for (const [key, list] of Object.entries(rules)) {
    if (key === "fixed" && manifest) {
      if (!Array.isArray(list) || list.some((v) => typeof v !== "string" || v === "" || v.length > 256))
        problems.push(`${where}.fixed must be an array of names`);
      continue;
    }
    if (key !== "destinations" && key !== "content") {
      problems.push(`${where} has an unknown member ${JSON.stringify(key)} (destinations and content only${manifest ? ", and fixed" : ""})`);
      continue;
    }
    if (!Array.isArray(list) || list.some((p) => typeof p !== "string" || !/^(\/[^/]*)+$/.test(p))) {
      problems.push(`${where}.${key} must be an array of JSON Pointers into the input ("/to", "/attendees/*/email")`);
    }
  }
  return problems;
}

/** A checked rule set, copied and frozen. */
export function freezeRules(rules: ProvenanceRules): ProvenanceRules {
  return Object.freeze({
    ...(rules.destinations ? { destinations: Object.freeze([...rules.destinations]) } : {}),
    ...(rules.content ? { content: Object.freeze([...rules.content]) } : {}),
    ...(rules.fixed ? { fixed: Object.freeze([...rules.fixed]) } : {}),
  });
}

/** Two rule sets as one (a profile adds to a manifest's; it never takes away). */
export function mergeRules(a: ProvenanceRules | undefined, b: ProvenanceRules | undefined): ProvenanceRules {
  return {
    destinations: [...(a?.destinations ?? []), ...(b?.destinations ?? [])],
    content: [...(a?.content ?? []), ...(b?.content ?? [])],
    fixed: [...(a?.fixed ?? []), ...(b?.fixed ?? [])],
  };
}

function describe(source: ProvenanceSource): string {
  if (source.kind === "trusted") return source.label ? `trusted text "${source.label}"` : "trusted text";
  const what = source.described ? ` (${source.described})` : "";
  return `the ${source.untrusted ? "untrusted " : ""}output of ${source.toolId}${what}`;
}

function roleWord(role: FieldProvenance["role"]): string {
  return role === "destination" ? "destination" : role === "content" ? "content" : "value";
}

function why(path: string, role: FieldProvenance["role"], p: ValueProvenance, asDestination: boolean): string {
  const word = `${roleWord(role)} ${path || "/"}`;
  if (p.label === "untrusted") return p.untrustedFrom[0] ? `${word} taken from ${describe(p.untrustedFrom[0].source)}` : `${word} not checked: ${p.found[0]}`;
  if (asDestination || p.label === "trusted")
    return p.trustedFrom[0] ? `${word} from ${describe(p.trustedFrom[0].source)}` : `${word} is a name the tool keeps for the user's own`;
  return `${word} is new: found in nothing trusted the session has seen`;
}

const FIXED: ValueProvenance = Object.freeze({ label: "trusted", trustedDestination: true, trustedFrom: [], untrustedFrom: [], found: [] });

const shorten = (s: string) => (s.length > MAX_FOUND_CHARS ? `${s.slice(0, MAX_FOUND_CHARS - 1)}…` : s);

/**
 * Judge `input` under `rules` against the session. `declared`: the manifest names its destinations
 * and content, so other members (times, flags) are not judged; rules only a profile added never
 * narrow what is judged.
 */
export function judge(state: SessionState, input: unknown, rules: ProvenanceRules, declared: boolean): Judgement {
  const started = performance.now();
  state.prepare();
  const destinations = rules.destinations ?? [];
  const content = rules.content ?? [];
  const fixed = new Set(rules.fixed ?? []);
  const fields: FieldProvenance[] = [];
  const untrustedDestinations: string[] = [];
  const carrying: FieldProvenance[] = [];
  let anyUntrusted = false;
  // Every judged value from trusted data (destinations as destinations): what lets a call skip its approval.
  let allTrusted = true;
  const { leaves, truncated } = leavesOf(input);
  // What could not be looked at is not trusted: a destination past the bound would go unchecked.
  if (truncated) untrustedDestinations.push(`the input has more than ${MAX_LEAVES} strings or is nested deeper than 64: not every one could be checked`);
  for (const leaf of leaves) {
    if (performance.now() - started > BUDGET_MS) {
      untrustedDestinations.push(`the input took longer than ${BUDGET_MS} ms to check: not every string was checked`);
      allTrusted = false;
      break;
    }
    const role = destinations.some((d) => covers(d, leaf.path)) ? "destination" : content.some((d) => covers(d, leaf.path)) ? "content" : undefined;
    // Rules name what carries the effect and its content; the rest (times, flags, a calendar's name) is not judged.
    if (declared && role === undefined) continue;
    // A name the tool keeps for the user's own (`primary`) is trusted whoever else wrote it.
    const p = role === "destination" && fixed.has(leaf.value) ? FIXED : labelValue(leaf.value, state, role === "destination");
    const destinationOk = role === "destination" && p.trustedDestination;
    if (p.label === "untrusted") anyUntrusted = true;
    if (!(role === "destination" ? destinationOk : p.label === "trusted")) allTrusted = false;
    if (role !== "destination" && p.label === "trusted") continue; // trusted content says nothing a human needs
    const sources = [...p.untrustedFrom, ...p.trustedFrom].slice(0, MAX_SOURCES).map((e) => e.source);
    const field: FieldProvenance = {
      path: leaf.path,
      label: p.label,
      ...(role === undefined ? {} : { role }),
      sources,
      ...(p.found.length > 0 ? { found: p.found.slice(0, MAX_FOUND).map(shorten) } : {}),
      why: why(leaf.path, role, destinationOk && p.label !== "untrusted" ? { ...p, label: "trusted" } : p, destinationOk),
    };
    fields.push(field);
    if (role === "destination" && !destinationOk) untrustedDestinations.push(field.why);
    // A tool that declares nothing cannot say which argument is where its effect goes: untrusted data in any of them may be.
    else if (!declared && role === undefined && p.label === "untrusted")
      untrustedDestinations.push(`${field.why} (the tool declares no destinations: any argument may be one)`);
    if (p.label === "untrusted" && role !== "destination") carrying.push(field);
  }
  const violations = [...untrustedDestinations];
  if (untrustedDestinations.length > 0) {
    for (const f of carrying) if (f.role === "content") violations.push(`${f.why}, to a destination not from trusted data`);
  }
  const verdict: ProvenanceVerdict = violations.length > 0 ? "violation" : anyUntrusted || state.saturated ? "untrusted" : allTrusted ? "trusted" : "new";
  // Destinations first, then what carries untrusted data, then what is new; bounded for the preview.
  const rank = (f: FieldProvenance) => (f.role === "destination" ? 0 : f.label === "untrusted" ? 1 : 2);
  fields.sort((a, b) => rank(a) - rank(b));
  return { verdict, violations, fields: fields.slice(0, MAX_FIELDS_SHOWN) };
}
