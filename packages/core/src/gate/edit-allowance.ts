/**
 * Which fields of a tool's input an approver may edit: the manifest's `edits` (default the whole
 * input), narrowed by the profile's `approvalEdits` for the tool id and for its `family.*`. Both
 * are frozen, so the answer is decided once per manifest and profile.
 */
import { covers, fieldListProblems, intersectFields } from "../edit-fields.js";
import type { AnyToolManifest } from "../manifest.js";
import type { Profile } from "../profile.js";

/** `false`: no edit; otherwise the JSON Pointers an edit may change (`""` = the whole input). */
export type Editable = false | readonly string[];

const WHOLE: readonly string[] = Object.freeze([""]);
interface Memo {
  none?: Editable;
  readonly profiles: WeakMap<Profile, Editable>;
}
const byManifest = new WeakMap<object, Memo>();

/** What the manifest allows, before any profile: `false`, its list, or the whole input when it declares nothing. */
function manifestFields(manifest: AnyToolManifest): Editable {
  const edits: unknown = manifest.edits;
  if (edits === undefined) return WHOLE;
  if (edits === false || typeof edits !== "object" || edits === null) return false;
  const fields: unknown = (edits as { fields?: unknown }).fields;
  // A hand-built manifest's list that defineTool would refuse allows nothing (fail closed).
  return fieldListProblems(fields, "edits.fields").length === 0 ? Object.freeze([...(fields as string[])]) : false;
}

/** The profile's entry for a tool id or family pattern: undefined (no say), `false`, or a list; malformed → `false`. */
function profileEntry(profile: Profile, key: string): Editable | undefined {
  const all: unknown = (profile as { approvalEdits?: unknown }).approvalEdits;
  if (all === undefined) return undefined;
  if (typeof all !== "object" || all === null || Array.isArray(all)) return false;
  if (!Object.hasOwn(all, key)) return undefined;
  const entry: unknown = (all as Record<string, unknown>)[key];
  if (entry === false) return false;
  return fieldListProblems(entry, key).length === 0 ? (entry as readonly string[]) : false;
}

function compute(manifest: AnyToolManifest, profile: Profile | undefined): Editable {
  let fields = manifestFields(manifest);
  if (profile === undefined || fields === false) return fields;
  const dot = manifest.id.indexOf(".");
  for (const key of [manifest.id, dot > 0 ? `${manifest.id.slice(0, dot)}.*` : undefined]) {
    if (key === undefined) continue;
    const entry = profileEntry(profile, key);
    if (entry === undefined) continue;
    if (entry === false) return false;
    fields = intersectFields(fields, entry);
    if (fields.length === 0) return false;
  }
  return fields;
}

/**
 * The fields of `manifest`'s input an approver may edit under `profile` (manifest ∩ the profile's
 * entries for the tool and its family). `false` when nothing may be edited. Cached per manifest
 * and profile.
 */
export function editableFor(manifest: AnyToolManifest, profile: Profile | undefined): Editable {
  let memo = byManifest.get(manifest);
  if (memo === undefined) {
    memo = { profiles: new WeakMap() };
    byManifest.set(manifest, memo);
  }
  if (profile === undefined) return (memo.none ??= compute(manifest, undefined));
  let found = memo.profiles.get(profile);
  if (found === undefined) {
    found = compute(manifest, profile);
    memo.profiles.set(profile, found);
  }
  return found;
}

/** The paths of `paths` no pointer of `editable` covers (all of them when `editable` is false); empty = all allowed. */
export function pathsAllowed(editable: Editable, paths: readonly string[]): readonly string[] {
  if (editable === false) return [...paths];
  return paths.filter((p) => !editable.some((e) => covers(e, p)));
}
