import { APIErrorCode, APIResponseError, isHTTPResponseError, RequestTimeoutError } from "@notionhq/client";
import { callProvider, headerValue, parseRetryAfter, type CallPolicy, type ProviderFailure } from "@toolgate/provider-call";

/**
 * Run one Notion request through the provider-call kit: reads retried after 429, 5xx and a lost
 * answer; writes only after a 429 (Notion applies nothing it rate-limits), each honouring
 * `Retry-After`; Notion's failures mapped onto Toolgate's codes.
 */
export async function callNotion<T>(policy: CallPolicy, run: () => Promise<T>): Promise<T> {
  return callProvider(policy, run, notionFailureOf);
}

/**
 * Read a `@notionhq/client` error. Messages are the connector's own: Notion's message is passed on
 * only for validation errors, where it tells the model what to fix.
 */
export function notionFailureOf(error: unknown): ProviderFailure {
  if (APIResponseError.isAPIResponseError(error)) {
    const base = { status: error.status, reason: error.code, cause: error };
    switch (error.code) {
      case APIErrorCode.ObjectNotFound:
        return { ...base, message: "Notion has no such object, or it is not shared with this connection's integration" };
      case APIErrorCode.Unauthorized:
        return { ...base, message: "Notion refused the connection's token" };
      case APIErrorCode.RestrictedResource:
        return { ...base, meaning: "scope_missing", message: "the Notion integration lacks the capability this needs" };
      case APIErrorCode.RateLimited:
        return {
          ...base,
          meaning: "rate_limited",
          notApplied: true,
          message: "Notion is rate limiting this integration",
          retryAfterSeconds: parseRetryAfter(headerValue(error.headers, "retry-after")),
        };
      case APIErrorCode.ConflictError:
        return { ...base, retryable: true, message: "Notion reported a conflicting change; try again" };
      case APIErrorCode.ValidationError:
      case APIErrorCode.InvalidJSON:
      case APIErrorCode.InvalidRequest:
      case APIErrorCode.InvalidRequestURL:
        return { ...base, message: `Notion refused the request: ${error.message}` };
      default:
        return { ...base, message: "Notion failed" };
    }
  }
  if (isHTTPResponseError(error))
    return {
      status: error.status,
      message: "Notion answered with an error",
      cause: error,
      retryAfterSeconds: parseRetryAfter(headerValue(error.headers, "retry-after")),
    };
  if (RequestTimeoutError.isRequestTimeoutError(error)) return { status: undefined, message: "Notion did not answer in time", cause: error };
  return { status: undefined, message: "Notion could not be reached", cause: error };
}
