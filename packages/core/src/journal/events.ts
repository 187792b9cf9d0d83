import { computeAuditMac, type AuditKey } from "./audit-chain.js";
import { currentApprovals, versionOf, versionedEdit, type Grant } from "./edit-rules.js";
import {
  GENESIS_MAC,
  type ApprovalDecision,
  type ApprovalRequest,
  type ApprovalRequestInput,
  type AuditEventInput,
  type AuditEventType,
  type GrantCheck,
  type IntentInput,
  type OutboxEntry,
  type Settlement,
} from "./types.js";

/**
 * The audit events each journal method appends and the records it writes, built once for
 * `createJournal`, so every driver keeps the same trail, MAC for MAC (the conformance suite
 * compares them).
 */

export function consumedEvent(request: ApprovalRequest, check: GrantCheck): AuditEventInput {
  return {
    type: "approval.consumed",
    at: check.at,
    invocationId: check.invocationId,
    toolId: request.toolId,
    principal: request.principal,
    tenant: request.tenant,
    data: { requestId: request.id },
  };
}

export function intentEvent(intent: IntentInput, attempt: number, grantId: string | undefined): AuditEventInput {
  return {
    type: "intent.recorded",
    at: intent.at,
    invocationId: intent.invocationId,
    toolId: intent.toolId,
    principal: intent.principal,
    tenant: intent.tenant,
    data: {
      key: intent.key,
      intentHash: intent.intentHash,
      inputHash: intent.inputHash,
      effect: intent.effect,
      target: intent.target ?? null,
      attempt,
      ...(grantId === undefined ? {} : { grantId }),
      ...(intent.edited === undefined ? {} : { edited: { requestId: intent.edited.requestId, askedInputHash: intent.edited.askedInputHash } }),
    },
  };
}

export function settledEvent(entry: OutboxEntry, key: string, s: Settlement): AuditEventInput {
  return {
    type: s.eventType ?? "intent.settled",
    at: s.at,
    invocationId: s.invocationId,
    toolId: entry.toolId,
    principal: entry.principal,
    tenant: entry.tenant,
    data: {
      key,
      intentHash: s.intentHash,
      state: s.state,
      boundary: s.boundary,
      ...(s.result ? { outputHash: s.result.outputHash, findings: s.result.findings.length } : {}),
      ...(s.error ? { code: s.error.code, message: s.error.message } : {}),
      ...s.audit,
    },
  };
}

export function claimedEvent(entry: OutboxEntry, claimant: string, attempt: number, at: string): AuditEventInput {
  return {
    type: "outbox.claimed",
    at,
    invocationId: entry.invocationId,
    toolId: entry.toolId,
    principal: entry.principal,
    tenant: entry.tenant,
    data: { key: entry.key, claimant, attempt, state: entry.state },
  };
}

/**
 * An entry a recovery worker claimed, held until `leaseUntil`. An unknown one is claimed like a
 * pending one: pending again (a caller's retry is told it is in flight), its effect still maybe taken.
 */
export function claimedEntry(entry: OutboxEntry, leaseUntil: string): OutboxEntry {
  const { error: _e, ...rest } = entry;
  return { ...(entry.state === "unknown" ? { ...rest, state: "pending" } : entry), attempts: entry.attempts + 1, updatedAt: leaseUntil };
}

export function decidedEvent(request: ApprovalRequest, decided: ApprovalRequest, decision: ApprovalDecision): AuditEventInput {
  return requestEvent(decision.kind === "grant" ? "approval.granted" : "approval.denied", decision.at, request, {
    requestId: request.id,
    approver: decision.approver,
    via: decision.via,
    ...(decision.kind === "deny"
      ? { reason: decision.reason }
      : decided.status === "granted"
        ? { grantExpiresAt: decision.grantExpiresAt, complete: true, approvals: currentApprovals(decided).length }
        : { complete: false, approvals: currentApprovals(decided).length, approvalsNeeded: request.approvalsNeeded ?? 1 }),
    ...(decided.edit === undefined ? {} : { version: decided.edit.version }),
  });
}

/** A pending request found expired when a decision came: stored as expired, with this event. */
export function expiredEvent(request: ApprovalRequest, at: string): AuditEventInput {
  return requestEvent("approval.expired", at, request, { requestId: request.id, expiresAt: request.expiresAt });
}

/** An event about request `r`, under the invocation that asked it. */
export const requestEvent = (type: AuditEventType, at: string, r: ApprovalRequest, data: AuditEventInput["data"]): AuditEventInput => ({
  type,
  at,
  invocationId: r.invocationId,
  toolId: r.toolId,
  principal: r.principal,
  tenant: r.tenant,
  data,
});

