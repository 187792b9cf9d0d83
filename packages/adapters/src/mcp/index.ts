export { createMcpServer, serveMcp, toMcpTool, MCP_META } from "./server.js";
export type { McpServerOptions, ServeMcpOptions, McpTransportOption, McpServerHandle } from "./server.js";
export { serveMcpCommand } from "./command.js";
export type { ServeMcpCommandOptions } from "./command.js";
export { importMcpServer, definitionDigest } from "./import.js";
export type { ImportMcpServerOptions, ImportedToolDescription, ImportedMcpServer, SkippedTool, DriftReport } from "./import.js";
export { reachableTools } from "../shared/reachable.js";
export type { ExposeOptions } from "../shared/reachable.js";
