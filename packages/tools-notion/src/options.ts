import { ToolError } from "@toolgate/core";
import { resolveRetry, type ResolvedRetry, type RetryOptions } from "@toolgate/provider-call";

/** Options of `createNotionTools`. */
export interface NotionToolsOptions {
  /**
   * The rich-text property of a database that carries `notion.create_page`'s duplicate marker (derived
   * from the call's idempotency key). Databases the agent creates pages in need it. Default `Toolgate key`.
   */
  readonly markerProperty?: string;
  /** The most blocks `notion.read_page` fetches (nested ones counted); default 1,000. */
  readonly maxReadBlocks?: number;
  /** How deep `notion.read_page` follows nested children; default 3. */
  readonly maxReadDepth?: number;
  /** Retries after a 429 (honouring `Retry-After`), or a read's 5xx or lost answer; `maxDelayMs` defaults to 30 s. */
  readonly retry?: RetryOptions;
}

/** Resolved options, shared by the tools of one family. */
export interface NotionSettings {
  readonly markerProperty: string;
  readonly maxReadBlocks: number;
  readonly maxReadDepth: number;
  readonly retry: ResolvedRetry;
}

export function resolveSettings(options: NotionToolsOptions = {}): NotionSettings {
  const int = (value: number | undefined, fallback: number, min: number, max: number, name: string): number => {
    const v = value ?? fallback;
    if (!Number.isInteger(v) || v < min || v > max)
      throw new ToolError("config_invalid", `createNotionTools: ${name} must be a whole number from ${min} to ${max}`);
    return v;
  };
  const markerProperty = options.markerProperty ?? "Toolgate key";
  if (typeof markerProperty !== "string" || markerProperty.trim() === "")
    throw new ToolError("config_invalid", "createNotionTools: markerProperty must be a property name");
  return {
    markerProperty,
    maxReadBlocks: int(options.maxReadBlocks, 1000, 1, 100_000, "maxReadBlocks"),
    maxReadDepth: int(options.maxReadDepth, 3, 0, 10, "maxReadDepth"),
    retry: resolveRetry(options.retry, { maxDelayMs: 30_000 }),
  };
}
