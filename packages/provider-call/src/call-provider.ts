import { ToolError } from "@toolgate/core";
import { isTransient, toolErrorOf, type ProviderFailure, type ProviderRequest } from "./provider-failure.js";
import { delayBefore, type ResolvedRetry } from "./retry.js";

/** One provider request: what it is, the call's signal, and the family's retry options. */
export interface CallPolicy extends ProviderRequest {
  readonly signal: AbortSignal;
  readonly retry: ResolvedRetry;
}

/**
 * Run one provider request with bounded retries, and map its final failure onto a `ToolError`.
 *
 * A failure with no answer, a 429 or a 5xx is retried while attempts remain, only when the request
 * is `repeatable` or the provider said it applied nothing (`notApplied`); the wait is the
 * provider's `Retry-After`, else exponential backoff, and a wait longer than `retry.maxDelayMs`
 * ends the call instead. A `ToolError` thrown by `run` passes through; a failure after the call's
 * signal aborted is `cancelled`.
 *
 * @param readFailure the connector's reading of its client library's error.
 */
export async function callProvider<T>(policy: CallPolicy, run: () => Promise<T>, readFailure: (error: unknown) => ProviderFailure): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    if (policy.signal.aborted) throw new ToolError("cancelled", `${policy.method} was cancelled`);
    try {
      return await run();
    } catch (error) {
      if (policy.signal.aborted)
        throw new ToolError("cancelled", `${policy.method} was cancelled`, { boundary: policy.write ? "effect_state_unknown" : "effect_failed" });
      if (ToolError.is(error)) throw error;
      const failure = readFailure(error);
      if (attempt < policy.retry.maxAttempts && isTransient(failure) && (policy.repeatable || failure.notApplied === true)) {
        const wait = delayBefore(policy.retry, attempt, failure.retryAfterSeconds);
        if (wait <= policy.retry.maxDelayMs) {
          await policy.retry.sleep(wait, policy.signal);
          continue;
        }
      }
      throw toolErrorOf(failure, policy, attempt);
    }
  }
}
