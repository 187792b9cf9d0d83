/**
 * Step 8: a call that needs a human runs only with a matching grant. Without one, a request is
 * persisted and the caller gets `approval_required`. A grant is checked here and consumed with the
 * intent, so a grant that does not match stays usable for its own call.
 */
import { ToolError } from "../../errors.js";
import { checkGrant } from "../../journal/grant-check.js";
import type { Approved, BuiltPreview, Checked, Writable } from "../call-state.js";
import type { GateEnv } from "../env.js";
import type { InvokeResult } from "../results.js";
import { grantCheckFor, grantRefusal, requestApproval } from "../grants.js";
import { audit, refuse } from "../outcomes.js";
import type { Step } from "../pipeline.js";

export const approve: Step<Checked, Approved> = {
  name: "approve",
  run(c, env) {
    if (!c.approval) return c as Approved; // grant stays undefined
    return checkPresentedGrant(c, c.approval, env);
  },
};

async function checkPresentedGrant(c: Checked, approval: BuiltPreview, env: GateEnv): Promise<Approved | InvokeResult<unknown>> {
  if (!c.call.approval) return requestApproval(env, c, "call", approval.preview, approval.previewHash);
  const grant = grantCheckFor(env, c, c.call.approval, approval.previewHash);
  let request;
  try {
    request = await env.journal.getApproval(grant.requestId);
  } catch (cause) {
    return refuse(env, c, "error", new ToolError("journal_failed", "the journal could not be read", { cause }));
  }
  const verdict = checkGrant(request, grant);
  if (!("ok" in verdict)) {
    await audit(env, c, "approval.refused", { requestId: grant.requestId, status: verdict.status, mismatched: verdict.mismatched ?? [] });
    return refuse(env, c, "denied", grantRefusal(verdict, grant.requestId));
  }
  (c as Writable<Approved>).grant = grant;
  return c as Approved;
}
