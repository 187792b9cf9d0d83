// The edit form of a pending request: one field per editable JSON Pointer, a string member as raw
// text and anything else as JSON, read back strictly (a field the form did not offer, or JSON that
// does not parse, is refused by name; nothing is silently dropped). No script: plain form fields.
import type { ApprovalRequest } from "@toolgate/core";
import { h, text, type Markup } from "./html.js";
import { renderValue, visible } from "./preview.js";

/** One field of the form: the pointer it edits, how it is typed, its current value (absent: `present` false). */
export interface EditField {
  readonly pointer: string;
  readonly kind: "text" | "json";
  readonly present: boolean;
  readonly value: unknown;
}

/** What the form's fields are named: `f:` and the JSON Pointer (`f:/body`, `f:` for the whole input). */
export const FIELD_PREFIX = "f:";
/** Form members every edit form may carry besides its fields. */
const FORM_KEYS = new Set(["csrf", "version", "previewHash", "ttl"]);

/** Why a request cannot be edited here; undefined when it can (the desk checks all of it again). */
export function notEditable(r: ApprovalRequest): string | undefined {
  if (r.status !== "pending") return `This request is ${r.status}; only a pending request can be edited.`;
  if (r.kind !== "call") return "A held result is released or not; it cannot be edited.";
  if (!Array.isArray(r.editable) || r.editable.length === 0) return `${r.toolId} does not allow edits here (tool or profile).`;
  if (r.input === undefined) return "This request does not hold the input as asked, so it cannot be edited.";
  if (r.inputRedacted === true) return "The input as asked held a secret and was stored redacted; it cannot be edited.";
  return undefined;
}

/** The version an edit or approval starts from: the latest edit, or the input as asked (version 0). */
export function currentVersion(r: ApprovalRequest): { readonly version: number; readonly previewHash: string; readonly input: unknown } {
  return r.edit
    ? { version: r.edit.version, previewHash: r.edit.previewHash, input: r.edit.input }
    : { version: 0, previewHash: r.previewHash, input: r.input };
}

