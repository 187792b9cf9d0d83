export { createNotionTools, NOTION_PERMISSIONS } from "./notion-tools.js";
export type { NotionPermission } from "./notion-tools.js";
export type { NotionToolsOptions } from "./shared.js";
export { NOTION_WRITE_CONSENT } from "./shared.js";
export {
  createNotionConnector,
  notionIntegrationTokens,
  exchangeNotionCode,
  NOTION_PROVIDER,
  NOTION_CAPABILITIES,
  NOTION_API_URL,
  NOTION_VERSION,
  NEVER_EXPIRES,
} from "./connector.js";
export type { NotionConnectorOptions, NotionAccess, NotionCapability, ExchangeNotionCodeOptions } from "./connector.js";
export { markdownToBlocks, blocksToMarkdown, chunkBlocks } from "./markdown.js";
export type { BlockNode } from "./markdown.js";
export { createMarker } from "./tools/create-page.js";
