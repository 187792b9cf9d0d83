/**
 * When a step fails in a way no step handles (a failure of the gate itself, not of the call):
 * the call ends as an error result, journaled when the journal can take it, never as a throw.
 */
import { ToolError, type EffectBoundary } from "../errors.js";
import type { CallStart, Runnable } from "./call-state.js";
import type { GateEnv } from "./env.js";
import { redactedPrefix } from "./foreign-text.js";
import { audit, errorText, toolIdOf } from "./outcomes.js";
import type { ErrorResult } from "./results.js";

export async function unexpectedFailure(env: GateEnv, c: CallStart, cause: unknown): Promise<ErrorResult> {
  // Once the intent is journaled the body may have started: say so, and leave the entry to recovery.
  const boundary: EffectBoundary = (c as Partial<Runnable>).intent === undefined ? "pre_effect_refusal" : "effect_state_unknown";
  const error = ToolError.is(cause)
    ? cause
    : new ToolError("handler_failed", `the gate failed while running the call: ${redactedPrefix(env.redactor, errorText(cause), 300)}`, { cause });
  const message = env.redactor.redactText(error.message);
  const receipt = await audit(env, c, "call.failed", { code: error.code, message, boundary, inputHash: c.inputHash ?? null });
  return {
    status: "error",
    toolId: toolIdOf(env, c),
    invocationId: c.invocationId,
    receipt,
    code: error.code,
    message,
    boundary,
    retryable: false,
  };
}
