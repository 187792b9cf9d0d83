/**
 * The approval desk's rules for an approver's edit that need no journal: the diff between the input
 * as asked and the edited input, and the checks on it (how many changes, which paths, no secret).
 */
import type { Approver } from "../authority/types.js";
import { canonicalJson } from "../canonical-json.js";
import { pointerSegment } from "../edit-fields.js";
import { ToolError } from "../errors.js";
import type { ApprovalChange, ApprovalEdit, ApprovalExpectation } from "../journal/edit-types.js";
import { currentExpectation, versionOf } from "../journal/edit-rules.js";
import type { ApprovalRequest } from "../journal/types.js";
import { scanForInjection, type InjectionFinding } from "../untrusted.js";
import { previewEdited } from "./desk-preview.js";
import { editableFor, pathsAllowed } from "./edit-allowance.js";
import type { GateEnv } from "./env.js";
import { targetOf } from "./outcomes.js";
import { freezeInput } from "./steps/freeze.js";
import { parseInput } from "./steps/validate.js";

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

/** What an approver sends to preview an edit: who, the whole edited input, and the version they started from. */
export interface EditOptions {
  /** The authenticated decider, from `gate.authority` (never a typed name). */
  readonly by: Approver;
  /** The whole edited input (not a patch). */
  readonly input: unknown;
  /** The version the approver saw and its preview hash (`{ version: 0, previewHash: request.previewHash }` for an unedited request). */
  readonly expect: ApprovalExpectation;
}

/**
 * The desk's answer to an edit, before anything is written: the edited input (canonical) and its
 * hash, its preview recomputed as the request's principal and tenant, and the changes against the
 * input as asked. Pass `input` and `previewHash` back as `grant({ edit })`: the grant is refused if
 * the preview moved meanwhile.
 */
export interface EditPreview extends Pick<ApprovalEdit, "input" | "inputHash" | "preview" | "previewHash" | "target" | "changes"> {
  readonly requestId: string;
  /** The version the edit starts from (the one in `expect`). */
  readonly version: number;
  /** Changed text that reads like instructions to a model (the agent is told of the change). */
  readonly findings: readonly Pick<InjectionFinding, "rule" | "path">[];
}

/** The most `previewEdit` calls one approver may make on one request (each may run the tool's preview). */
export const MAX_EDIT_PREVIEWS = 20;

const refused = (message: string, details?: Record<string, unknown>) => new ToolError("edit_refused", message, details ? { details } : {});

/** A request that is no longer waiting for a decision cannot be edited. */
export function refuseUndecidable(request: ApprovalRequest, now: number): void {
  const expired = request.status === "expired" || (request.status === "pending" && !(Date.parse(request.expiresAt) > now));
  if (expired) throw new ToolError("approval_expired", `approval request ${request.id} has expired`);
  if (request.status === "denied") throw new ToolError("approval_denied", `approval request ${request.id} was denied`);
  if (request.status !== "pending") throw new ToolError("approval_consumed", `approval request ${request.id} was already decided (${request.status})`);
}

/** A decision's `expect` must name the request's current version and its preview hash. */
export function refuseStale(request: ApprovalRequest, expect: unknown): void {
  const e = expect as Partial<ApprovalExpectation> | null | undefined;
  if (e === undefined && request.edit) {
    throw new ToolError(
      "approval_invalid",
      `approval request ${request.id} was edited (now version ${request.edit.version} by ${request.edit.by}): a decision names the version it saw (expect)`,
    );
  }
  if (typeof e !== "object" || e === null || !Number.isInteger(e.version) || typeof e.previewHash !== "string") {
    throw new ToolError("approval_invalid", "expect must name the version seen and its preview hash ({ version, previewHash })");
  }
  const current = currentExpectation(request);
  if (e.version !== current.version || e.previewHash !== current.previewHash) {
    const now = request.edit ? `now version ${request.edit.version} by ${request.edit.by}` : "now version 0, the input as asked";
    throw new ToolError("approval_invalid", `approval request ${request.id} changed since you looked (${now}): look again and decide on what it is now`);
  }
}

/**
 * Every check of an edit after the decider's, in order: the request is waiting and may be edited,
 * `expect` is current, the input freezes and passes the tool's schema, it changes at most
 * {@link MAX_EDIT_CHANGES} members and only editable ones, it holds no registered secret; then its
 * preview, recomputed. Each refusal a typed ToolError; nothing is written.
 */
