import { z } from "zod";
import { EFFECT_BOUNDARIES, TOOL_ERROR_CODES, type ToolErrorCode } from "../errors.js";
import { EFFECTS } from "../manifest.js";
import type { StoredEntry, StoredRequest } from "./driver.js";
import type { ApprovalRequest, ApprovalStatus, OutboxEntry, OutboxState } from "./types.js";

/**
 * Outbox entries and approval requests as drivers store them: JSON text, decoded with schemas.
 * JSON drops `undefined`, so keys the contract requires but allows to be undefined (`input`,
 * `target`, `output`) may be missing from stored text; decoding puts them back.
 */

const OUTBOX_STATES = ["pending", "completed", "failed", "unknown"] as const satisfies readonly OutboxState[];
const APPROVAL_STATUSES = ["pending", "granted", "denied", "consumed", "expired"] as const satisfies readonly ApprovalStatus[];
const ERROR_CODES = Object.keys(TOOL_ERROR_CODES) as [ToolErrorCode, ...ToolErrorCode[]];

const text = z.string();
const optionalText = text.exactOptional();

export const RecordedResultSchema = z.object({
  output: z.unknown().optional(),
  outputHash: text,
  untrusted: z.boolean(),
  findings: z.array(z.object({ rule: text, path: text, excerpt: text })),
  heldBy: optionalText,
});

export const OutboxEntrySchema = z.object({
  key: text,
  invocationId: text,
  toolId: text,
  principal: text,
  tenant: text,
  inputHash: text,
  input: z.unknown().optional(),
  inputRedacted: z.boolean(),
  effect: z.enum(EFFECTS),
  idempotent: z.boolean(),
  target: text.optional(),
  intentHash: text,
  at: text,
  state: z.enum(OUTBOX_STATES),
  boundary: z.enum(EFFECT_BOUNDARIES),
  attempts: z.number().int().nonnegative(),
  updatedAt: text,
  grantId: optionalText,
  result: RecordedResultSchema.exactOptional(),
  error: z.object({ code: z.enum(ERROR_CODES), message: text }).exactOptional(),
});

export const ApprovalRequestSchema = z.object({
  id: text,
  kind: z.enum(["call", "output"]),
  toolId: text,
  inputHash: text,
  principal: text,
  tenant: text,
  previewHash: text,
  preview: z.object({
    summary: text,
    details: z.record(text, z.unknown()).exactOptional(),
    body: optionalText,
    plan: z.unknown().exactOptional(),
  }),
  target: text.optional(),
  invocationId: text,
  idempotencyKey: text,
  createdAt: text,
  expiresAt: text,
  status: z.enum(APPROVAL_STATUSES),
  decidedBy: optionalText,
  decidedAt: optionalText,
  reason: optionalText,
  grantTokenHash: optionalText,
  grantExpiresAt: optionalText,
  consumedAt: optionalText,
  consumedBy: optionalText,
});

export function encodeEntry(entry: OutboxEntry): StoredEntry {
  return { key: entry.key, state: entry.state, updatedMs: Date.parse(entry.updatedAt), text: JSON.stringify(entry) };
}

export function encodeRequest(request: ApprovalRequest): StoredRequest {
  return { id: request.id, status: request.status, inputHash: request.inputHash, text: JSON.stringify(request) };
}

/** Decode a stored entry; throws a plain error (not a refusal: the store is corrupt) when invalid. */
export function decodeEntry(stored: string): OutboxEntry {
  const { input, target, result, ...rest } = OutboxEntrySchema.parse(JSON.parse(stored));
  return { ...rest, input, target, ...(result === undefined ? {} : { result: { ...result, output: result.output } }) };
}

export function decodeRequest(stored: string): ApprovalRequest {
  const { target, ...rest } = ApprovalRequestSchema.parse(JSON.parse(stored));
  return { ...rest, target };
}
