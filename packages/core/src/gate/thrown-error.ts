/** A body that threw or was stopped: the gate's own copy of its error, and where its effect stands. */
import { ToolError, type EffectBoundary } from "../errors.js";
import { isSideEffectful, type AnyToolManifest } from "../manifest.js";
import type { Redactor } from "../redactor.js";
import { errorText } from "./outcomes.js";
import { redactedPrefix } from "./foreign-text.js";

/**
 * The error for a body that threw, and where its effect stands. What a body throws is read once,
 * defensively (a getter may throw, a field may be of any type): the gate's own copy is what
 * travels on.
 */
export function thrownError(manifest: AnyToolManifest, cause: unknown, redactor: Redactor): [EffectBoundary, ToolError] {
  try {
    if (ToolError.is(cause)) {
      const copy = new ToolError(cause.code, redactedPrefix(redactor, cause.message, 2000), {
        cause,
        ...(isPlainRecord(cause.details) ? { details: cause.details } : {}),
        ...(cause.boundary === undefined ? {} : { boundary: cause.boundary }),
        retryable: cause.retryable === true,
        ...(typeof cause.retryAfterSeconds === "number" ? { retryAfterSeconds: cause.retryAfterSeconds } : {}),
      });
      return [copy.boundary ?? "effect_failed", copy];
    }
  } catch {
    // a ToolError whose fields cannot be read is treated as any other failure
  }
  const boundary: EffectBoundary = isSideEffectful(manifest.effect) ? "effect_state_unknown" : "effect_failed";
  return [boundary, new ToolError("handler_failed", `${manifest.id} failed: ${redactedPrefix(redactor, errorText(cause), 500)}`, { cause })];
}

function isPlainRecord(value: unknown): value is Readonly<Record<string, unknown>> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Cancelled or past its deadline once the body had started: a write's effect may have happened. */
export function abortedError(manifest: AnyToolManifest, why: "timeout" | "cancelled"): [EffectBoundary, ToolError] {
  const sideEffectful = isSideEffectful(manifest.effect);
  const boundary: EffectBoundary = sideEffectful ? "effect_state_unknown" : "effect_failed";
  return why === "timeout"
    ? [boundary, new ToolError("timeout", `${manifest.id} did not finish within ${manifest.timeoutMs} ms`, { retryable: !sideEffectful })]
    : [boundary, new ToolError("cancelled", `${manifest.id} was cancelled`)];
}
