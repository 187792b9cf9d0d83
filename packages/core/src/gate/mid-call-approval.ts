/**
 * A body that asks for a human before its effect (`ToolErrorOptions.askApproval`: a tool process's
 * escalation): the attempt is settled as failed before its effect, a request for this very call is
 * recorded with the body's preview (checked, redacted and hashed as the preview step does), and the
 * caller gets `approval_required` — the same answer the approve step gives, in the same round trip.
 */
import { canonicalJson } from "../canonical-json.js";
import { ToolError } from "../errors.js";
import type { Runnable } from "./call-state.js";
import type { GateEnv } from "./env.js";
import { approvalRequired, recordRequest } from "./grants.js";
import { settleFailure } from "./outcomes.js";
import { isRecovered } from "./recovered.js";
import type { InvokeResult } from "./results.js";
import { checkPreview } from "./steps/preview.js";

/** True when a body's error asks for a human before its effect, with a preview to ask with. */
export function asksApproval(error: unknown): error is ToolError & { readonly askApproval: object } {
  try {
    return ToolError.is(error) && error.boundary === "effect_not_started" && typeof error.askApproval === "object" && error.askApproval !== null;
  } catch {
    return false; // a getter that throws: the error is read as any other failure
  }
}

export async function askMidCall(c: Runnable, env: GateEnv, asked: ToolError): Promise<InvokeResult<unknown>> {
  const id = c.tool.manifest.id;
  // Recovery's replay has no caller to answer: the entry stays unknown for an operator, nobody is asked.
  if (isRecovered(c)) {
    const why = `${id} asked for a human's approval when recovery replayed it; nobody is asked for a replay: an operator must resolve it`;
    return settleFailure(env, c, "effect_state_unknown", new ToolError("approval_unknown", why));
  }
  // Read once, as plain JSON: a getter or proxy cannot show the human one preview and hash another.
  let raw: unknown;
  try {
    raw = JSON.parse(canonicalJson(asked.askApproval));
  } catch {
    return settleFailure(env, c, "effect_not_started", new ToolError("preview_invalid", `${id} asked for approval with a preview that is not plain JSON`));
  }
  const built = checkPreview(env, id, raw);
  if (ToolError.is(built)) return settleFailure(env, c, "effect_not_started", built);
  const settled = await settleFailure(
    env,
    c,
    "effect_not_started",
    new ToolError("approval_unknown", `${id} asked for a human's approval before acting; a request was recorded`),
  );
  // Nothing is asked of a human when the journal could not record how this attempt ended.
  if (settled.receipt === null) return settled;
  // An escalation is not editable: the body already ran up to its ask with the input it was given.
  const request = await recordRequest(env, c, "call", built.preview, built.previewHash, false);
  if ("status" in request) return request;
  return approvalRequired(c, "call", request.request, request.receipt);
}
