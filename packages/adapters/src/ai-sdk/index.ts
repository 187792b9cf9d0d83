export { toAiSdkTools } from "./tools.js";
export type { AiSdkTools, AiSdkTool, AiSdkToolsOptions } from "./tools.js";
export { GateCallError } from "../shared/approval-broker.js";
export type { ApprovalRequestEvent, FrameworkApprovalOptions } from "../shared/approval-broker.js";
export type { GateProgress } from "../shared/progress.js";
export type { ExposeOptions } from "../shared/reachable.js";
