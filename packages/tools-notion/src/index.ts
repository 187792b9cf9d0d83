export { createNotionTools } from "./notion-tools.js";
export { NOTION_PERMISSIONS, NOTION_WRITE_CONSENT } from "./permissions.js";
export type { NotionPermission } from "./permissions.js";
export type { NotionToolsOptions } from "./options.js";
export type { RetryOptions } from "@toolgate/provider-call";
export { markdownToBlocks, blocksToMarkdown, chunkBlocks } from "./markdown.js";
export type { BlockNode } from "./markdown.js";
export { createMarker } from "./tools/create-page.js";
