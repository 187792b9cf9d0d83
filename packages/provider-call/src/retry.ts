import { ToolError } from "@toolgate/core";

/** Waits `ms`, or rejects when `signal` aborts. */
export type Sleep = (ms: number, signal: AbortSignal) => Promise<void>;

/**
 * How a family retries a provider request that failed with 429, 5xx or a dropped connection.
 * Every family that reaches a provider takes this as its `retry` option.
 */
export interface RetryOptions {
  /** Attempts in all, including the first; default 3, at most 10. 1 turns retries off. */
  readonly maxAttempts?: number;
  /** Longest wait between attempts; a `Retry-After` longer than this is not waited for. Default per connector (10 s for Google, 30 s for Notion). */
  readonly maxDelayMs?: number;
  /** First backoff when the provider gave no `Retry-After`; doubled each attempt. Default 250 ms. */
  readonly baseDelayMs?: number;
  /** How to wait between attempts; default a timer that stops when the call is cancelled. Tests pass one that records the waits. */
  readonly sleep?: Sleep;
}

/** Retry options with every default filled in and checked. */
export interface ResolvedRetry {
  readonly maxAttempts: number;
  readonly maxDelayMs: number;
  readonly baseDelayMs: number;
  readonly sleep: Sleep;
}

/**
 * Fill in and check a family's retry options. `defaults` is the connector's choice where the
 * options leave one out.
 *
 * @throws ToolError `config_invalid` naming the option that is out of range.
 */
export function resolveRetry(options: RetryOptions | undefined, defaults: Partial<Omit<ResolvedRetry, "sleep">> = {}): ResolvedRetry {
  const maxAttempts = options?.maxAttempts ?? defaults.maxAttempts ?? 3;
  const maxDelayMs = options?.maxDelayMs ?? defaults.maxDelayMs ?? 10_000;
  const baseDelayMs = options?.baseDelayMs ?? defaults.baseDelayMs ?? 250;
  if (!Number.isInteger(maxAttempts) || maxAttempts < 1 || maxAttempts > 10)
    throw new ToolError("config_invalid", "retry.maxAttempts must be a whole number from 1 to 10");
  if (!Number.isFinite(maxDelayMs) || maxDelayMs < 0) throw new ToolError("config_invalid", "retry.maxDelayMs must be a non-negative number");
  if (!Number.isFinite(baseDelayMs) || baseDelayMs < 0) throw new ToolError("config_invalid", "retry.baseDelayMs must be a non-negative number");
  if (options?.sleep !== undefined && typeof options.sleep !== "function") throw new ToolError("config_invalid", "retry.sleep must be a function");
  return { maxAttempts, maxDelayMs, baseDelayMs, sleep: options?.sleep ?? sleep };
}

/** The wait before attempt `attempt + 1`: the provider's `Retry-After`, else exponential backoff from `baseDelayMs`. */
export function delayBefore(retry: ResolvedRetry, attempt: number, retryAfterSeconds: number | undefined): number {
  return retryAfterSeconds !== undefined ? retryAfterSeconds * 1000 : retry.baseDelayMs * 2 ** (attempt - 1);
}

/** Wait `ms`; reject with `cancelled` as soon as `signal` aborts (or at once if it already has). */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(new ToolError("cancelled", "cancelled while waiting to retry"));
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

/**
 * Seconds a `Retry-After` value asks for: delay-seconds, or an HTTP date (rounded up from `now`).
 * Anything else is undefined.
 */
export function parseRetryAfter(value: string | null | undefined, now: number = Date.now()): number | undefined {
  if (value === null || value === undefined) return undefined;
  const text = value.trim();
  if (/^\d{1,6}$/.test(text)) return Number(text);
  if (!/[a-z]/i.test(text)) return undefined;
  const date = Date.parse(text);
  return Number.isNaN(date) ? undefined : Math.max(0, Math.ceil((date - now) / 1000));
}

/** A response header from whatever a client library kept: a `Headers`, something with `get`, or a plain record (any letter case). */
export function headerValue(headers: unknown, name: string): string | undefined {
  if (headers === null || typeof headers !== "object") return undefined;
  const get = (headers as { get?: unknown }).get;
  if (typeof get === "function") {
    const value: unknown = get.call(headers, name);
    return typeof value === "string" ? value : undefined;
  }
  const lower = name.toLowerCase();
  const entry = Object.entries(headers as Record<string, unknown>).find(([key]) => key.toLowerCase() === lower);
  const value = entry?.[1];
  return typeof value === "string" ? value : Array.isArray(value) && typeof value[0] === "string" ? value[0] : undefined;
}
