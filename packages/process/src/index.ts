export { startToolProcess, UNSANDBOXED_WARNING } from "./host/start-tool-process.js";
export type {
  StartToolProcessOptions,
  ProcessToolSettings,
  RestartPolicy,
  ProcessLogEvent,
  ToolProcessHandle,
  ToolProcessState,
  ToolProcessStatus,
} from "./host/options.js";
export { processOutputSchema } from "./host/manifests.js";
export { defaultScopeToken, scopeWithin, TOKEN_PATTERN } from "./host/scopes.js";
export type { ScopeTokenMapping } from "./host/scopes.js";
export { DEFAULT_PASS_ENV, resolveSandbox } from "./host/spawn.js";
export type { ResolvedSandbox, SandboxKind, SandboxOption } from "./host/spawn.js";
export type { ToolClaim } from "./host/untrusted-text.js";
export { MAX_NOTIFICATION_CHARS, MAX_NOTIFICATIONS_PER_SECOND } from "./host/after-calls.js";
export type { ProcessNotification } from "./host/after-calls.js";
export { NOTIFICATION_EVENT } from "./host/notification-audit.js";
export type { NotificationAudit } from "./host/notification-audit.js";

export { FrameDecoder, FrameError, encodeFrame, FRAME_PROBLEMS } from "./protocol/codec.js";
export type { FrameDecoderOptions, FrameProblem } from "./protocol/codec.js";
export {
  PROTOCOL_VERSION,
  MAX_FRAME_BYTES,
  VERIFICATION_STATES,
  WIRE_ERROR_CODES,
  classifyToolMessage,
  classifyHostMessage,
  toolHelloSchema,
  invokeToolSchema,
  cancelInvocationSchema,
  toolShutdownSchema,
  declaredToolSchema,
  toolRegisterSchema,
  toolEventSchema,
  toolEventBodySchema,
  toolResultSchema,
  toolErrorSchema,
  requiresEscalationSchema,
} from "./protocol/messages.js";
export type {
  Classified,
  HostMessage,
  ToolMessage,
  ToolHello,
  InvokeTool,
  CancelInvocation,
  ToolShutdown,
  DeclaredTool,
  ToolRegister,
  ToolEvent,
  ToolEventBody,
  ToolResult,
  ToolErrorFrame,
  RequiresEscalation,
  DispatchNotification,
  VerificationState,
} from "./protocol/messages.js";

export { runConformance, runConformanceCli, CONFORMANCE_CHECKS } from "./conformance/index.js";
export type { ConformanceOptions, ConformanceReport, ConformanceCheck } from "./conformance/index.js";
