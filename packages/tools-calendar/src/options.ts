import { ToolError, type RuntimeIsolation } from "@toolgate/core";
import { resolveRetry, type ResolvedRetry, type RetryOptions } from "@toolgate/provider-call";

/** Google's Calendar API host; point `rootUrl` at an emulator in tests. */
export const CALENDAR_ROOT_URL = "https://www.googleapis.com/";

/** What an operator sets when composing the Calendar family. */
export interface CalendarToolsOptions {
  /** Where the Calendar API lives; default Google's (`https://www.googleapis.com/`). */
  readonly rootUrl?: string;
  /** The connector provider name; default `google`. */
  readonly provider?: string;
  /** Most attendees one event may invite; default 50, at most 500. */
  readonly maxAttendees?: number;
  /** Retries of 429, 5xx and dropped connections, for reads and idempotent changes only. */
  readonly retry?: RetryOptions;
}

/** @internal the resolved options every tool is built from. */
export interface CalendarConfig {
  readonly rootUrl: string;
  readonly provider: string;
  readonly maxAttendees: number;
  readonly retry: ResolvedRetry;
  readonly isolation: RuntimeIsolation;
}

export function resolveOptions(options: CalendarToolsOptions = {}): CalendarConfig {
  const rootUrl = options.rootUrl ?? CALENDAR_ROOT_URL;
  let url: URL;
  try {
    url = new URL(rootUrl);
  } catch {
    throw new ToolError("config_invalid", "createCalendarTools: rootUrl is not a URL");
  }
  if (url.protocol !== "https:" && !(url.protocol === "http:" && (url.hostname === "127.0.0.1" || url.hostname === "localhost" || url.hostname === "[::1]"))) {
    throw new ToolError("config_invalid", "createCalendarTools: rootUrl must be https (or http on a loopback address)");
  }
  const maxAttendees = options.maxAttendees ?? 50;
  if (!Number.isInteger(maxAttendees) || maxAttendees < 0 || maxAttendees > 500)
    throw new ToolError("config_invalid", "createCalendarTools: maxAttendees must be 0–500");
  return {
    rootUrl,
    provider: options.provider ?? "google",
    maxAttendees,
    retry: resolveRetry(options.retry),
    isolation: {
      network: "provider",
      filesystem: "none",
      secrets: "connector",
      subprocess: "none",
      notes: `Calendar API at ${url.origin} through the connector's OAuth client`,
    },
  };
}
