export { startNotionEmulator, NOTION_VERSIONS } from "./server.js";
export type { NotionEmulator, NotionEmulatorOptions, NotionFault, NotionRequestRecord, NotionSeed } from "./server.js";
export { NotionWorld, NOTION_CAPABILITIES } from "./world.js";
export type { NotionCapability, NotionIntegration, IntegrationSeed, PageSeed, DatabaseSeed, PageParentSeed } from "./world.js";
export type { PropertySpec, PropertyType } from "./convert.js";
