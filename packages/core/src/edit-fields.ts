/**
 * The fields an approver may edit, as JSON Pointers (RFC 6901) into a tool's input: `""` is the
 * whole input, `/to` one member, `/start/dateTime` a member of a member. A pointer covers itself and
 * everything under it. Shared by `defineTool` (manifest `edits`), `defineProfile` (`approvalEdits`)
 * and the approval desk.
 */

/** At most this many pointers in one manifest's or profile entry's list. */
export const MAX_EDIT_FIELDS = 32;
const POINTER = /^(?:\/(?:[^~/]|~[01])*)*$/;

/** A syntactically valid JSON Pointer (`""` or `/a/b`, `~` only as `~0`/`~1`), at most 256 characters. */
export function isPointer(value: unknown): value is string {
  return typeof value === "string" && value.length <= 256 && POINTER.test(value);
}

/** The pointer's member names, unescaped. */
export function pointerSegments(pointer: string): string[] {
  return pointer === ""
    ? []
    : pointer
        .slice(1)
        .split("/")
        .map((s) => s.replaceAll("~1", "/").replaceAll("~0", "~"));
}

/** Escapes one member name for a pointer. */
export function pointerSegment(name: string): string {
  return name.replaceAll("~", "~0").replaceAll("/", "~1");
}

/** True when `outer` is `inner` or an ancestor of it (`""` covers everything). */
export function covers(outer: string, inner: string): boolean {
  return outer === "" || inner === outer || inner.startsWith(`${outer}/`);
}

/**
 * Two lists narrowed to what both allow: for each pair where one covers the other, the narrower
 * one. Sorted, without repeats or pointers another kept pointer already covers.
 */
export function intersectFields(a: readonly string[], b: readonly string[]): readonly string[] {
  const kept = new Set<string>();
  for (const x of a)
    for (const y of b)
      if (covers(x, y)) kept.add(y);
      else if (covers(y, x)) kept.add(x);
  const sorted = [...kept].sort();
  return Object.freeze(sorted.filter((p) => !sorted.some((q) => q !== p && covers(q, p))));
}

/**
 * Problems of a list of pointers as a manifest or profile declares it: an array of at most
 * {@link MAX_EDIT_FIELDS} distinct valid pointers, at least one.
 */
export function fieldListProblems(fields: unknown, what: string): string[] {
  if (!Array.isArray(fields)) return [`${what} must be an array of JSON Pointers (or false)`];
  const problems: string[] = [];
  if (fields.length === 0) problems.push(`${what} names no field (write false to refuse edits)`);
  if (fields.length > MAX_EDIT_FIELDS) problems.push(`${what} names ${fields.length} fields; at most ${MAX_EDIT_FIELDS}`);
  for (const f of fields.slice(0, MAX_EDIT_FIELDS + 1)) {
    if (!isPointer(f)) problems.push(`${what}: ${JSON.stringify(f)?.slice(0, 80)} is not a JSON Pointer ("" or "/member/…")`);
  }
  if (new Set(fields).size !== fields.length) problems.push(`${what} repeats a field`);
  return problems;
}

type JsonSchema = Readonly<Record<string, unknown>>;

/** The schemas a value matching `schema` may match: itself and its anyOf/oneOf/allOf members. */
function alternatives(schema: unknown, depth = 0): JsonSchema[] {
  if (typeof schema !== "object" || schema === null || depth > 4) return [];
  const s = schema as JsonSchema;
  const found: JsonSchema[] = [s];
  for (const key of ["anyOf", "oneOf", "allOf"]) {
    const list = s[key];
    if (Array.isArray(list)) for (const member of list) found.push(...alternatives(member, depth + 1));
  }
  return found;
}

/**
 * True when `pointer` names a member of the input through `properties` alone (never into an array,
 * a record's open keys or a reference), so an editable field is always a declared member.
 */
export function namesProperty(inputSchema: unknown, pointer: string): boolean {
  let level = alternatives(inputSchema);
  for (const segment of pointerSegments(pointer)) {
    const next: JsonSchema[] = [];
    for (const s of level) {
      const props = s.properties;
      if (typeof props === "object" && props !== null && Object.hasOwn(props, segment)) {
        next.push(...alternatives((props as JsonSchema)[segment]));
      }
    }
    if (next.length === 0) return false;
    level = next;
  }
  return true;
}

/** Problems of a manifest's `edits`: `false`, or `{ fields }` whose every pointer names a declared member of the input. */
export function editsProblems(edits: unknown, inputSchema: () => unknown): string[] {
  if (edits === false) return [];
  if (typeof edits !== "object" || edits === null || Array.isArray(edits)) return ["edits must be false or { fields: [JSON Pointers] }"];
  const extra = Object.keys(edits).filter((k) => k !== "fields");
  if (extra.length > 0) return [`edits knows only fields (not ${extra.map((k) => JSON.stringify(k)).join(", ")})`];
  const fields: unknown = (edits as { fields?: unknown }).fields;
  const problems = fieldListProblems(fields, "edits.fields");
  if (problems.length > 0) return problems;
  let schema: unknown;
  try {
    schema = inputSchema();
  } catch {
    return ["edits needs an input schema that has a JSON Schema"];
  }
  for (const f of fields as string[]) {
    if (!namesProperty(schema, f)) problems.push(`edits.fields: ${JSON.stringify(f)} names no declared member of the input (no array items, no open keys)`);
  }
  return problems;
}
