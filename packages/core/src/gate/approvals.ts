import { randomBytes } from "node:crypto";
import { sha256Hex } from "../canonical-json.js";
import { ToolError } from "../errors.js";
import type { ApprovalRequest, ApprovalStatus, Journal } from "../journal/types.js";
import type { Redactor } from "../redactor.js";

/** What a human's grant gives the caller; pass it back as `call.approval`. */
export interface ApprovalGrant {
  readonly requestId: string;
  /** Secret, single-use. Only its hash is stored. */
  readonly token: string;
  readonly toolId: string;
  readonly expiresAt: string;
}

export interface GrantOptions {
  readonly approver: string;
  /** How long the grant stays usable; default 10 minutes, at most 24 hours. */
  readonly ttlMs?: number;
}

export interface DenyOptions {
  readonly approver: string;
  readonly reason: string;
}

/** The human side of approvals: list pending requests, grant or deny them. */
export interface ApprovalDesk {
  list(options?: { readonly status?: readonly ApprovalStatus[] }): Promise<readonly ApprovalRequest[]>;
  get(requestId: string): Promise<ApprovalRequest | undefined>;
  grant(requestId: string, options: GrantOptions): Promise<ApprovalGrant>;
  deny(requestId: string, options: DenyOptions): Promise<ApprovalRequest>;
}

export const DEFAULT_GRANT_TTL_MS = 10 * 60_000;
export const MAX_GRANT_TTL_MS = 24 * 60 * 60_000;

export function createApprovalDesk(journal: Journal, redactor: Redactor, now: () => number): ApprovalDesk {
  const approverOf = (approver: unknown): string => {
    if (typeof approver !== "string" || approver.trim() === "") throw new ToolError("config_invalid", "an approval needs a named approver");
    return approver;
  };
  return {
    list: (options) => journal.listApprovals(options),
    get: (id) => journal.getApproval(id),
    async grant(requestId, options) {
      const approver = approverOf(options?.approver);
      const ttlMs = options.ttlMs ?? DEFAULT_GRANT_TTL_MS;
      if (!Number.isInteger(ttlMs) || ttlMs <= 0 || ttlMs > MAX_GRANT_TTL_MS) {
        throw new ToolError("config_invalid", `ttlMs must be a whole number of milliseconds between 1 and ${MAX_GRANT_TTL_MS}`);
      }
      const token = randomBytes(32).toString("base64url");
      const at = now();
      // Redacted while the grant can be used: until it expires, or until the call that uses it consumes it.
      redactor.register(token, { until: at + ttlMs });
      const expiresAt = new Date(at + ttlMs).toISOString();
      let request: ApprovalRequest;
      try {
        ({ request } = await journal.decideApproval(requestId, {
          kind: "grant",
          approver,
          tokenHash: sha256Hex(token),
          grantExpiresAt: expiresAt,
          at: new Date(at).toISOString(),
        }));
      } catch (error) {
        redactor.unregister(token);
        throw error;
      }
      return Object.freeze({ requestId, token, toolId: request.toolId, expiresAt });
    },
    async deny(requestId, options) {
      const approver = approverOf(options?.approver);
      const reason = typeof options.reason === "string" && options.reason.trim() !== "" ? options.reason : "denied";
      const { request } = await journal.decideApproval(requestId, { kind: "deny", approver, reason, at: new Date(now()).toISOString() });
      return request;
    },
  };
}
