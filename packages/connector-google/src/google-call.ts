import { ToolError, type EffectBoundary } from "@toolgate/core";

/** How a family retries a Google call that failed with 429, 5xx or a dropped connection. */
export interface RetryOptions {
  /** Attempts in all, including the first; default 3, at most 10. 1 turns retries off. */
  readonly maxAttempts?: number;
  /** Longest wait between attempts; a `Retry-After` longer than this is not waited for. Default 10 000 ms. */
  readonly maxDelayMs?: number;
  /** First backoff when the provider gave no `Retry-After`; doubled each attempt. Default 250 ms. */
  readonly baseDelayMs?: number;
}

export interface ResolvedRetry {
  readonly maxAttempts: number;
  readonly maxDelayMs: number;
  readonly baseDelayMs: number;
}

export function resolveRetry(options: RetryOptions | undefined): ResolvedRetry {
  const maxAttempts = options?.maxAttempts ?? 3;
  const maxDelayMs = options?.maxDelayMs ?? 10_000;
  const baseDelayMs = options?.baseDelayMs ?? 250;
  if (!Number.isInteger(maxAttempts) || maxAttempts < 1 || maxAttempts > 10) throw new ToolError("config_invalid", "retry.maxAttempts must be a whole number from 1 to 10");
  if (!Number.isFinite(maxDelayMs) || maxDelayMs < 0) throw new ToolError("config_invalid", "retry.maxDelayMs must be a non-negative number");
  if (!Number.isFinite(baseDelayMs) || baseDelayMs < 0) throw new ToolError("config_invalid", "retry.baseDelayMs must be a non-negative number");
  return { maxAttempts, maxDelayMs, baseDelayMs };
}

export interface CallPolicy {
  /** The Google method, e.g. `gmail.users.messages.send`, for messages. */
  readonly method: string;
  /**
   * True when repeating the request cannot repeat an effect: a read, or a write the provider
   * deduplicates. Only such calls are retried.
   */
  readonly repeatable: boolean;
  /** True when the request changes something (decides the boundary of an unanswered request). */
  readonly write: boolean;
  readonly signal: AbortSignal;
  readonly retry: ResolvedRetry;
}

/** What a Google failure said, read from the client library's error without its request. */
export interface GoogleFailure {
  readonly status: number | undefined;
  readonly reason: string | undefined;
  readonly message: string;
  readonly retryAfterSeconds: number | undefined;
}

/**
 * Run one Google request with bounded retries (429, 5xx and dropped connections, only when
 * `repeatable`, honouring `Retry-After`), and map a final failure onto a `ToolError`.
 */
export async function callGoogle<T>(policy: CallPolicy, run: () => Promise<{ data: T }>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    if (policy.signal.aborted) throw new ToolError("cancelled", `${policy.method} was cancelled`);
    try {
      return (await run()).data;
    } catch (error) {
      if (policy.signal.aborted) throw new ToolError("cancelled", `${policy.method} was cancelled`, { boundary: policy.write ? "effect_state_unknown" : "effect_failed" });
      const failure = failureOf(error);
      const transient = failure.status === undefined || failure.status === 429 || failure.status >= 500;
      if (transient && policy.repeatable && attempt < policy.retry.maxAttempts) {
        const wait = failure.retryAfterSeconds !== undefined ? failure.retryAfterSeconds * 1000 : policy.retry.baseDelayMs * 2 ** (attempt - 1);
        if (wait <= policy.retry.maxDelayMs) {
          await sleep(wait, policy.signal);
          continue;
        }
      }
      throw toolErrorOf(failure, policy, attempt);
    }
  }
}

