export { toOpenAITools } from "./tools.js";
export type { OpenAITools, OpenAIToolsOptions, OpenAIToolProgress, OpenAIFunctionDefinition, OpenAIName, ToolIdOfName } from "./tools.js";
export { GATE_SPAN_NAME } from "./trace.js";
export type { GateCallReport } from "./trace.js";
export type { ApprovalRequestEvent, FrameworkApprovalOptions } from "../shared/approval-broker.js";
export type { GateProgress } from "../shared/progress.js";
export type { ExposeOptions } from "../shared/reachable.js";
export { agentsTracerProvider } from "./otel-bridge.js";
