export { startNotionEmulator } from "./server.js";
export type { NotionEmulator, NotionEmulatorOptions, NotionSeed } from "./server.js";
export { NOTION_VERSIONS } from "./caller.js";
export type { NotionFault } from "./faults.js";
export type { NotionRequestRecord } from "./handle-request.js";
export { NotionWorld } from "./world.js";
export { NOTION_CAPABILITIES } from "./world-model.js";
export type { NotionCapability, NotionIntegration, IntegrationSeed, PageSeed, DatabaseSeed, PageParentSeed } from "./world-model.js";
export type { PropertySpec, PropertyType } from "./convert.js";
