/**
 * Step 10: a call that needs a human runs only with a matching grant. Without one, a request is
 * persisted and the caller gets `approval_required`; a retry of the same call (the whole binding:
 * tool, input, principal, tenant, preview) after a human granted that request takes the grant by
 * binding. A grant is checked here and consumed with the intent, so a grant that does not match
 * stays usable for its own call. A granted request an approver edited runs the edit (`edited-call.ts`).
 */
import { ToolError } from "../../errors.js";
import { checkGrant } from "../../journal/grant-check.js";
import type { ApprovalRequest } from "../../journal/types.js";
import type { Approved, BuiltPreview, Checked, Writable } from "../call-state.js";
import type { GateEnv } from "../env.js";
import type { InvokeResult } from "../results.js";
import { approvalRequired, approvalsNeeded, bindingCheckFor, grantRefusal, recordRequest } from "../grants.js";
import { presentedCheck, takeEditedCall } from "../edited-call.js";
import { audit, refuse } from "../outcomes.js";
import type { Step } from "../pipeline.js";

export const approve: Step<Checked, Approved> = {
  name: "approve",
  run(c, env) {
    if (!c.approval) return c as Approved; // grant stays undefined
    if (!c.call.approval) return askOrTakeGrant(c, c.approval, env);
    return checkPresentedGrant(c, c.approval, env);
  },
};

/** A request granted with fewer approvers than this call's profile asks for does not let it run. */
function tooFewApprovers(env: GateEnv, c: Checked, request: ApprovalRequest): Promise<InvokeResult<unknown>> | undefined {
  if ((request.approvalsNeeded ?? 1) >= approvalsNeeded(c)) return undefined;
  return refuse(
    env,
    c,
    "denied",
    new ToolError("approval_invalid", `${c.manifest.id} needs two approvers under profile ${c.call.profile.name}; ${request.id} had one`),
  );
}

async function askOrTakeGrant(c: Checked, approval: BuiltPreview, env: GateEnv): Promise<Approved | InvokeResult<unknown>> {
  const asked = await recordRequest(env, c, "call", approval.preview, approval.previewHash);
  if ("status" in asked) return asked;
  // Only a granted request to run a call (never a held output's release) stands for this call.
  if (asked.request.status !== "granted" || asked.request.kind !== "call") return approvalRequired(c, "call", asked.request, asked.receipt);
  const fewer = tooFewApprovers(env, c, asked.request);
  if (fewer) return fewer;
  // An approver edited the call: what runs is the edit the request holds, checked again now.
  if (asked.request.edit) return takeEditedCall(c, asked.request, env);
  (c as Writable<Approved>).grant = bindingCheckFor(env, c, asked.request.id, approval.previewHash);
  return c as Approved;
}

async function checkPresentedGrant(c: Checked, approval: BuiltPreview, env: GateEnv): Promise<Approved | InvokeResult<unknown>> {
  const presented = c.call.approval!;
  let request;
  try {
    request = await env.journal.getApproval(presented.requestId);
  } catch (cause) {
    return refuse(env, c, "error", new ToolError("journal_failed", "the journal could not be read", { cause }));
  }
  const grant = presentedCheck(env, c, presented, request, approval.previewHash);
  const verdict = checkGrant(request, grant);
  if (!("ok" in verdict)) {
    await audit(env, c, "approval.refused", { requestId: grant.requestId, status: verdict.status, mismatched: verdict.mismatched ?? [] });
    return refuse(env, c, "denied", grantRefusal(verdict, grant.requestId));
  }
  const fewer = tooFewApprovers(env, c, request!);
  if (fewer) return fewer;
  if (request!.edit) return takeEditedCall(c, request!, env, presented);
  (c as Writable<Approved>).grant = grant;
  return c as Approved;
}
