/** The records every journal conformance test starts from: intents, approval requests, grant checks. */
import { hashCanonical, sha256Hex } from "../canonical-json.js";
import type { ToolErrorCode } from "../errors.js";
import type {
  ApprovalDecision,
  ApprovalEditInput,
  ApprovalExpectation,
  ApprovalRequest,
  ApprovalRequestInput,
  GrantCheck,
  IntentInput,
  Journal,
  JournalReceipt,
} from "../journal/types.js";

const T0 = Date.parse("2026-01-01T00:00:00.000Z");
export const at = (offsetMs = 0): string => new Date(T0 + offsetMs).toISOString();

export function sampleIntent(key: string, overrides: Partial<IntentInput> = {}): IntentInput {
  const base = {
    key,
    invocationId: `inv_${key}`,
    toolId: "notes.add_note",
    principal: "agent",
    tenant: "tenant-a",
    inputHash: sha256Hex(`input-${key}`),
    input: { text: `note ${key}` },
    inputRedacted: false,
    effect: "write" as const,
    idempotent: false,
    target: `note ${key}`,
    at: at(),
    ...overrides,
  };
  return { ...base, intentHash: hashCanonical(base) };
}

export function sampleRequest(id: string, overrides: Partial<ApprovalRequestInput> = {}): ApprovalRequestInput {
  return {
    id,
    kind: "call",
    toolId: "notes.add_note",
    inputHash: sha256Hex(`input-${id}`),
    principal: "agent",
    tenant: "tenant-a",
    previewHash: sha256Hex(`preview-${id}`),
    preview: { summary: `add note ${id}` },
    target: undefined,
    invocationId: `inv_${id}`,
    idempotencyKey: `key-${id}`,
    createdAt: at(),
    expiresAt: at(3_600_000),
    ...overrides,
  };
}

const settleAs =
  (state: "failed" | "unknown", boundary: "effect_not_started" | "effect_state_unknown", code: ToolErrorCode, message: string) =>
  (journal: Journal, intent: IntentInput): Promise<JournalReceipt> =>
    journal.settleIntent(intent.key, {
      state,
      boundary,
      intentHash: intent.intentHash,
      invocationId: intent.invocationId,
      at: at(1),
      error: { code, message },
    });

/** Settle an intent as failed before its effect started (so it may be retaken). */
export const settleFailed = settleAs("failed", "effect_not_started", "cancelled", "x");

/** Settle an intent as unknown: its effect may have happened (a dropped connection, a timeout). */
export const settleUnknown = settleAs("unknown", "effect_state_unknown", "effect_state_unknown", "the connection dropped");

export const checkFor = (request: ApprovalRequestInput, token: string, overrides: Partial<GrantCheck["binding"]> = {}, when = at(1000)): GrantCheck => ({
  requestId: request.id,
  tokenHash: sha256Hex(token),
  binding: {
    toolId: request.toolId,
    inputHash: request.inputHash,
    principal: request.principal,
    tenant: request.tenant,
    previewHash: request.previewHash,
    ...overrides,
  },
  invocationId: "inv_consumer",
  at: when,
});

/** A grant decision by `approver` (authenticated as the owner) with the token `token`. */
export const grantBy = (approver: string, token = "tok", grantExpiresAt = at(600_000), when = at(500)): Extract<ApprovalDecision, { kind: "grant" }> => ({
  kind: "grant",
  approver,
  via: "owner",
  tokenHash: sha256Hex(token),
  grantExpiresAt,
  at: when,
});

/** A call request an approver may edit: its input recorded whole, the whole input editable, hashed as the gate hashes it. */
export function editableRequest(id: string, overrides: Partial<ApprovalRequestInput> = {}): ApprovalRequestInput {
  const input = { text: `note ${id}` };
  return sampleRequest(id, { input, inputRedacted: false, editable: [""], inputHash: hashCanonical(input), ...overrides });
}

/** An approver's edit of `request`'s input to `{ text }`, made from the version whose input hash is `from`. */
export function editOf(request: ApprovalRequestInput, text: string, by = "op_ana", from = request.inputHash): ApprovalEditInput {
  const input = { text };
  const preview = { summary: `add note ${text}` };
  return {
    input,
    inputHash: hashCanonical(input),
    preview,
    previewHash: hashCanonical(preview),
    target: undefined,
    changes: [{ path: "/text", after: text }],
    fromInputHash: from,
    by,
    via: "owner",
    at: at(400),
  };
}

/** What a decision on `request` as it is now names: its version and the preview hash it shows. */
export const expectOf = (request: ApprovalRequest): ApprovalExpectation => ({
  version: request.edit?.version ?? 0,
  previewHash: request.edit?.previewHash ?? request.previewHash,
});

/** A grant by `edit.by` that makes `edit`, having seen `expect`. */
export const editGrant = (edit: ApprovalEditInput, expect: ApprovalExpectation, token = "tok"): Extract<ApprovalDecision, { kind: "grant" }> => ({
  ...grantBy(edit.by, token),
  expect,
  edit,
});

/** The check the gate builds for the caller's original call to an edited request: the binding as asked, and the edit it runs. */
export const editCheckFor = (request: ApprovalRequest, token = "tok"): GrantCheck => ({
  ...checkFor(request, token),
  edit: { inputHash: request.edit!.inputHash, previewHash: request.edit!.previewHash },
});

/** The intent that runs `request`'s edit under `key`. */
export const editedIntent = (key: string, request: ApprovalRequest, overrides: Partial<IntentInput> = {}): IntentInput =>
  sampleIntent(key, {
    inputHash: request.edit!.inputHash,
    input: request.edit!.input,
    edited: { requestId: request.id, askedInputHash: request.inputHash, changes: request.edit!.changes },
    ...overrides,
  });

/**
 * The journal conformance suite: every store (memory, SQLite, PostgreSQL) passes the same tests,
 * so the gate can rely on one behaviour.
 */

/** A test body run on a freshly opened journal, closed and cleaned up after, whatever happened. */
export const withJournalFrom =
  <J extends { readonly journal: { close(): Promise<void> }; readonly cleanup?: () => Promise<void> | void }>(open: () => Promise<J>) =>
  (fn: (j: J) => Promise<void>) =>
  async (): Promise<void> => {
    const j = await open();
    try {
      await fn(j);
    } finally {
      await j.journal.close();
      await j.cleanup?.();
    }
  };
