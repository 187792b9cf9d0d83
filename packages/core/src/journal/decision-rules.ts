import { ToolError } from "../errors.js";
import { currentApprovals, refuseEditDecision } from "./edit-rules.js";
import { tampered } from "./sealed-rows.js";
import type { ApprovalDecision, ApprovalRequest, ApprovalRequestInput } from "./types.js";

/** The journal's refusals of requests and decisions, checked before anything is written (see create-journal.ts). */

/** A request the journal could not read back is refused before it is stored. */
export function refuseRequest(input: ApprovalRequestInput): void {
  if (input.approvalsNeeded !== undefined && input.approvalsNeeded !== 1 && input.approvalsNeeded !== 2)
    throw new ToolError("config_invalid", `approvalsNeeded is 1 or 2, not ${String(input.approvalsNeeded)}`);
  if (input.callRef !== undefined && (typeof input.callRef !== "string" || input.callRef.length > 256))
    throw new ToolError("invalid_input", "callRef is a string of at most 256 characters");
  const { editable, inputRedacted } = input;
  if (editable !== undefined && editable !== false && !(Array.isArray(editable) && editable.every((p) => typeof p === "string")))
    throw new ToolError("config_invalid", "editable is false or a list of JSON Pointers");
  if (inputRedacted !== undefined && typeof inputRedacted !== "boolean") throw new ToolError("config_invalid", "inputRedacted is a boolean");
}

/**
 * Refuse a decision before anything is written: it must name the approver and how they were
 * authenticated, a grant must name the version it saw once the request was edited (and any edit
 * must be one the journal can take, see edit-rules.ts), and a request needing two approvers needs
 * two different ones on the version that runs: an edit starts a new version with only its editor's
 * approval, and earlier versions' approvals no longer count.
 */
export function refuseDecision(id: string, request: ApprovalRequest, decision: ApprovalDecision): void {
  if (typeof decision.approver !== "string" || decision.approver === "" || typeof decision.via !== "string" || decision.via === "") {
    throw new ToolError("approval_invalid", `a decision on approval request ${id} must name its approver and how they were authenticated`);
  }
  if (decision.kind !== "grant") return;
  if (decision.linked !== undefined && !(Array.isArray(decision.linked) && decision.linked.every((l) => typeof l === "string" && l !== ""))) {
    throw new ToolError("approval_invalid", `a decision's linked ids on approval request ${id} are non-empty strings`);
  }
  refuseEditDecision(id, request, decision);
  // An edit makes a new version, which nobody has approved yet.
  if (decision.edit !== undefined) return;
  const people = (by: string, linked: readonly string[] | undefined) => [by, ...(linked ?? [])];
  const mine = people(decision.approver, decision.linked);
  const earlier = currentApprovals(request).find((a) => people(a.by, a.linked).some((p) => mine.includes(p)));
  if (earlier) {
    throw new ToolError(
      "approval_invalid",
      `approval request ${id} needs a second, different approver: ${decision.approver} is, or stands for, ${earlier.by}, who already granted it`,
    );
  }
}

/** A listed row whose sealed state is not one the list was filtered by: its unsealed state column was edited. */
export function listed<T, S extends string>(kind: "entry" | "request", id: string, value: T, stateOf: (value: T) => S, states: readonly S[] | undefined): T {
  if (states === undefined || states.includes(stateOf(value))) return value;
  throw tampered(kind, id, "index", `is listed by its state column but its sealed state is ${stateOf(value)}`);
}