/** The entry a new attempt writes: the intent, pending, its attempt count and grant. */
export function startedEntry(intent: IntentInput, attempts: number, grantId: string | undefined): OutboxEntry {
  return {
    ...intent,
    state: "pending",
    boundary: "effect_not_started",
    attempts,
    updatedAt: intent.at,
    ...(grantId === undefined ? {} : { grantId }),
  };
}

export function settledEntry(entry: OutboxEntry, s: Settlement): OutboxEntry {
  const { result: _r, error: _e, ...rest } = entry;
  return {
    ...rest,
    state: s.state,
    boundary: s.boundary,
    updatedAt: s.at,
    ...(s.result === undefined ? {} : { result: s.result }),
    ...(s.error === undefined ? {} : { error: s.error }),
  };
}

/**
 * A pending request after a decision. A grant appends the approver; the request is granted once
 * it has as many distinct approvers of its current version as it needs, and stays pending (without
 * a token) before that. A grant with an edit first makes the edit the request's next version, so
 * the approvals of earlier versions stay as history and no longer count.
 */
export function decidedRequest(request: ApprovalRequest, decision: ApprovalDecision): ApprovalRequest {
  const decided = { decidedBy: decision.approver, decidedVia: decision.via, decidedAt: decision.at };
  if (decision.kind === "deny") return { ...request, status: "denied", ...decided, reason: decision.reason };
  const base = decision.edit === undefined ? request : { ...request, edit: versionedEdit(request, decision.edit) };
  const version = versionOf(base);
  const linked = decision.linked?.length ? { linked: [...decision.linked] } : {};
  const approval = { by: decision.approver, via: decision.via, at: decision.at, ...linked, ...(version > 0 ? { version } : {}) };
  const next = { ...base, approvals: [...(request.approvals ?? []), approval] };
  if (currentApprovals(next).length < (request.approvalsNeeded ?? 1)) return next;
  return { ...next, status: "granted", ...decided, grantTokenHash: decision.tokenHash, grantExpiresAt: decision.grantExpiresAt };
}

/**
 * Whether `input` (the same call asked again) joins request `r`: the same kind and whole binding,
 * needing no fewer approvers, and still open (pending and unexpired, or granted with an unexpired
 * grant, so a retry after the human's approval finds it).
 */
export function joinsOpenRequest(r: ApprovalRequest, input: ApprovalRequestInput): boolean {
  const now = Date.parse(input.createdAt);
  const open =
    (r.status === "pending" && Date.parse(r.expiresAt) > now) ||
    (r.status === "granted" && r.grantExpiresAt !== undefined && Date.parse(r.grantExpiresAt) > now);
  return (
    open &&
    r.kind === input.kind &&
    r.toolId === input.toolId &&
    r.inputHash === input.inputHash &&
    r.principal === input.principal &&
    r.tenant === input.tenant &&
    r.previewHash === input.previewHash &&
    (r.approvalsNeeded ?? 1) >= (input.approvalsNeeded ?? 1)
  );
}

/** The audit event for a request made or joined. */
export function requestedEvent(r: ApprovalRequest, invocationId: string, created: boolean, at: string): AuditEventInput {
  return {
    type: "approval.requested",
    at,
    invocationId,
    toolId: r.toolId,
    principal: r.principal,
    tenant: r.tenant,
    data: { requestId: r.id, kind: r.kind, previewHash: r.previewHash, inputHash: r.inputHash, target: r.target ?? null, created, expiresAt: r.expiresAt },
  };
}

/**
 * A value derived from the audit key and stored with the journal, so a worker configured with
 * another key is refused at open instead of appending links nobody can verify. It reveals nothing
 * about the key.
 */
export function auditKeyCheck(key: AuditKey): string {
  return computeAuditMac(key, GENESIS_MAC, 0, { type: "journal.key_check", at: "1970-01-01T00:00:00.000Z", data: {} });
}

/** The audit event for an edit, appended just before the grant's. */
export function editedEvent(request: ApprovalRequest, decided: ApprovalRequest, decision: Grant): AuditEventInput {
  const { version, fromInputHash, inputHash, previewHash, target, changes } = decided.edit!;
  const data = {
    requestId: request.id,
    version,
    approver: decision.approver,
    via: decision.via,
    fromInputHash,
    inputHash,
    previewHash,
    target: target ?? null,
    changes,
  };
  return requestEvent("approval.edited", decision.at, request, data);
}

/** The event that records an edited-run record, written with the edited intent. */
export function editedRunEvent(intent: IntentInput): AuditEventInput {
  return {
    type: "intent.edited",
    at: intent.at,
    invocationId: intent.invocationId,
    toolId: intent.toolId,
    principal: intent.principal,
    tenant: intent.tenant,
    data: { key: intent.key, requestId: intent.edited!.requestId, askedInputHash: intent.edited!.askedInputHash, inputHash: intent.inputHash },
  };
}
