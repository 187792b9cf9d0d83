import { timingSafeEqual } from "node:crypto";
import type { ApprovalBinding, ApprovalRequest, GrantCheck, GrantOutcome } from "./types.js";

const BINDING_FIELDS = ["toolId", "inputHash", "principal", "tenant", "previewHash"] as const satisfies readonly (keyof ApprovalBinding)[];

/**
 * Decide whether `check` may consume `request`'s grant. Pure: stores call it inside their own
 * transaction, then mark the request consumed only on `ok`. A mismatch changes nothing, so the
 * grant stays usable for the call it was made for.
 *
 * A check by binding carries no token: the request's whole binding (every field a non-empty
 * string on both sides) must equal the check's, and the request must be granted, unexpired and
 * unconsumed. A check that is not by binding must carry the token.
 *
 * The binding is the call as the caller asked it. A request an approver edited is consumed only by
 * a check that also names the edit it runs (the edited input's hash and preview hash, equal to the
 * request's edit); a check naming an edit is refused for a request that has none.
 */
export function checkGrant(
  request: ApprovalRequest | undefined,
  check: GrantCheck,
): { readonly ok: true } | Exclude<GrantOutcome, { readonly status: "consumed" }> {
  if (!request) return { status: "unknown" };
  if (request.status === "consumed") return { status: "already_consumed" };
  if (request.status === "denied") return { status: "denied" };
  if (request.status !== "granted" || !request.grantTokenHash || !request.grantExpiresAt) return { status: "not_granted" };
  const mismatched: (keyof ApprovalBinding | "token" | "edit")[] = [];
  if (check.byBinding !== true && (typeof check.tokenHash !== "string" || !sameHex(request.grantTokenHash, check.tokenHash))) mismatched.push("token");
  const whole = check.byBinding === true;
  for (const field of BINDING_FIELDS) if (!sameField(request[field], check.binding?.[field], whole)) mismatched.push(field);
  if (!sameEdit(request.edit, check.edit)) mismatched.push("edit");
  if (mismatched.length > 0) return { status: "mismatch", mismatched };
  // Not "<=": a time that does not parse is expired, never forever valid.
  if (!(Date.parse(request.grantExpiresAt) > Date.parse(check.at))) return { status: "expired" };
  return { ok: true };
}

function sameHex(a: string, b: string): boolean {
  return a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));
}

const sameEdit = (edit: ApprovalRequest["edit"], claimed: GrantCheck["edit"]): boolean =>
  edit === undefined ? claimed === undefined : sameField(edit.inputHash, claimed?.inputHash, true) && sameField(edit.previewHash, claimed?.previewHash, true);

const sameField = (a: unknown, b: unknown, whole: boolean): boolean => typeof a === "string" && a === b && (!whole || a !== "");