/** RFC 6901: `/a~1b/c~0d` → ["a/b", "c~d"]; `""` → []. */
export function pointerParts(pointer: string): string[] {
  if (pointer === "") return [];
  return pointer
    .slice(1)
    .split("/")
    .map((p) => p.replace(/~1/g, "/").replace(/~0/g, "~"));
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The JSON Schema of the member a pointer names (the `properties` chain), when there is one. */
function schemaAt(schema: unknown, parts: readonly string[]): Record<string, unknown> | undefined {
  let at: unknown = schema;
  for (const part of parts) {
    const properties = isObject(at) && isObject(at.properties) ? at.properties : undefined;
    if (!properties || !Object.prototype.hasOwnProperty.call(properties, part)) return undefined;
    at = properties[part];
  }
  return isObject(at) ? at : undefined;
}

function valueAt(input: unknown, parts: readonly string[]): { present: boolean; value: unknown } {
  let at: unknown = input;
  for (const part of parts) {
    if (!isObject(at) || !Object.prototype.hasOwnProperty.call(at, part)) return { present: false, value: undefined };
    at = at[part];
  }
  return { present: true, value: at };
}

/**
 * The fields for `editable` over `input`: with `""` (the whole input) one field per member of an
 * object input and of the schema's properties, else one per pointer. A member the schema types as a
 * string is raw text; everything else JSON.
 */
export function editFields(editable: readonly string[], input: unknown, schema: unknown): EditField[] {
  const properties = schemaAt(schema, [])?.properties;
  const members = isObject(input) ? [...new Set([...Object.keys(input), ...(isObject(properties) ? Object.keys(properties) : [])])] : [];
  const pointers = editable.includes("") && isObject(input) ? members.map((k) => `/${k.replace(/~/g, "~0").replace(/\//g, "~1")}`) : [...editable];
  return pointers.map((pointer) => {
    const parts = pointerParts(pointer);
    const { present, value } = valueAt(input, parts);
    const declared = schemaAt(schema, parts)?.type;
    const kind = declared === "string" || (declared === undefined && typeof value === "string") ? "text" : "json";
    return { pointer, kind, present, value };
  });
}

/** Top-level members no field edits: shown read-only beside the form. */
export function fixedMembers(fields: readonly EditField[], input: unknown): [string, unknown][] {
  if (!isObject(input) || fields.some((f) => f.pointer === "")) return [];
  const edited = new Set(fields.map((f) => pointerParts(f.pointer)[0]));
  return Object.entries(input).filter(([key]) => !edited.has(key));
}

/** The fields as form controls; every value escaped (and a leading newline kept: the parser drops the first). */
export function renderFields(fields: readonly EditField[], input: unknown): Markup {
  const fixed = fixedMembers(fields, input);
  return h`${fields.map((f) => {
    const shown = f.present ? (f.kind === "text" && typeof f.value === "string" ? f.value : JSON.stringify(f.value, null, 2)) : "";
    const rows = Math.min(20, Math.max(2, shown.split("\n").length + 1));
    return h`<div class="field" data-pointer="${f.pointer}"><label for="${`f-${f.pointer}`}"><code>${visible(f.pointer === "" ? "(whole input)" : f.pointer)}</code> <span class="kind">${
      f.kind === "text" ? "text" : "JSON"
    }${f.present ? "" : ", absent: leave empty to keep it absent"}</span></label>
<textarea id="${`f-${f.pointer}`}" name="${FIELD_PREFIX}${f.pointer}" rows="${rows}" spellcheck="false">\n${shown}</textarea></div>`;
  })}${
    fixed.length > 0
      ? h`<div class="fixed"><p>Not editable here:</p><dl class="facts">${fixed.map(([k, v]) => h`<dt>${visible(k)}</dt><dd>${renderValue(v)}</dd>`)}</dl></div>`
      : ""
  }`;
}

/** A value with every `\r\n` as `\n` (browsers send a textarea's line breaks as CRLF). */
const lf = (s: string) => s.replace(/\r\n/g, "\n");

/** A field's text back as a value, or why not. */
function fieldValue(field: EditField, raw: string): { set: unknown } | { remove: true } | { error: string } {
  if (field.kind === "text") {
    const base = typeof field.value === "string" ? field.value : undefined;
    if (base !== undefined && lf(base) === lf(raw)) return { set: base };
    if (!field.present && raw === "") return { remove: true };
    // The base's line breaks are kept: CRLF only where the text had CRLF.
    return { set: base !== undefined && base.includes("\r\n") ? lf(raw).replace(/\n/g, "\r\n") : lf(raw) };
  }
  if (raw.trim() === "") return field.pointer === "" ? { error: "the whole input cannot be empty" } : { remove: true };
  try {
    return { set: JSON.parse(raw) as unknown };
  } catch (error) {
    return { error: `${field.pointer} is not JSON: ${error instanceof Error ? error.message.slice(0, 200) : "unreadable"}` };
  }
}

function withValue(input: unknown, parts: readonly string[], change: { set: unknown } | { remove: true }): unknown {
  if (parts.length === 0) return "set" in change ? change.set : undefined;
  const [head, ...rest] = parts as [string, ...string[]];
  const copy: Record<string, unknown> = isObject(input) ? { ...input } : {};
  const next = withValue(copy[head], rest, change);
  if (next === undefined && rest.length === 0) delete copy[head];
  else copy[head] = next;
  return copy;
}

/**
 * The edited input from a posted form: `base` with each field's value set (or removed when a JSON
 * field, or an absent text member, is left empty). A field name the form did not offer, a member
 * that is neither a field nor the form's own, or JSON that does not parse → an error naming it.
 */
export function readEditForm(form: Readonly<Record<string, unknown>>, fields: readonly EditField[], base: unknown): { input: unknown } | { error: string } {
  const byName = new Map(fields.map((f) => [`${FIELD_PREFIX}${f.pointer}`, f]));
  for (const key of Object.keys(form)) {
    if (FORM_KEYS.has(key) || byName.has(key)) continue;
    const named = text(key).slice(0, 120);
    return { error: key.startsWith(FIELD_PREFIX) ? `${named.slice(FIELD_PREFIX.length)} is not a field you may edit here` : `unexpected form member ${named}` };
  }
  let input = base;
  for (const [name, field] of byName) {
    const raw = form[name];
    if (raw === undefined) continue;
    if (typeof raw !== "string") return { error: `${field.pointer} must be text` };
    const value = fieldValue(field, raw);
    if ("error" in value) return value;
    if ("remove" in value && !field.present) continue;
    input = withValue(input, pointerParts(field.pointer), value);
  }
  return { input };
}
