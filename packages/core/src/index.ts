/**
 * @toolgate/core — what app builders and family authors use: tool manifests and families,
 * profiles, the registry, the gate and its results, errors, the context a body gets, the memory
 * journal. Stores, connectors, boundary helpers, operator functions and the test kits have their
 * own entry points (`/store-kit`, `/connectors`, `/boundary`, `/operator`, `/testing`).
 */
export { TOOL_ERROR_CODES, EFFECT_BOUNDARIES, ToolError, isToolErrorCode } from "./errors.js";
export type { ToolErrorCode, EffectBoundary, ToolErrorOptions } from "./errors.js";

export { canonicalJson, hashCanonical, sha256Hex } from "./canonical-json.js";

export {
  defineTool,
  isSideEffectful,
  jsonSchemaOf,
  TOOL_ID_PATTERN,
  TOOL_ID_MAX_LENGTH,
  EFFECTS,
  RISK_LEVELS,
  VISIBILITIES,
  DATA_CLASSES,
  DEFAULT_TIMEOUT_MS,
} from "./manifest.js";
export type {
  ToolDefinition,
  ToolManifest,
  AnyToolManifest,
  ActionType,
  Effect,
  RiskLevel,
  Visibility,
  DataClass,
  SovereigntyClass,
  RuntimeIsolation,
  ApprovalPreview,
  ApprovalRule,
  ConnectorRequirement,
} from "./manifest.js";

export type {
  ToolContext,
  PreviewContext,
  EffectIdentity,
  ProgressEvent,
  ConnectorHandle,
  ConnectorRuntime,
  ConnectorOpenRequest,
  Verifier,
  VerifierRunRequest,
  VerifierRunResult,
  Workspace,
  WorkspaceRef,
} from "./context.js";

export { defineFamily, SHARED_BOUNDARY_TOKENS } from "./family.js";
export type { ToolFamily, FamilyDefinition, SharedBoundaryToken } from "./family.js";

export { createToolRegistry, ToolRegistry } from "./registry.js";
export type { ToolDescriptor, ListOptions, ToolIdOf, ToolInput, ToolOutput, ToolById, ToolsOfFamilies } from "./registry.js";

export { defineProfile, profileSchema } from "./profile.js";
export type { Profile, ProfileDefinition, InjectionPolicy } from "./profile.js";

export { evaluatePolicy } from "./policy.js";
export type { PolicyDecision } from "./policy.js";

export { createRedactor, REDACTED } from "./redactor.js";
export type { Redactor } from "./redactor.js";

export { scanForInjection, fenceUntrusted } from "./untrusted.js";
export type { InjectionFinding, FencedContent } from "./untrusted.js";

export { createGate } from "./gate/gate.js";
export type { Gate, AnyGate, CreateGateOptions, CallOptions, InputFor, OutputFor } from "./gate/gate.js";
// What a provenance judgement holds (its fields and sources) is in `/operator`.
export type { ProvenanceSession, SessionOptions } from "./provenance/session.js";
export type { InvokeResult, OkResult, ApprovalRequiredResult, DeniedResult, ErrorResult } from "./gate/results.js";
export type { ApprovalGrant, ApprovalDesk, GrantOptions, DenyOptions } from "./gate/approvals.js";

// The rest of the authority (its interface, operators, MCP clients, kill switches, a decision's result) is in `/operator`.
export type { Approver } from "./authority/types.js";

export { createMemoryJournal } from "./journal/memory.js";
export type { MemoryJournal, MemoryJournalOptions } from "./journal/memory.js";
export type { Journal, JournalReceipt, AuditRecord, OutboxEntry, OutboxState, ApprovalRequest, ApprovalStatus } from "./journal/types.js";
