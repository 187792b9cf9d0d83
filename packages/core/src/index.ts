export { TOOL_ERROR_CODES, EFFECT_BOUNDARIES, ToolError, isToolErrorCode } from "./errors.js";
export type { ToolErrorCode, EffectBoundary, ToolErrorOptions } from "./errors.js";

export { canonicalJson, hashCanonical, sha256Hex } from "./canonical-json.js";

export {
  defineTool,
  sovereigntyOf,
  isSideEffectful,
  jsonSchemaOf,
  TOOL_ID_PATTERN,
  TOOL_ID_MAX_LENGTH,
  TOKEN_PATTERN,
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

export { resolveWithinRoot, createRootGuard, MAX_CANDIDATE_LENGTH } from "./boundary/resolve-within-root.js";
export type { ResolveWithinRootOptions, RootGuard, PathRefusalReason } from "./boundary/resolve-within-root.js";
export { createVerifier, DEFAULT_SANDBOX_READ_ONLY_PATHS, TRUNCATION_MARKER } from "./boundary/verifier.js";
export type {
  CreateVerifierOptions,
  CommandVerifier,
  VerifierCommand,
  VerifierCommandArgs,
  VerifierEnv,
  VerifierSandbox,
  BubblewrapSandbox,
} from "./boundary/verifier.js";
export { createWorkspace } from "./boundary/workspace.js";
export type { CreateWorkspaceOptions, ArtifactWorkspace } from "./boundary/workspace.js";

export { defineFamily, SHARED_BOUNDARY_TOKENS } from "./family.js";
export type { ToolFamily, FamilyDefinition, SharedBoundaryToken } from "./family.js";

export { createToolRegistry, ToolRegistry } from "./registry.js";
export type { ToolDescriptor, ListOptions, ToolIdOf, ToolInput, ToolOutput, ToolById, ToolsOfFamilies } from "./registry.js";

export { defineProfile } from "./profile.js";
export { profileSchema } from "./profile.js";
export type { Profile, ProfileDefinition, InjectionPolicy } from "./profile.js";

export { evaluatePolicy } from "./policy.js";
export type { PolicyDecision } from "./policy.js";

export { createRedactor, REDACTED, MIN_SECRET_LENGTH } from "./redactor.js";
export type { Redactor } from "./redactor.js";

export { scanForInjection, fenceUntrusted, normalizeForScan } from "./untrusted.js";
export type { InjectionFinding, FencedContent } from "./untrusted.js";

export { createGate } from "./gate/gate.js";
export type { Gate, AnyGate, CreateGateOptions, CallOptions, InputFor, OutputFor } from "./gate/gate.js";
export type { InvokeResult, OkResult, ApprovalRequiredResult, DeniedResult, ErrorResult } from "./gate/results.js";
export type { ApprovalGrant, ApprovalDesk, GrantOptions, DenyOptions } from "./gate/approvals.js";

export { createMemoryJournal } from "./journal/memory.js";
export type { MemoryJournal, MemoryJournalOptions } from "./journal/memory.js";
export { createJournal } from "./journal/create-journal.js";
export type { CreateJournalOptions } from "./journal/create-journal.js";
export type {
  JournalDriver,
  JournalTransaction,
  TransactionReads,
  OutboxClaim,
  StoredEntry,
  StoredRequest,
  AuditHead,
  ListFilter,
} from "./journal/driver.js";
export { verifyAuditChain, computeAuditMac, chainAuditEvent, sealAuditEvent, unsealAuditEvent, auditPayload } from "./journal/audit-chain.js";
export type { SealedAuditEvent } from "./journal/audit-chain.js";
export type { AuditChainVerdict, VerifyAuditChainOptions, AuditKey } from "./journal/audit-chain.js";
export { checkGrant } from "./journal/grant-check.js";
export { GENESIS_MAC } from "./journal/types.js";
export type {
  Journal,
  AuditEventType,
  AuditEventInput,
  AuditRecord,
  JournalReceipt,
  OutboxState,
  OutboxEntry,
  IntentInput,
  BeginIntentOptions,
  BeginIntentResult,
  ClaimOutboxOptions,
  Settlement,
  RecordedResult,
  RecordedError,
  ApprovalStatus,
  ApprovalBinding,
  ApprovalRequest,
  ApprovalRequestInput,
  ApprovalDecision,
  GrantCheck,
  GrantOutcome,
} from "./journal/types.js";

export { recoverOutbox, resolveOutboxEntry } from "./recovery.js";
export type { RecoverOutboxOptions, RecoveryReport, RecoveredEntry, ResolveOutboxOptions } from "./recovery.js";

export { buildInventory } from "./inventory.js";
export type { Inventory, InventoryEntry, BuildInventoryOptions } from "./inventory.js";
export { renderOperatorDocs } from "./operator-docs.js";
export type { OperatorDocPage } from "./operator-docs.js";
export {
  requestedEvent,
  consumedEvent,
  intentEvent,
  settledEvent,
  claimedEvent,
  decidedEvent,
  startedEntry,
  settledEntry,
  decidedRequest,
  joinsPendingRequest,
  auditKeyCheck,
} from "./journal/events.js";
export { decodeEntry, decodeRequest } from "./journal/records.js";

// connectors
export {
  createConnectorRuntime,
  createMemoryVault,
  createFileVault,
  generateVaultKey,
  addConnection,
  addConnectionFromFile,
  listConnections,
  connectionStatus,
  removeConnection,
  setDefaultConnection,
  parseTokenJson,
  chooseConnection,
  TokenRefreshError,
  TOKEN_REFRESH_FAILURES,
  CONNECTION_ID_PATTERN,
  PROVIDER_NAME_PATTERN,
  DEFAULT_REFRESH_LEEWAY_MS,
  DEFAULT_REFRESH_TIMEOUT_MS,
  DEFAULT_TOKEN_LIFETIME_MS,
  tokenSetSchema,
  connectionSchema,
} from "./connectors/index.js";
export type {
  CreateConnectorRuntimeOptions,
  MemoryVaultOptions,
  FileVaultOptions,
  VaultKeySource,
  AddConnectionFromFileOptions,
  ConnectionStatus,
  StatusOptions,
  TokenSet,
  Connection,
  ConnectionInfo,
  TokenVault,
  ConnectorProvider,
  RefreshRequest,
  RefreshedTokens,
  AccessGrant,
  TokenRefreshFailure,
  ConnectorLogEvent,
} from "./connectors/index.js";
