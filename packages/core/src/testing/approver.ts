/** Deciding approvals in tests: as the project's owner, through the gate's own authority. */
import type { Approver } from "../authority/types.js";
import type { ApprovalGrant, DenyOptions } from "../gate/approvals.js";
import type { AnyGate, CallOptions } from "../gate/gate.js";
import type { ApprovalExpectation } from "../journal/edit-types.js";
import type { ApprovalRequest } from "../journal/types.js";

/** The gate's owner approver (id `owner`, role admin): what the CLI on the project's machine acts as. */
export function testApprover(gate: AnyGate): Approver {
  return gate.authority.owner();
}

/** Grant `requestId` as the owner and return the grant; throws when the request needs a second approver. */
export async function grantAsOwner(gate: AnyGate, requestId: string, options: { readonly ttlMs?: number } = {}): Promise<ApprovalGrant> {
  const decided = await gate.approvals.grant(requestId, { by: gate.authority.owner(), ...options });
  if (decided.status !== "granted") throw new Error(`request ${requestId} needs a second approver`);
  return decided.grant;
}

/** Deny `requestId` as the owner. */
export function denyAsOwner(gate: AnyGate, requestId: string, reason: DenyOptions["reason"] = "denied in a test"): Promise<ApprovalRequest> {
  return gate.approvals.deny(requestId, { by: gate.authority.owner(), reason });
}

/**
 * Make a call that asks for a human and return its request, with the `expect` a decision on it as
 * asked names (`{ version: 0, previewHash }`); throws when the call did not ask.
 */
export async function askedRequest(
  gate: AnyGate,
  toolId: string,
  input: unknown,
  call: CallOptions,
): Promise<{ readonly id: string; readonly request: ApprovalRequest; readonly expect: ApprovalExpectation }> {
  const result = await gate.invoke(toolId, input, call);
  if (result.status !== "approval_required") throw new Error(`expected approval_required from ${toolId}, got ${result.status}`);
  const request = (await gate.approvals.get(result.requestId))!;
  return { id: result.requestId, request, expect: { version: 0, previewHash: request.previewHash } };
}
