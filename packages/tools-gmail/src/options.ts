import { ToolError, type RuntimeIsolation } from "@toolgate/core";
import { resolveRetry, type ResolvedRetry, type RetryOptions } from "@toolgate/provider-call";

/** Google's Gmail API host; point `rootUrl` at an emulator in tests. */
export const GMAIL_ROOT_URL = "https://gmail.googleapis.com/";

/** What an operator sets when composing the Gmail family. */
export interface GmailToolsOptions {
  /** Where the Gmail API lives; default Google's (`https://gmail.googleapis.com/`). */
  readonly rootUrl?: string;
  /** The connector provider name; default `google`. */
  readonly provider?: string;
  /**
   * The address the connected mailbox sends as. Shown in every send preview and written as the
   * `From` header; without it the preview says "the connected account" and Gmail fills it in.
   */
  readonly from?: string;
  /**
   * Recipient allowlist for `gmail.send_message` and `gmail.send_draft`: exact addresses
   * (`ana@example.com`) or whole domains (`@example.com`). When set, a send to anyone else is
   * refused — for `send_message` by input validation, before any token is read; an empty list
   * refuses every send (fail-closed). Absent: any recipient (still behind approval).
   */
  readonly recipientAllowlist?: readonly string[];
  /** Most recipients (to + cc + bcc) one message may have; default 20, at most 500. */
  readonly maxRecipients?: number;
  /** Whether composed messages may carry attachments; default false. */
  readonly attachments?: boolean;
  /** Largest total attachment size in bytes, when attachments are on; default 5 MiB. */
  readonly maxAttachmentBytes?: number;
  /** Longest body text returned by the read tools, in characters; default 20 000. */
  readonly maxBodyChars?: number;
  /** Retries of 429, 5xx and dropped connections, for reads and idempotent changes only. */
  readonly retry?: RetryOptions;
}

/** @internal the resolved options every tool is built from. */
export interface GmailConfig {
  readonly rootUrl: string;
  readonly provider: string;
  readonly from: string | undefined;
  readonly allowlist: { readonly addresses: ReadonlySet<string>; readonly domains: ReadonlySet<string> } | undefined;
  readonly maxRecipients: number;
  readonly attachments: boolean;
  readonly maxAttachmentBytes: number;
  readonly maxBodyChars: number;
  readonly retry: ResolvedRetry;
  readonly isolation: RuntimeIsolation;
}

const ADDRESS = /^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+$/;

/** A bare addr-spec (`local@domain`), at most 254 characters. */
export function isAddress(value: string): boolean {
  return value.length <= 254 && ADDRESS.test(value);
}

export function resolveOptions(options: GmailToolsOptions = {}): GmailConfig {
  const rootUrl = options.rootUrl ?? GMAIL_ROOT_URL;
  let url: URL;
  try {
    url = new URL(rootUrl);
  } catch {
    throw new ToolError("config_invalid", "createGmailTools: rootUrl is not a URL");
  }
  if (url.protocol !== "https:" && !(url.protocol === "http:" && (url.hostname === "127.0.0.1" || url.hostname === "localhost" || url.hostname === "[::1]"))) {
    throw new ToolError("config_invalid", "createGmailTools: rootUrl must be https (or http on a loopback address)");
  }
  if (options.from !== undefined && !isAddress(options.from)) throw new ToolError("config_invalid", "createGmailTools: from must be a bare email address");
  let allowlist: GmailConfig["allowlist"];
  if (options.recipientAllowlist !== undefined) {
    const addresses = new Set<string>();
    const domains = new Set<string>();
    for (const entry of options.recipientAllowlist) {
      const lower = String(entry).trim().toLowerCase();
      if (lower.startsWith("@") && isAddress(`x${lower}`)) domains.add(lower.slice(1));
      else if (isAddress(lower)) addresses.add(lower);
      else throw new ToolError("config_invalid", `createGmailTools: recipientAllowlist entry ${JSON.stringify(entry)} is neither an address nor @domain`);
    }
    allowlist = { addresses, domains };
  }
  const maxRecipients = options.maxRecipients ?? 20;
  if (!Number.isInteger(maxRecipients) || maxRecipients < 1 || maxRecipients > 500)
    throw new ToolError("config_invalid", "createGmailTools: maxRecipients must be 1–500");
  const maxAttachmentBytes = options.maxAttachmentBytes ?? 5 * 1024 * 1024;
  if (!Number.isInteger(maxAttachmentBytes) || maxAttachmentBytes < 1)
    throw new ToolError("config_invalid", "createGmailTools: maxAttachmentBytes must be a positive whole number");
  const maxBodyChars = options.maxBodyChars ?? 20_000;
  if (!Number.isInteger(maxBodyChars) || maxBodyChars < 100) throw new ToolError("config_invalid", "createGmailTools: maxBodyChars must be at least 100");
  return {
    rootUrl,
    provider: options.provider ?? "google",
    from: options.from?.toLowerCase(),
    allowlist,
    maxRecipients,
    attachments: options.attachments ?? false,
    maxAttachmentBytes,
    maxBodyChars,
    retry: resolveRetry(options.retry),
    isolation: {
      network: "provider",
      filesystem: "none",
      secrets: "connector",
      subprocess: "none",
      notes: `Gmail API at ${url.origin} through the connector's OAuth client`,
    },
  };
}

/** True when the allowlist (if any) admits the address. */
export function recipientAllowed(config: GmailConfig, address: string): boolean {
  if (!config.allowlist) return true;
  const lower = address.toLowerCase();
  const domain = lower.slice(lower.lastIndexOf("@") + 1);
  return config.allowlist.addresses.has(lower) || config.allowlist.domains.has(domain);
}