/** Read status, Google's error reason, its message and `Retry-After` from a client library error. */
export function failureOf(error: unknown): GoogleFailure {
  const response = (error as { response?: { status?: unknown; data?: unknown; headers?: unknown } } | null)?.response;
  if (!response || typeof response.status !== "number") {
    return { status: undefined, reason: undefined, message: "the connection failed before an answer arrived", retryAfterSeconds: undefined };
  }
  const data = response.data as { error?: { message?: unknown; errors?: { reason?: unknown }[]; details?: { reason?: unknown }[] } | string } | undefined;
  const body = typeof data?.error === "object" ? data.error : undefined;
  const reason = [body?.errors?.[0]?.reason, body?.details?.[0]?.reason, typeof data?.error === "string" ? data.error : undefined].find((r): r is string => typeof r === "string");
  const headers = response.headers as { get?: (name: string) => string | null } | Record<string, string> | undefined;
  const retryAfter = typeof headers?.get === "function" ? headers.get("retry-after") : (headers as Record<string, string> | undefined)?.["retry-after"];
  const seconds = retryAfter !== null && retryAfter !== undefined && /^\d{1,6}$/.test(retryAfter.trim()) ? Number(retryAfter) : undefined;
  return { status: response.status, reason, message: sanitize(typeof body?.message === "string" ? body.message : ""), retryAfterSeconds: seconds };
}

/** Google's message, made safe to show: no bearer-looking tokens, no control characters, short. */
function sanitize(message: string): string {
  return message
    .replace(/\b(ya29\.|1\/\/|Bearer\s+)[A-Za-z0-9._~+/=-]+/g, "[token]")
    .replace(/[\u0000-\u001f\u007f]+/g, " ")
    .slice(0, 300);
}

function toolErrorOf(failure: GoogleFailure, policy: CallPolicy, attempts: number): ToolError {
  const { status, reason } = failure;
  const said = `${policy.method} failed${status === undefined ? "" : `: HTTP ${status}`}${reason ? ` ${reason}` : ""}${failure.message ? `: ${failure.message}` : ""}${attempts > 1 ? ` (after ${attempts} attempts)` : ""}`;
  const details = { method: policy.method, ...(status === undefined ? {} : { status }), ...(reason ? { reason } : {}), attempts };
  const refused: EffectBoundary = "effect_failed";
  if (status === undefined) {
    if (policy.write && !policy.repeatable) {
      return new ToolError("effect_state_unknown", `${said}; the request may have taken effect`, { boundary: "effect_state_unknown", details });
    }
    return new ToolError("provider_unavailable", said, { boundary: refused, retryable: true, details });
  }
  if (status === 401) return new ToolError("connector_reauth_required", `${said}; the connection must be authorized again`, { boundary: refused, details });
  if (status === 403 && (reason === "insufficientPermissions" || reason === "ACCESS_TOKEN_SCOPE_INSUFFICIENT")) {
    return new ToolError("scope_missing", `${said}; the connection lacks a scope this call needs`, { boundary: refused, details });
  }
  if (status === 429 || (status === 403 && /rateLimitExceeded|userRateLimitExceeded|quotaExceeded|dailyLimitExceeded/.test(reason ?? ""))) {
    return new ToolError("rate_limited", said, {
      boundary: refused,
      retryable: true,
      details,
      ...(failure.retryAfterSeconds === undefined ? {} : { retryAfterSeconds: failure.retryAfterSeconds }),
    });
  }
  if (status === 404 || status === 410) return new ToolError("not_found", said, { boundary: refused, details });
  if (status === 409 || status === 412) return new ToolError("conflict", said, { boundary: refused, details });
  if (status >= 500) {
    // A write Google failed on may or may not have been applied unless the provider deduplicates it.
    const boundary: EffectBoundary = policy.write && !policy.repeatable ? "effect_state_unknown" : "effect_failed";
    return new ToolError("provider_unavailable", said, { boundary, retryable: boundary !== "effect_state_unknown", details });
  }
  return new ToolError("provider_rejected", said, { boundary: refused, details });
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (ms <= 0) return resolve();
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(new ToolError("cancelled", "cancelled while waiting to retry"));
    };
    signal.addEventListener("abort", onAbort, { once: true });
  });
}
