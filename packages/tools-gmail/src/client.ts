import { gmail, type gmail_v1 } from "@googleapis/gmail";
import { ToolError, type ConnectorHandle } from "@toolgate/core";
import type { GmailConfig } from "./options.js";

/** The authorized Gmail client for a call; the library's own retries are off (the family retries). */
export async function gmailClient(config: GmailConfig, connector: ConnectorHandle | undefined): Promise<gmail_v1.Gmail> {
  if (!connector) throw new ToolError("connector_unavailable", "the Gmail tools need a Google connector", { boundary: "effect_not_started" });
  const auth = await connector.client<NonNullable<gmail_v1.Options["auth"]>>();
  return gmail({ version: "v1", auth, rootUrl: config.rootUrl, retry: false });
}
