import { timingSafeEqual } from "node:crypto";
import type { ApprovalBinding, ApprovalRequest, GrantCheck, GrantOutcome } from "./types.js";

const BINDING_FIELDS = ["toolId", "inputHash", "principal", "tenant", "previewHash"] as const satisfies readonly (keyof ApprovalBinding)[];

/**
 * Decide whether `check` may consume `request`'s grant. Pure: stores call it inside their own
 * transaction, then mark the request consumed only on `ok`. A mismatch changes nothing, so the
 * grant stays usable for the call it was made for.
 */
export function checkGrant(
  request: ApprovalRequest | undefined,
  check: GrantCheck,
): { readonly ok: true } | Exclude<GrantOutcome, { readonly status: "consumed" }> {
  if (!request) return { status: "unknown" };
  if (request.status === "consumed") return { status: "already_consumed" };
  if (request.status === "denied") return { status: "denied" };
  if (request.status !== "granted" || !request.grantTokenHash || !request.grantExpiresAt) return { status: "not_granted" };
  const mismatched: (keyof ApprovalBinding | "token")[] = [];
  if (!sameHex(request.grantTokenHash, check.tokenHash)) mismatched.push("token");
  for (const field of BINDING_FIELDS) if (request[field] !== check.binding[field]) mismatched.push(field);
  if (mismatched.length > 0) return { status: "mismatch", mismatched };
  if (Date.parse(request.grantExpiresAt) <= Date.parse(check.at)) return { status: "expired" };
  return { ok: true };
}

function sameHex(a: string, b: string): boolean {
  return a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));
}
