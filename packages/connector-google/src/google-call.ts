import { callProvider, headerValue, parseRetryAfter, type CallPolicy, type ProviderFailure } from "@toolgate/provider-call";

/**
 * Run one Google request through the provider-call kit: retries of 429, 5xx and dropped
 * connections only when `repeatable` (a send after a 429 is not repeated), honouring
 * `Retry-After`, and Google's failures mapped onto Toolgate's codes.
 */
export async function callGoogle<T>(policy: CallPolicy, run: () => Promise<{ data: T }>): Promise<T> {
  return callProvider(policy, async () => (await run()).data, googleFailureOf);
}

/**
 * Read status, Google's error reason, its message and `Retry-After` from a client library error.
 * The error itself is not kept: it carries the request, with its `Authorization` header.
 */
export function googleFailureOf(error: unknown): ProviderFailure {
  const response = (error as { response?: { status?: unknown; data?: unknown; headers?: unknown } } | null)?.response;
  if (!response || typeof response.status !== "number") return { status: undefined, message: "the connection failed before an answer arrived" };
  const data = response.data as { error?: { message?: unknown; errors?: { reason?: unknown }[]; details?: { reason?: unknown }[] } | string } | undefined;
  const body = typeof data?.error === "object" ? data.error : undefined;
  const reason = [body?.errors?.[0]?.reason, body?.details?.[0]?.reason, typeof data?.error === "string" ? data.error : undefined].find(
    (r): r is string => typeof r === "string",
  );
  const status = response.status;
  return {
    status,
    reason,
    message: typeof body?.message === "string" ? withoutGoogleTokens(body.message) : "",
    retryAfterSeconds: parseRetryAfter(headerValue(response.headers, "retry-after")),
    meaning:
      status === 403 && (reason === "insufficientPermissions" || reason === "ACCESS_TOKEN_SCOPE_INSUFFICIENT")
        ? "scope_missing"
        : status === 403 && /rateLimitExceeded|userRateLimitExceeded|quotaExceeded|dailyLimitExceeded/.test(reason ?? "")
          ? "rate_limited"
          : undefined,
  };
}

/** Google's access (`ya29.`) and refresh (`1//`) tokens, wherever a message quotes one. */
function withoutGoogleTokens(message: string): string {
  return message.replace(/\b(ya29\.|1\/\/)[A-Za-z0-9._~+/=-]+/g, "[token]");
}
