/** Approval requests and grants as the gate sees them: what a grant is bound to, and why one is refused. */
import { randomUUID } from "node:crypto";
import { sha256Hex } from "../canonical-json.js";
import { ToolError } from "../errors.js";
import type { ApprovalRequest, GrantCheck, GrantOutcome, JournalReceipt } from "../journal/types.js";
import { approvalContent } from "./foreign-text.js";
import type { ApprovalPreview } from "../manifest.js";
import { needsTwoApprovers } from "../policy.js";
import type { InjectionFinding } from "../untrusted.js";
import type { ApprovalGrant } from "./approvals.js";
import type { Frozen } from "./call-state.js";
import { editableFor } from "./edit-allowance.js";
import type { GateEnv } from "./env.js";
import { refuse, targetOf, type Refusal } from "./outcomes.js";
import type { ApprovalRequiredResult } from "./results.js";

/** The grant as presented, bound to everything a human approved: tool, input, principal, tenant, preview. */
export function grantCheckFor(env: GateEnv, c: Frozen, grant: ApprovalGrant, previewHash: string, edit?: GrantCheck["edit"]): GrantCheck {
  const { byBinding: _byBinding, ...check } = bindingCheckFor(env, c, grant.requestId, previewHash, edit);
  return { ...check, tokenHash: sha256Hex(String(grant.token)) };
}

/** The grant presented with this call was consumed: its token is spent, so it leaves the redactor. */
export function grantSpent(env: GateEnv, c: Pick<Frozen, "call">): void {
  const token: unknown = c.call.approval?.token;
  if (typeof token === "string") env.redactor.unregister(token);
}

export function grantRefusal(outcome: Exclude<GrantOutcome, { status: "consumed" }>, requestId: string): ToolError {
  switch (outcome.status) {
    case "unknown":
      return new ToolError("approval_unknown", `no approval request ${requestId}`);
    case "not_granted":
      return new ToolError("approval_invalid", `approval request ${requestId} has not been granted`);
    case "denied":
      return new ToolError("approval_denied", `approval request ${requestId} was denied`);
    case "already_consumed":
      return new ToolError("approval_consumed", `the grant for ${requestId} was already used`);
    case "expired":
      return new ToolError("approval_expired", `the grant for ${requestId} has expired`);
    case "mismatch":
      return new ToolError("approval_invalid", `the grant for ${requestId} does not match this call (${(outcome.mismatched ?? []).join(", ")} differ)`, {
        details: { mismatched: outcome.mismatched ?? [] },
      });
  }
}

/** The result that asks for a human: the preview for the human, and for the model the same fenced (see `approvalContent`). */
export function approvalRequired(
  c: Pick<Frozen, "manifest" | "invocationId"> & { readonly visibleKey: string },
  kind: "call" | "output",
  request: ApprovalRequest,
  receipt: JournalReceipt | null,
  findings?: readonly Pick<InjectionFinding, "rule" | "path">[],
): ApprovalRequiredResult {
  const { content, previewFindings } = approvalContent(c.manifest.id, kind, { requestId: request.id, expiresAt: request.expiresAt, preview: request.preview });
  const where = (list: readonly Pick<InjectionFinding, "rule" | "path">[]) => list.map((f) => ({ rule: f.rule, path: f.path }));
  return {
    status: "approval_required",
    reason: kind,
    toolId: c.manifest.id,
    invocationId: c.invocationId,
    receipt,
    requestId: request.id,
    preview: request.preview,
    previewHash: request.previewHash,
    expiresAt: request.expiresAt,
    idempotencyKey: c.visibleKey,
    content,
    ...(findings ? { findings: where(findings) } : {}),
    ...(previewFindings.length > 0 ? { previewFindings: where(previewFindings) } : {}),
  };
}

/** Distinct approvers this call needs: two when its profile's `twoPersonFrom` is at or below the tool's risk. */
export function approvalsNeeded(c: Pick<Frozen, "manifest" | "call">): 1 | 2 {
  return needsTwoApprovers(c.manifest, c.call.profile) ? 2 : 1;
}

/**
 * A request granted for exactly this call (the whole binding), taken without a token: only the
 * gate builds this check, from the journal's own request, never from what a caller presents.
 */
export function bindingCheckFor(env: GateEnv, c: Frozen, requestId: string, previewHash: string, edit?: GrantCheck["edit"]): GrantCheck {
  return {
    requestId,
    byBinding: true,
    binding: { toolId: c.manifest.id, inputHash: c.inputHash, principal: c.call.principal, tenant: c.call.tenant, previewHash },
    ...(edit ? { edit } : {}),
    invocationId: c.invocationId,
    at: env.iso(),
  };
}

/** The call's input as the journal keeps it: redacted (a registered secret never lands in a row), and whether it was. */
export function redactedInput(env: GateEnv, c: Pick<Frozen, "inputJson">): { readonly input: unknown; readonly inputRedacted: boolean } {
  const redactedJson = env.redactor.redactText(c.inputJson);
  return { input: JSON.parse(redactedJson) as unknown, inputRedacted: redactedJson !== c.inputJson };
}

/**
 * Persist a request for a human, or find the one with the same binding: still pending, or granted
 * and unexpired (a retry after a human's approval finds the grant). A request to run a call keeps
 * the input as asked (redacted) and the fields an approver may edit (manifest ∩ profile), unless
 * `editable` is `false` (a body's mid-call ask); a held output's request is never editable.
 */
export async function recordRequest(
  env: GateEnv,
  c: Frozen & { readonly visibleKey: string },
  kind: "call" | "output",
  preview: ApprovalPreview,
  previewHash: string,
  editable?: false,
): Promise<{ readonly request: ApprovalRequest; readonly receipt: JournalReceipt } | Refusal> {
  const now = env.clock();
  const asked = kind === "call" ? { ...redactedInput(env, c), editable: editable ?? editableFor(c.manifest, c.call.profile) } : { editable: false as const };
  try {
    return await env.journal.requestApproval({
      id: `apr_${randomUUID()}`,
      kind,
      toolId: c.manifest.id,
      inputHash: c.inputHash,
      principal: c.call.principal,
      tenant: c.call.tenant,
      previewHash,
      preview,
      target: targetOf(env, c),
      invocationId: c.invocationId,
      idempotencyKey: c.visibleKey,
      createdAt: env.iso(now),
      expiresAt: env.iso(now + env.requestTtlMs),
      approvalsNeeded: approvalsNeeded(c),
      ...(c.call.callRef === undefined ? {} : { callRef: c.call.callRef }),
      ...asked,
    });
  } catch (cause) {
    return refuse(env, c, "error", new ToolError("journal_failed", "the approval request could not be recorded", { cause }));
  }
}
