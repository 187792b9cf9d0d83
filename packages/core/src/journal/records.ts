import { z } from "zod";
import { EFFECT_BOUNDARIES, TOOL_ERROR_CODES, type ToolErrorCode } from "../errors.js";
import { EFFECTS } from "../manifest.js";
import type { ApprovalRequest, ApprovalStatus, OutboxEntry, OutboxState } from "./types.js";

/**
 * Outbox entries and approval requests as drivers store them: JSON, decoded with schemas (the
 * sealed envelope around them is `sealed-rows.ts`).
 * JSON drops `undefined`, so keys the contract requires but allows to be undefined may be missing
 * from stored text; decoding puts them back (`input` and `output` by default, `target` after).
 */

const OUTBOX_STATES = ["pending", "completed", "failed", "unknown"] as const satisfies readonly OutboxState[];
const APPROVAL_STATUSES = ["pending", "granted", "denied", "consumed", "expired"] as const satisfies readonly ApprovalStatus[];
const ERROR_CODES = Object.keys(TOOL_ERROR_CODES) as [ToolErrorCode, ...ToolErrorCode[]];

const text = z.string();
const optionalText = text.exactOptional();

const ChangeSchema = z.object({ path: text, before: z.unknown().exactOptional(), after: z.unknown().exactOptional() });
const SourceSchema = z.object({
  kind: z.enum(["trusted", "output"]),
  label: optionalText,
  toolId: optionalText,
  family: optionalText,
  invocationId: optionalText,
  principal: optionalText,
  untrusted: z.boolean(),
  described: optionalText,
});
const ProvenanceSchema = z.object({
  session: text,
  verdict: z.enum(["trusted", "new", "untrusted", "violation"]),
  action: z.enum(["none", "escalated", "refused", "waived"]),
  violations: z.array(text),
  fields: z.array(
    z.object({
      path: text,
      label: z.enum(["trusted", "untrusted", "new"]),
      role: z.enum(["destination", "content"]).exactOptional(),
      sources: z.array(SourceSchema),
      found: z.array(text).exactOptional(),
      why: text,
    }),
  ),
});
const PreviewSchema = z.object({
  summary: text,
  details: z.record(text, z.unknown()).exactOptional(),
  body: optionalText,
  plan: z.unknown().exactOptional(),
  provenance: ProvenanceSchema.exactOptional(),
});

export const RecordedResultSchema = z.object({
  output: z.unknown().default(undefined),
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
  input: z.unknown().default(undefined),
  inputRedacted: z.boolean(),
  effect: z.enum(EFFECTS),
  idempotent: z.boolean(),
  target: text.optional(),
  edited: z.object({ requestId: text, askedInputHash: text, changes: z.array(ChangeSchema) }).exactOptional(),
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
  preview: PreviewSchema,
  target: text.optional(),
  invocationId: text,
  idempotencyKey: text,
  createdAt: text,
  expiresAt: text,
  approvalsNeeded: z.union([z.literal(1), z.literal(2)]).exactOptional(),
  callRef: optionalText,
  input: z.unknown().exactOptional(),
  inputRedacted: z.boolean().exactOptional(),
  editable: z.union([z.literal(false), z.array(text)]).exactOptional(),
  status: z.enum(APPROVAL_STATUSES),
  approvals: z
    .array(z.object({ by: text, via: text, at: text, linked: z.array(text).exactOptional(), version: z.number().int().nonnegative().exactOptional() }))
    .exactOptional(),
  decidedBy: optionalText,
  decidedVia: optionalText,
  decidedAt: optionalText,
  reason: optionalText,
  grantTokenHash: optionalText,
  grantExpiresAt: optionalText,
  consumedAt: optionalText,
  consumedBy: optionalText,
  edit: z
    .object({
      version: z.number().int().positive(),
      input: z.unknown(),
      inputHash: text,
      preview: PreviewSchema,
      previewHash: text,
      target: text.optional(),
      changes: z.array(ChangeSchema),
      fromInputHash: text,
      by: text,
      via: text,
      at: text,
    })
    .exactOptional(),
});

/** Decode a stored entry's row; throws a plain error when it does not match its schema. */
export function decodeEntry(row: unknown): OutboxEntry {
  // A spread, not rest destructuring: this runs on every read, and rest is several times slower.
  const e = decode(OutboxEntrySchema, row, "outbox entry");
  return { ...e, target: e.target };
}

export function decodeRequest(row: unknown): ApprovalRequest {
  const r = decode(ApprovalRequestSchema, row, "approval request");
  const { edit, ...rest } = r;
  if (edit === undefined) return { ...rest, target: r.target };
  return { ...rest, target: r.target, edit: { ...edit, target: edit.target } };
}

function decode<T>(schema: z.ZodType<T>, row: unknown, what: string): T {
  const parsed = schema.safeParse(row);
  if (!parsed.success) throw new Error(`a stored ${what} does not match its schema: ${z.prettifyError(parsed.error)}`, { cause: parsed.error });
  return parsed.data;
}
