import { ToolError, type EffectBoundary } from "@toolgate/core";

/**
 * What a provider's failure said, as a connector reads it from its client library's error. The
 * connector decides what its provider's answer means; the kit turns that into one `ToolError`.
 */
export interface ProviderFailure {
  /** The HTTP status; undefined when no answer arrived (a dropped connection, a timeout). */
  readonly status: number | undefined;
  /** The provider's own error code (`insufficientPermissions`, `object_not_found`); shown only when it is a plain identifier. */
  readonly reason?: string | undefined;
  /** What went wrong, in words fit for a model; control characters, bearer tokens and length are cut again here. */
  readonly message?: string | undefined;
  /** Seconds the provider asked us to wait (`Retry-After`). */
  readonly retryAfterSeconds?: number | undefined;
  /** What the status alone does not say: a 403 that means a missing scope, or a rate limit. */
  readonly meaning?: "scope_missing" | "rate_limited" | undefined;
  /**
   * The provider documents that it did not apply this request (Notion's 429 is refused before any
   * work), so it may be retried even when it is not repeatable.
   */
  readonly notApplied?: boolean | undefined;
  /** Whether the same call may succeed later, where the status alone says no (a transient conflict). */
  readonly retryable?: boolean | undefined;
  /** The client library's error, kept as the `ToolError`'s cause. Leave it out when it carries credentials. */
  readonly cause?: unknown;
}

/** What the mapping needs to know about the request that failed. */
export interface ProviderRequest {
  /** Names the request in messages and details, e.g. `gmail.users.messages.send` or `read page …`. */
  readonly method: string;
  /**
   * True when repeating the request cannot repeat an effect: a read, or a write the provider
   * deduplicates. Only such requests are retried after a 5xx or a dropped connection.
   */
  readonly repeatable: boolean;
  /** True when the request changes something: decides the boundary of an unanswered request. */
  readonly write: boolean;
}

/** True for failures worth another attempt: no answer, 429 and 5xx. */
export function isTransient(failure: ProviderFailure): boolean {
  return failure.status === undefined || failure.status === 429 || failure.status >= 500;
}

/**
 * Map a provider's final failure onto Toolgate's codes:
 *
 * | answer | code | boundary |
 * |---|---|---|
 * | none (dropped, timed out) | `effect_state_unknown` for a write that is not repeatable, else `provider_unavailable` | `effect_state_unknown` / `effect_failed` |
 * | 401 | `connector_reauth_required` | `effect_not_started` |
 * | `meaning: "scope_missing"` | `scope_missing` | `effect_not_started` |
 * | 429, `meaning: "rate_limited"` | `rate_limited` (retryable, with `retryAfterSeconds`) | `effect_not_started` |
 * | 404, 410 | `not_found` | `effect_not_started` |
 * | 409, 412 | `conflict` | `effect_not_started` |
 * | 5xx | `provider_unavailable` | `effect_state_unknown` for a write that is not repeatable, else `effect_failed` |
 * | any other | `provider_rejected` | `effect_not_started` |
 *
 * A provider that answered with a refusal applied nothing, so a retry with the same idempotency
 * key may run again. Messages name the request, the status, the provider's code and its cleaned
 * message; details carry `method`, `status`, `reason` and `attempts`.
 */
export function toolErrorOf(failure: ProviderFailure, request: ProviderRequest, attempts = 1): ToolError {
  const { status } = failure;
  const reason = failure.reason !== undefined && /^[A-Za-z0-9_.-]{1,64}$/.test(failure.reason) ? failure.reason : undefined;
  const message = failure.message ? sanitizeProviderMessage(failure.message) : "";
  const said = `${request.method} failed${status === undefined ? "" : `: HTTP ${status}`}${reason ? ` ${reason}` : ""}${message ? `: ${message}` : ""}${attempts > 1 ? ` (after ${attempts} attempts)` : ""}`;
  const details = { method: request.method, ...(status === undefined ? {} : { status }), ...(reason ? { reason } : {}), attempts };
  const common = { details, ...(failure.cause === undefined ? {} : { cause: failure.cause }) };
  const refused = { ...common, boundary: "effect_not_started" as const };
  const mayHaveApplied = request.write && !request.repeatable;

  if (status === undefined) {
    if (mayHaveApplied)
      return new ToolError("effect_state_unknown", `${said}; the request may have taken effect`, { ...common, boundary: "effect_state_unknown" });
    return new ToolError("provider_unavailable", said, { ...common, boundary: "effect_failed", retryable: true });
  }
  if (status === 401) return new ToolError("connector_reauth_required", `${said}; the connection must be authorized again`, refused);
  if (failure.meaning === "scope_missing") return new ToolError("scope_missing", `${said}; the connection lacks a scope this call needs`, refused);
  if (status === 429 || failure.meaning === "rate_limited") {
    const wait = failure.retryAfterSeconds;
    return new ToolError("rate_limited", `${said}${wait === undefined ? "" : `; retry after ${wait} s`}`, {
      ...refused,
      retryable: true,
      ...(wait === undefined ? {} : { retryAfterSeconds: wait }),
    });
  }
  if (status === 404 || status === 410) return new ToolError("not_found", said, refused);
  if (status === 409 || status === 412) return new ToolError("conflict", said, { ...refused, retryable: failure.retryable ?? false });
  if (status >= 500) {
    const boundary: EffectBoundary = mayHaveApplied ? "effect_state_unknown" : "effect_failed";
    return new ToolError("provider_unavailable", said, { ...common, boundary, retryable: !mayHaveApplied });
  }
  return new ToolError("provider_rejected", said, { ...refused, ...(failure.retryable === undefined ? {} : { retryable: failure.retryable }) });
}

/** A provider's message made safe to show: no bearer tokens, no control characters, at most 300 characters. */
export function sanitizeProviderMessage(message: string): string {
  return message
    .replace(/\bBearer\s+[A-Za-z0-9._~+/=-]+/gi, "Bearer [token]")
    .replace(/[\u0000-\u001f\u007f]+/g, " ")
    .trim()
    .slice(0, 300);
}
