/**
 * A body that asks for a human before its effect (`ToolErrorOptions.askApproval`: a tool process's
 * escalation): the attempt is settled as failed before its effect, a request for this very call is
 * recorded with the body's preview (checked, redacted and hashed as the preview step does), and the
 * caller gets `approval_required` — the same answer the approve step gives, in the same round trip.
 */
import { ToolError } from "../errors.js";
import type { Runnable } from "./call-state.js";
import type { GateEnv } from "./env.js";
import { approvalRequired, recordRequest } from "./grants.js";
import { settleFailure } from "./outcomes.js";
import type { InvokeResult } from "./results.js";
import { checkPreview } from "./steps/preview.js";

/** True when a body's error asks for a human before its effect, with a preview to ask with. */
export function asksApproval(error: unknown): error is ToolError & { readonly askApproval: object } {
  return ToolError.is(error) && error.boundary === "effect_not_started" && typeof error.askApproval === "object" && error.askApproval !== null;
}

export async function askMidCall(c: Runnable, env: GateEnv, asked: ToolError): Promise<InvokeResult<unknown>> {
  const id = c.tool.manifest.id;
  const built = checkPreview(env, id, asked.askApproval);
  if (ToolError.is(built)) return settleFailure(env, c, "effect_not_started", built);
  const settled = await settleFailure(
    env,
    c,
    "effect_not_started",
    new ToolError("approval_unknown", `${id} asked for a human's approval before acting; a request was recorded`),
  );
  // Nothing is asked of a human when the journal could not record how this attempt ended.
  if (settled.receipt === null) return settled;
  const request = await recordRequest(env, c, "call", built.preview, built.previewHash);
  if ("status" in request) return request;
  return approvalRequired(c, "call", request.request, request.receipt);
}
