import { APIErrorCode, APIResponseError, isHTTPResponseError, RequestTimeoutError, type Client } from "@notionhq/client";
import { ToolError, type PreviewContext, type ToolContext } from "@toolgate/core";
import type { NotionAccess } from "./connector.js";

/** How the tools retry a Notion request the API asked them to retry. */
export interface RetrySettings {
  /** Retries after the first attempt; default 2. */
  readonly maxRetries: number;
  /** The longest wait honoured; a longer `Retry-After` ends the call with `rate_limited`. Default 30 s. */
  readonly maxDelayMs: number;
  /** Waits `ms` or rejects when `signal` aborts. */
  readonly sleep: (ms: number, signal: AbortSignal) => Promise<void>;
}

export const defaultSleep = (ms: number, signal: AbortSignal): Promise<void> =>
  new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", abort);
      resolve();
    }, ms);
    const abort = (): void => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    signal.addEventListener("abort", abort, { once: true });
  });

/** A Notion client for one call, whose requests are retried and whose failures are ToolErrors. */
export interface NotionCaller {
  /** A request that changes nothing: retried on 429 and 5xx. */
  read<T>(what: string, request: (client: Client) => Promise<T>): Promise<T>;
  /** A request with an effect: retried only when Notion said it did not apply it (429). */
  write<T>(what: string, request: (client: Client) => Promise<T>): Promise<T>;
}

export async function notionCaller(ctx: Pick<ToolContext | PreviewContext, "connector" | "signal">, retry: RetrySettings): Promise<NotionCaller> {
  if (!ctx.connector) throw new ToolError("connector_unavailable", "the Notion tools need a Notion connection");
  const access = await ctx.connector.client<NotionAccess>();
  const client = access.client(ctx.signal);
  const run = async <T>(kind: "read" | "write", what: string, request: (client: Client) => Promise<T>): Promise<T> => {
    for (let attempt = 0; ; attempt++) {
      try {
        return await request(client);
      } catch (error) {
        const wait = retryDelayMs(error, kind, attempt);
        if (wait !== undefined && attempt < retry.maxRetries && wait <= retry.maxDelayMs && !ctx.signal.aborted) {
          await retry.sleep(wait, ctx.signal);
          continue;
        }
        throw toToolError(error, kind, what, ctx.signal);
      }
    }
  };
  return { read: (what, request) => run("read", what, request), write: (what, request) => run("write", what, request) };
}

/** How long to wait before retrying, or undefined when the failure is not worth retrying. */
function retryDelayMs(error: unknown, kind: "read" | "write", attempt: number): number | undefined {
  if (!isHTTPResponseError(error)) return undefined;
  if (error.status === 429) return (retryAfterSeconds(error) ?? 1) * 1000;
  if (kind === "read" && error.status >= 500) return Math.min(250 * 2 ** attempt, 4000);
  return undefined;
}

function retryAfterSeconds(error: { headers: unknown }): number | undefined {
  const headers = error.headers;
  let raw: string | null | undefined;
  if (headers instanceof Headers) raw = headers.get("retry-after");
  else if (headers !== null && typeof headers === "object") {
    const entry = Object.entries(headers as Record<string, unknown>).find(([k]) => k.toLowerCase() === "retry-after");
    raw = typeof entry?.[1] === "string" ? entry[1] : undefined;
  }
  if (raw === null || raw === undefined) return undefined;
  const seconds = Number(raw);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds;
  const date = Date.parse(raw);
  return Number.isNaN(date) ? undefined : Math.max(0, Math.ceil((date - Date.now()) / 1000));
}

/**
 * Map a Notion failure onto Toolgate's codes. Messages are the family's own: a provider's message
 * is included only for validation errors, where it tells the model what to fix.
 */
export function toToolError(error: unknown, kind: "read" | "write", what: string, signal?: AbortSignal): ToolError {
  if (ToolError.is(error)) return error;
  const refused = { boundary: "effect_not_started" as const };
  const unknownEffect = kind === "write" ? ("effect_state_unknown" as const) : ("effect_failed" as const);
  if (signal?.aborted) return new ToolError("cancelled", `${what} was cancelled`, { boundary: unknownEffect });
  if (APIResponseError.isAPIResponseError(error)) {
    switch (error.code) {
      case APIErrorCode.ObjectNotFound:
        return new ToolError("not_found", `${what}: Notion has no such object, or it is not shared with this connection's integration`, { ...refused, cause: error });
      case APIErrorCode.Unauthorized:
        return new ToolError("connector_reauth_required", `${what}: Notion refused the connection's token; it must be authorized again`, { ...refused, cause: error });
      case APIErrorCode.RestrictedResource:
        return new ToolError("scope_missing", `${what}: the Notion integration lacks the capability this needs`, { ...refused, cause: error });
      case APIErrorCode.RateLimited: {
        const seconds = retryAfterSeconds(error);
        return new ToolError("rate_limited", `${what}: Notion is rate limiting this integration${seconds === undefined ? "" : `; retry after ${seconds} s`}`, {
          ...refused,
          cause: error,
          retryable: true,
          ...(seconds === undefined ? {} : { retryAfterSeconds: seconds }),
        });
      }
      case APIErrorCode.ConflictError:
        return new ToolError("conflict", `${what}: Notion reported a conflicting change; try again`, { ...refused, cause: error, retryable: true });
      case APIErrorCode.ValidationError:
      case APIErrorCode.InvalidJSON:
      case APIErrorCode.InvalidRequest:
      case APIErrorCode.InvalidRequestURL:
        return new ToolError("provider_rejected", `${what}: Notion refused the request: ${error.message.slice(0, 300)}`, { ...refused, cause: error });
      default:
        return new ToolError("provider_unavailable", `${what}: Notion failed (HTTP ${error.status})`, { boundary: unknownEffect, cause: error, retryable: kind === "read" });
    }
  }
  if (isHTTPResponseError(error)) {
    return new ToolError("provider_unavailable", `${what}: Notion answered HTTP ${error.status}`, { boundary: error.status >= 500 ? unknownEffect : "effect_not_started", cause: error, retryable: kind === "read" });
  }
  if (RequestTimeoutError.isRequestTimeoutError(error)) {
    return new ToolError("provider_unavailable", `${what}: Notion did not answer in time`, { boundary: unknownEffect, cause: error, retryable: kind === "read" });
  }
  return new ToolError("provider_unavailable", `${what}: Notion could not be reached`, { boundary: unknownEffect, cause: error, retryable: kind === "read" });
}
