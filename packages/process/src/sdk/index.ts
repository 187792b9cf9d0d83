export { serveToolProcess, processTool } from "./serve.js";
export type { ServeToolProcessOptions, ProcessTool, ProcessToolContext } from "./serve.js";
export { PROTOCOL_VERSION } from "../protocol/frames.js";