export async function checkEdit(env: GateEnv, request: ApprovalRequest, input: unknown, expect: unknown): Promise<EditPreview> {
  refuseUndecidable(request, env.clock());
  const tool = env.tools.get(request.toolId);
  if (request.kind !== "call") throw refused(`approval request ${request.id} releases a held output: only a call's input can be edited`);
  if (request.editable === false || !Array.isArray(request.editable))
    throw refused(`${request.toolId}'s input may not be edited in approval request ${request.id}`);
  if (request.input === undefined || request.inputRedacted !== false) {
    throw refused(`approval request ${request.id} did not record its input whole (it held a secret, or was asked before edits): it cannot be edited`);
  }
  if (!tool) throw refused(`${request.toolId} is not registered on this gate: its edits cannot be checked`);
  refuseStale(request, expect);
  const frozen = freezeInput(env, input);
  if (ToolError.is(frozen)) throw new ToolError(frozen.code, env.redactor.redactText(frozen.message));
  const checked = parseInput(tool.manifest, frozen.parsed, env.redactor);
  if ("error" in checked) throw new ToolError("invalid_input", env.redactor.redactText(checked.error.message), { details: { issues: checked.issues } });
  const changes = diffInputs(request.input, frozen.parsed);
  if (changes.length === 0 || frozen.inputHash === (request.edit?.inputHash ?? request.inputHash)) {
    throw refused(`the edit of approval request ${request.id} changes nothing (approve or deny the request as it is)`);
  }
  if (changes.length > MAX_EDIT_CHANGES) throw refused(`the edit changes ${changes.length} members; at most ${MAX_EDIT_CHANGES}`);
  const paths = changes.map((change) => change.path);
  const outside = [...new Set([...pathsAllowed(request.editable, paths), ...pathsAllowed(editableFor(tool.manifest, undefined), paths)])];
  if (outside.length > 0) {
    throw refused(`the edit changes ${outside.join(", ")}, outside what ${request.toolId} lets an approver edit (${request.editable.join(", ")})`, {
      paths: outside,
    });
  }
  // The edit is stored whole because it must run: a registered secret in it would be written out.
  if (holdsSecret(env, frozen.inputJson, frozen.parsed))
    throw refused(`the edit of approval request ${request.id} holds a registered secret; an edit never carries one`);
  const built = await previewEdited(env, request, tool, checked.data);
  if (ToolError.is(built)) throw built;
  return {
    requestId: request.id,
    version: versionOf(request),
    input: frozen.parsed,
    inputHash: frozen.inputHash,
    preview: built.preview,
    previewHash: built.previewHash,
    target: targetOf(env, { tool, parsed: checked.data }),
    changes: env.redactor.redact(changes),
    findings: scanForInjection(changes).map(({ rule, path }) => ({ rule, path })),
  };
}

/** A registered secret in the input's JSON text, or in any of its strings or member names as they are (a JSON-escaped spelling typed into a field). */
export function holdsSecret(env: GateEnv, json: string, value: unknown): boolean {
  if (env.redactor.contains(json)) return true;
  const pending: unknown[] = [value];
  while (pending.length > 0) {
    const v = pending.pop();
    if (typeof v === "string") {
      if (env.redactor.contains(v)) return true;
    } else if (Array.isArray(v)) pending.push(...v);
    else if (typeof v === "object" && v !== null) for (const [k, member] of Object.entries(v)) pending.push(k, member);
  }
  return false;
}

/** How many previews each approver asked of each request, in memory, oldest forgotten first past `capacity`. */
export function previewBudget(capacity = 10_000): (requestId: string, approver: string) => void {
  const used = new Map<string, number>();
  return (requestId, approver) => {
    const key = `${requestId}\u0000${approver}`;
    const n = used.get(key) ?? 0;
    if (n >= MAX_EDIT_PREVIEWS) {
      throw new ToolError("rate_limited", `${approver} previewed edits of ${requestId} ${MAX_EDIT_PREVIEWS} times; decide on one or ask another approver`);
    }
    used.delete(key);
    used.set(key, n + 1);
    if (used.size > capacity) used.delete(used.keys().next().value!);
  };
}
