/**
 * @toolgate/core/store-kit — for journal stores: the one engine (`createJournal`) that implements
 * the journal's rules over a driver, the driver interface, the audit chain's sealing, and the
 * record types a store persists.
 */
export { createJournal } from "./journal/create-journal.js";
export type { CreateJournalOptions } from "./journal/create-journal.js";
export type {
  JournalDriver,
  JournalTransaction,
  TransactionReads,
  OutboxClaim,
  StoredEntry,
  StoredRequest,
  StoredRecord,
  RecordRef,
  StoredRow,
  RowEvent,
  AuditHead,
  ListFilter,
} from "./journal/driver.js";
export { verifyAuditChain, computeAuditMac, chainAuditEvent, sealAuditEvent, unsealAuditEvent, auditPayload } from "./journal/audit-chain.js";
export type { SealedAuditEvent, AuditChainVerdict, VerifyAuditChainOptions, AuditKey } from "./journal/audit-chain.js";
export { auditKeyCheck } from "./journal/events.js";
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
  ApprovalGrantRecord,
  ApprovalChange,
  ApprovalEdit,
  ApprovalEditInput,
  ApprovalExpectation,
  EditedIntent,
  RecordUpdate,
  ConsumeGrantOptions,
  LimitCharge,
} from "./journal/types.js";
export { RECORD_KIND } from "./journal/types.js";
