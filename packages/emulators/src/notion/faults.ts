/** Faults a test injects into the Notion emulator's next matching requests, and the errors they answer with. */
import { invalid, NotionApiError } from "./errors.js";

/**
 * A fault the emulator injects into the next matching requests.
 * - `rate_limit`: 429 `rate_limited` with `Retry-After: retryAfterSeconds` (default 1), no effect.
 * - `server_error`: `status` (default 500) with Notion's code for it, no effect.
 * - `conflict`: 409 `conflict_error`, no effect.
 * - `validation_error`: 400 `validation_error` with `message` (Notion's validation messages quote the value they refuse), no effect.
 * - `drop_after_effect`: the request takes effect, then the connection is destroyed unanswered.
 * - `latency`: wait `latencyMs` before handling.
 */
export interface NotionFault {
  readonly kind: "rate_limit" | "server_error" | "conflict" | "validation_error" | "drop_after_effect" | "latency";
  /** Only requests with this method (upper case). */
  readonly method?: string;
  /** Only requests whose path (after `/v1`) starts with this string or matches this pattern. */
  readonly path?: string | RegExp;
  /** How many matching requests it hits; default 1. */
  readonly times?: number;
  readonly retryAfterSeconds?: number;
  readonly status?: 500 | 502 | 503 | 504;
  readonly latencyMs?: number;
  /** The message a `validation_error` answers with. */
  readonly message?: string;
}

/** The faults that answer in place of the request: the request has no effect. */
export const REFUSING_FAULTS = ["rate_limit", "server_error", "conflict", "validation_error"] as const;

/** The faults still to hit, in the order they were added. */
export class FaultList {
  private readonly entries: { rule: NotionFault; left: number }[] = [];

  add(rule: NotionFault): void {
    this.entries.push({ rule, left: rule.times ?? 1 });
  }

  clear(): void {
    this.entries.length = 0;
  }

  /** The first fault of one of these kinds that matches the request, counted as hit. */
  take(method: string, path: string, kinds: readonly NotionFault["kind"][]): NotionFault | undefined {
    for (const entry of this.entries) {
      const { rule } = entry;
      if (entry.left <= 0 || !kinds.includes(rule.kind)) continue;
      if (rule.method !== undefined && rule.method.toUpperCase() !== method) continue;
      if (rule.path !== undefined && !(typeof rule.path === "string" ? path.startsWith(rule.path) : rule.path.test(path))) continue;
      entry.left--;
      return rule;
    }
    return undefined;
  }
}

/** The error a refusing fault answers with; undefined for the faults that let the request run. */
export function faultError(fault: NotionFault | undefined): NotionApiError | undefined {
  switch (fault?.kind) {
    case "rate_limit":
      return new NotionApiError("rate_limited", "You have been rate limited. Please try again in a few minutes.", {
        "retry-after": String(fault.retryAfterSeconds ?? 1),
      });
    case "server_error": {
      const status = fault.status ?? 500;
      return status === 500
        ? new NotionApiError("internal_server_error", "Unexpected error occurred.", {}, 500)
        : new NotionApiError("service_unavailable", "Notion is unavailable, please try again later.", {}, status);
    }
    case "conflict":
      return new NotionApiError("conflict_error", "Conflict occurred while saving. Please try again.");
    case "validation_error":
      return invalid(fault.message ?? "body failed validation.");
    default:
      return undefined;
  }
}
