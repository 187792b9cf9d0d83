/**
 * The edit half of in-band approval (see `askThroughElicitation`): which members of a pending
 * call's input a form may offer, what an answer changed, and the second question that shows the
 * changed call, re-checked by the desk, before it is approved.
 *
 * A form offers only top-level members the request lets an approver edit (`""` or the member's own
 * pointer) whose schema is a primitive MCP forms can carry (string, number, integer, boolean, a
 * string enum), with the input's current value as the default. Anything else is edited in the
 * console. Nothing here decides: the edited input goes to `gate.approvals.previewEdit` and
 * `grant({ edit, expect })`, which check it as they check any approver's edit.
 */
import { fenceUntrusted, scanForInjection, type ApprovalRequest, type ToolDescriptor } from "@toolgate/core";

type Primitive = string | number | boolean;

/** One member a form offers: its pointer (the form's property key), the MCP field, its current value. */
export interface OfferedField {
  readonly pointer: string;
  readonly name: string;
  readonly schema: Readonly<Record<string, unknown>>;
  readonly current: Primitive | undefined;
}

/** Characters a form field would hide or reorder (format and control characters other than line breaks and tabs). */
const HIDDEN = /[\p{Cf}\p{Zl}\p{Zp}]|[^\P{Cc}\n\t]/u;
const HIDDEN_ALL = new RegExp(HIDDEN.source, "gu");

/** Hidden characters written as `\uXXXX`, so a client shows them rather than acting on them. */
export function shown(text: string): string {
  return text.replace(HIDDEN_ALL, (ch) => {
    const code = ch.codePointAt(0)!;
    return code > 0xffff ? `\\u{${code.toString(16)}}` : `\\u${code.toString(16).padStart(4, "0")}`;
  });
}

const pointerOf = (name: string) => `/${name.replaceAll("~", "~0").replaceAll("/", "~1")}`;
const isRecord = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object" && !Array.isArray(v);
const finite = (v: unknown): v is number => typeof v === "number" && Number.isFinite(v);

/** The MCP form field for a member's JSON Schema, or undefined when a form cannot carry it. */
function formField(name: string, schema: unknown, current: unknown): Record<string, unknown> | undefined {
  if (!isRecord(schema)) return undefined;
  const type = schema["type"];
  const base: Record<string, unknown> = { title: shown(name), ...(typeof schema["description"] === "string" ? { description: schema["description"] } : {}) };
  if (type === "string" && Array.isArray(schema["enum"])) {
    const values = schema["enum"] as unknown[];
    if (!values.every((v) => typeof v === "string" && !HIDDEN.test(v))) return undefined;
    return { type: "string", ...base, enum: values, ...(typeof current === "string" ? { default: current } : {}) };
  }
  if (type === "string") {
    if (current !== undefined && (typeof current !== "string" || HIDDEN.test(current))) return undefined;
    const bounds = Object.fromEntries(["minLength", "maxLength"].filter((k) => finite(schema[k])).map((k) => [k, schema[k]]));
    return { type: "string", ...base, ...bounds, ...(current === undefined ? {} : { default: current }) };
  }
  if (type === "number" || type === "integer") {
    if (current !== undefined && !finite(current)) return undefined;
    const bounds = Object.fromEntries(
      ["minimum", "maximum"].filter((k) => finite(schema[k]) && Math.abs(schema[k] as number) <= Number.MAX_SAFE_INTEGER).map((k) => [k, schema[k]]),
    );
    return { type, ...base, ...bounds, ...(current === undefined ? {} : { default: current }) };
  }
  if (type === "boolean") {
    if (current !== undefined && typeof current !== "boolean") return undefined;
    return { type: "boolean", ...base, ...(current === undefined ? {} : { default: current }) };
  }
  return undefined;
}

/**
 * The members a form may offer for `request`: none unless it is an unedited call whose input as
 * asked is recorded whole (not redacted) and an object, and the tool's schema lists the member.
 */
export function offeredFields(descriptor: ToolDescriptor | undefined, request: ApprovalRequest | undefined): readonly OfferedField[] {
  if (descriptor === undefined || request?.kind !== "call" || request.edit !== undefined || request.inputRedacted === true) return [];
  const editable = request.editable;
  const input = request.input;
  if (!Array.isArray(editable) || editable.length === 0 || !isRecord(input)) return [];
  const properties = descriptor.inputSchema["properties"];
  if (!isRecord(properties)) return [];
  const fields: OfferedField[] = [];
  for (const [name, schema] of Object.entries(properties)) {
    const pointer = pointerOf(name);
    if (!editable.includes("") && !editable.includes(pointer)) continue;
    const current = Object.hasOwn(input, name) ? input[name] : undefined;
    const field = formField(name, schema, current);
    if (field) fields.push({ pointer, name, schema: field, current: current as Primitive | undefined });
  }
  return fields;
}

/** The form's schema: `approve` first, then one property per offered member, keyed by its pointer. */
export function requestedSchema(approveTitle: string, approveDescription: string, fields: readonly OfferedField[]) {
  const properties: Record<string, unknown> = { approve: { type: "boolean", title: approveTitle, description: approveDescription } };
  for (const f of fields) properties[f.pointer] = f.schema;
  return { type: "object", properties, required: ["approve"] };
}

/** Properties of an answer the form did not offer, named visibly (at most five, each cut). */
export function notOffered(content: Record<string, unknown> | undefined, fields: readonly OfferedField[]): readonly string[] {
  const offered = new Set(["approve", ...fields.map((f) => f.pointer)]);
  return Object.keys(content ?? {})
    .filter((k) => !offered.has(k))
    .slice(0, 5)
    .map((k) => shown(JSON.stringify(k.slice(0, 64))));
}

/**
 * The input with the answer's changed values, or undefined when the answer changed nothing. A value
 * is taken as the client sent it (the desk checks its type against the schema); a property left
 * out of the answer keeps the member as asked.
 */
export function editedInput(
  input: unknown,
  fields: readonly OfferedField[],
  content: Record<string, unknown> | undefined,
): Record<string, unknown> | undefined {
  if (!isRecord(input) || content === undefined) return undefined;
  let edited: Record<string, unknown> | undefined;
  for (const f of fields) {
    if (!Object.hasOwn(content, f.pointer)) continue;
    const value = content[f.pointer];
    if (Object.is(value, f.current)) continue;
    edited ??= { ...input };
    edited[f.name] = value;
  }
  return edited;
}

/** The second question: the changed call as the desk re-checked it, its changes and new preview fenced as data. */
export function confirmMessage(
  toolId: string,
  requestId: string,
  checked: { readonly changes: readonly unknown[]; readonly preview: { readonly summary: string; readonly details?: unknown; readonly body?: unknown } },
): string {
  const { summary, details, body } = checked.preview;
  const shownData = {
    changes: checked.changes,
    preview: { summary, ...(details === undefined ? {} : { details }), ...(body === undefined ? {} : { body }) },
  };
  const fenced = fenceUntrusted(toolId, shown(JSON.stringify(shownData)), scanForInjection(shownData), "preview").text;
  return (
    `Your changes to ${toolId} (request ${requestId}) were checked and the preview built again. ` +
    `Approve running the changed call? The changes and what it will do now:\n${fenced}`
  );
}
