/**
 * The approval desk's rules for an approver's edit that need no journal: the diff between the input
 * as asked and the edited input, and the checks on it (how many changes, which paths, no secret).
 */
import { canonicalJson } from "../canonical-json.js";
import { pointerSegment } from "../edit-fields.js";
import type { ApprovalChange } from "../journal/edit-types.js";

/** The most members one edit may change. */
export const MAX_EDIT_CHANGES = 64;

const isObject = (v: unknown): v is Readonly<Record<string, unknown>> => typeof v === "object" && v !== null && !Array.isArray(v);
const same = (a: unknown, b: unknown): boolean => a === b || canonicalJson(a) === canonicalJson(b);

function walk(asked: unknown, edited: unknown, path: string, out: ApprovalChange[]): void {
  if (isObject(asked) && isObject(edited)) {
    const names = [...new Set([...Object.keys(asked), ...Object.keys(edited)])].sort();
    for (const name of names) {
      const at = `${path}/${pointerSegment(name)}`;
      const had = Object.hasOwn(asked, name);
      const has = Object.hasOwn(edited, name);
      if (had && has) walk(asked[name], edited[name], at, out);
      else if (had) out.push({ path: at, before: asked[name] });
      else out.push({ path: at, after: edited[name] });
    }
    return;
  }
  if (!same(asked, edited)) out.push({ path, before: asked, after: edited });
}

/**
 * What an edit changed, against the input as asked: objects member by member, arrays and scalars
 * whole; each change a JSON Pointer with the value before (absent when the member was added) and
 * after (absent when it was removed). Sorted by member name at each level; empty when equal.
 * Both inputs are plain JSON (frozen by the gate).
 */
export function diffInputs(asked: unknown, edited: unknown): ApprovalChange[] {
  const out: ApprovalChange[] = [];
  walk(asked, edited, "", out);
  return out;
}
