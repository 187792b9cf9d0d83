import { NOTION_PROVIDER, type NotionCapability } from "@toolgate/connector-notion";

/** The permission tokens of the Notion family. */
export const NOTION_PERMISSIONS = ["notion:read", "notion:write", "notion:comment"] as const;
export type NotionPermission = (typeof NOTION_PERMISSIONS)[number];

/** The consent a profile must hold before the tools send the caller's data to Notion. */
export const NOTION_WRITE_CONSENT = "notion-write-on-my-behalf";

/** What a tool needs of the connection: Notion's capabilities are the connection's scopes. */
export const connector = (...scopes: NotionCapability[]) => ({ provider: NOTION_PROVIDER, scopes });
