/**
 * @toolgate/core/operator — what an operator runs beside the gate: recovery of interrupted
 * intents, resolving an unknown outcome, verifying the audit chain, the capability inventory and
 * the generated operator docs, what the profiles' limits have used, and the approval authority's shapes (operators, MCP clients, kill
 * switches; `gate.authority` is one made for the gate's journal).
 */
export { recoverOutbox, resolveOutboxEntry } from "./recovery.js";
export type { RecoverOutboxOptions, RecoveryReport, RecoveredEntry, ResolveOutboxOptions } from "./recovery.js";
export { verifyAuditChain } from "./journal/audit-chain.js";
export type { AuditChainVerdict, VerifyAuditChainOptions, AuditKey } from "./journal/audit-chain.js";
export { verifyJournalRows, pruneJournal } from "./journal/operations.js";
export type { JournalRowsVerdict, JournalRowProblem, PruneJournalOptions, PruneReport } from "./journal/operations.js";
export type { RowProblem } from "./journal/sealed-rows.js";
export type { CallProvenance, FieldProvenance, ProvenanceRules, ProvenanceSource } from "./provenance/types.js";
export { buildInventory } from "./inventory.js";
export type { Inventory, InventoryEntry, InventoryLimit, InventoryProvenance, BuildInventoryOptions } from "./inventory.js";
export { renderOperatorDocs } from "./operator-docs.js";
export type { OperatorDocPage } from "./operator-docs.js";
export { readLimitUsage } from "./limits/usage.js";
export type { LimitUsage, ReadLimitUsageOptions } from "./limits/usage.js";
export { durationText } from "./limits/window.js";
export { limitsFor } from "./limits/match.js";
export type { ProfileLimit, LimitDefinition } from "./profile.js";
export { sovereigntyOf } from "./manifest.js";
export { withWitness, readWitness, parseWitness, checkPinnedHeads } from "./journal/witness.js";
export type { PinnedHead, PinnedHeadsVerdict, WitnessCheckpoint, WitnessOptions, WitnessReading, WitnessedJournal } from "./journal/witness.js";
export { createAuthority } from "./authority/create-authority.js";
export type { CreateAuthorityOptions } from "./authority/create-authority.js";
export type { Authority, AuthorityAction, KillSwitch, McpClient, Operator, OperatorRole, OperatorScope, OperatorStatus } from "./authority/types.js";
export type { ApprovalDecisionResult, EditOptions, EditPreview } from "./gate/approvals.js";
export { currentApprovals, currentExpectation } from "./journal/edit-rules.js";
