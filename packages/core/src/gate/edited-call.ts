/**
 * The caller's retry of a call an approver edited: the caller sends the input as asked, the grant's
 * request carries the edit, and the call that runs is the edit — read from the sealed request,
 * never from the caller. Before it runs, everything the approver's decision rested on is checked
 * again, now: the edited input still hashes as approved, passes the tool's schema, changes only
 * fields the current manifest and this call's profile let an approver edit, and its preview,
 * rebuilt now, is the one the approver saw. Any refusal leaves the grant unconsumed.
 *
 * The idempotency key is not changed: it is the one the caller's retry derived from (or gave with)
 * the input as asked, so every later retry of that input finds the edited call's entry.
 */
import { ToolError } from "../errors.js";
import type { ApprovalRequest, GrantCheck } from "../journal/types.js";
import type { ApprovalGrant } from "./approvals.js";
import type { Approved, Checked, EditedCall, Writable } from "./call-state.js";
import { pathsAllowed, editableFor } from "./edit-allowance.js";
import { diffInputs, holdsSecret } from "./edit-desk.js";
import type { GateEnv } from "./env.js";
import { bindingCheckFor, grantCheckFor, grantRefusal } from "./grants.js";
import { audit, refuse } from "./outcomes.js";
import type { InvokeResult } from "./results.js";
import { freezeInput } from "./steps/freeze.js";
import { buildPreview, previewThrew } from "./steps/preview.js";
import { parseInput } from "./steps/validate.js";

type Outcome = Approved | InvokeResult<unknown>;

/**
 * The presented grant's token and the caller's binding (the input as asked), checked before any
 * work: for an edited request the check names the edit the journal holds, so only the token and
 * binding can differ here; what runs is checked again by `takeEditedCall`.
 */
export function presentedCheck(env: GateEnv, c: Checked, grant: ApprovalGrant, request: ApprovalRequest | undefined, previewHash: string): GrantCheck {
  const edit = request?.edit && { inputHash: request.edit.inputHash, previewHash: request.edit.previewHash };
  return grantCheckFor(env, c, grant, previewHash, edit);
}

/** Turn `c` (the input as asked, its grant's request edited and granted) into the edited call, or refuse it. */
export async function takeEditedCall(c: Checked, request: ApprovalRequest, env: GateEnv, presented?: ApprovalGrant): Promise<Outcome> {
  const edit = request.edit!;
  const tool = c.manifest.id;
  const frozen = freezeInput(env, edit.input);
  // Larger than this gate takes (another gate's desk approved it): refused as the input it is, not as tampering.
  if (ToolError.is(frozen)) return refuse(env, c, "error", new ToolError(frozen.code, env.redactor.redactText(frozen.message)));
  if (frozen.inputHash !== edit.inputHash) {
    return refuse(env, c, "error", new ToolError("journal_tampered", `the edited input of ${request.id} no longer hashes as it was approved`));
  }
  // The desk refused an edit holding a secret it knew; this worker may know more (its own secrets).
  if (holdsSecret(env, frozen.inputJson, frozen.parsed)) {
    return refuse(env, c, "denied", new ToolError("edit_refused", `the edit of ${request.id} holds a secret this gate holds; an edit never carries one`));
  }
  const checked = parseInput(c.manifest, frozen.parsed, env.redactor);
  if ("error" in checked) return refuse(env, c, "error", checked.error, { issues: checked.issues, inputSchema: c.tool.descriptor.inputSchema });
  if (request.input === undefined || request.inputRedacted === true) {
    return refuse(env, c, "denied", new ToolError("edit_refused", `${request.id} holds no input an approver could have edited`));
  }
  const outside = outsideEditable(c, request, request.input);
  if (outside.length > 0) {
    const why = `the edit of ${request.id} changes ${outside.join(", ")}, which ${tool} under profile ${c.call.profile.name} does not let an approver edit now`;
    return refuse(env, c, "denied", new ToolError("edit_refused", why, { details: { paths: outside } }));
  }
  const built = await buildPreview(env, { ...c, parsed: checked.data });
  if (ToolError.is(built)) return refuse(env, c, "error", built, { foreign: previewThrew(built) });
  if (built.previewHash !== edit.previewHash) {
    await audit(env, c, "approval.refused", { requestId: request.id, status: "mismatch", mismatched: ["edit"] });
    return refuse(env, c, "denied", grantRefusal({ status: "mismatch", mismatched: ["edit"] }, request.id));
  }
  // The check names the input as asked (what the request binds) and the edit as rebuilt here (what runs).
  const editCheck = { inputHash: frozen.inputHash, previewHash: built.previewHash };
  const asked = c.approval!.previewHash;
  const grant = presented ? grantCheckFor(env, c, presented, asked, editCheck) : bindingCheckFor(env, c, request.id, asked, editCheck);
  const edited: EditedCall = { requestId: request.id, version: edit.version, askedInputHash: c.inputHash, changes: env.redactor.redact(edit.changes) };
  const next = c as Writable<Approved>;
  next.inputJson = frozen.inputJson;
  next.inputHash = frozen.inputHash;
  next.parsed = checked.data;
  next.approval = built;
  next.edited = edited;
  next.grant = grant;
  return next;
}

/**
 * The changed paths no longer editable: the edit is diffed again from the sealed request (not only
 * its stored list of changes), and each path must be allowed by what the request recorded when it
 * asked AND by the current manifest and this call's profile (a profile narrowed since wins).
 */
function outsideEditable(c: Checked, request: ApprovalRequest, asked: unknown): readonly string[] {
  const edit = request.edit!;
  const paths = [...new Set([...edit.changes.map((ch) => ch.path), ...diffInputs(asked, edit.input).map((ch) => ch.path)])];
  const now = editableFor(c.manifest, c.call.profile);
  return [...new Set([...pathsAllowed(request.editable ?? false, paths), ...pathsAllowed(now, paths)])];
}
