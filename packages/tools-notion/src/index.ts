export { createNotionTools, NOTION_PERMISSIONS } from "./notion-tools.js";
export type { NotionPermission } from "./notion-tools.js";
export type { NotionToolsOptions } from "./shared.js";
export { NOTION_WRITE_CONSENT } from "./shared.js";
export type { RetryOptions } from "@toolgate/provider-call";
export { markdownToBlocks, blocksToMarkdown, chunkBlocks } from "./markdown.js";
export type { BlockNode } from "./markdown.js";
export { createMarker } from "./tools/create-page.js";
