export { toOpenAITools } from "./tools.js";
export type { OpenAITools, OpenAIToolsOptions, OpenAIFunctionDefinition, OpenAIName, ToolIdOfName } from "./tools.js";
export type { ApprovalRequestEvent, FrameworkApprovalOptions } from "../shared/approval-broker.js";
export type { ExposeOptions } from "../shared/reachable.js";
