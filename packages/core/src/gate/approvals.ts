import { randomBytes } from "node:crypto";
import { sha256Hex } from "../canonical-json.js";
import { ToolError } from "../errors.js";
import type { ApprovalRequest, ApprovalStatus, Journal } from "../journal/types.js";
import type { Redactor } from "../redactor.js";
import type { RegisteredTool } from "../registry.js";
import { checkDecider } from "../authority/create-authority.js";
import type { Approver, Authority } from "../authority/types.js";
import type { GateTelemetry } from "../telemetry/gate-telemetry.js";

/** What a human's grant gives the caller; pass it back as `call.approval`. */
export interface ApprovalGrant {
  readonly requestId: string;
  /** Secret, single-use. Only its hash is stored. */
  readonly token: string;
  readonly toolId: string;
  readonly expiresAt: string;
}

export interface GrantOptions {
  /** The authenticated decider, from `gate.authority` (never a typed name). */
  readonly by: Approver;
  /** How long the grant stays usable; default 10 minutes, at most 24 hours. */
  readonly ttlMs?: number;
}

export interface DenyOptions {
  readonly by: Approver;
  readonly reason: string;
}

/** A grant, or (two-person rule) the first of two approvals: the request waits for a second, different approver. */
export type ApprovalDecisionResult =
  { readonly status: "granted"; readonly grant: ApprovalGrant } | { readonly status: "needs_another"; readonly request: ApprovalRequest };

/** The human side of approvals: list pending requests, grant or deny them as an authenticated approver. */
export interface ApprovalDesk {
  list(options?: { readonly status?: readonly ApprovalStatus[] }): Promise<readonly ApprovalRequest[]>;
  get(requestId: string): Promise<ApprovalRequest | undefined>;
  grant(requestId: string, options: GrantOptions): Promise<ApprovalDecisionResult>;
  deny(requestId: string, options: DenyOptions): Promise<ApprovalRequest>;
}

export const DEFAULT_GRANT_TTL_MS = 10 * 60_000;
export const MAX_GRANT_TTL_MS = 24 * 60 * 60_000;

export function createApprovalDesk(
  journal: Journal,
  redactor: Redactor,
  now: () => number,
  authority: Authority,
  tools: ReadonlyMap<string, RegisteredTool>,
  telemetry?: Pick<GateTelemetry, "approvalDecided">,
): ApprovalDesk {
  /** The request, and the approver as it stands now, checked against its role, status and scope. */
  const decider = async (requestId: string, options: { readonly by?: unknown } | undefined) => {
    if (options?.by === undefined && typeof (options as { approver?: unknown } | undefined)?.approver === "string") {
      throw new ToolError("approver_invalid", "a decision is made by an authenticated approver ({ by }) from gate.authority, not a typed name");
    }
    const request = await journal.getApproval(requestId);
    if (!request) throw new ToolError("approval_unknown", `no approval request ${redactor.redactText(String(requestId)).slice(0, 80)}`);
    const live = await checkDecider(authority, options?.by, request, tools.get(request.toolId)?.manifest);
    return { request, live };
  };
  return {
    list: (options) => journal.listApprovals(options),
    get: (id) => journal.getApproval(id),
    async grant(requestId, options) {
      const ttlMs = options?.ttlMs ?? DEFAULT_GRANT_TTL_MS;
      if (!Number.isInteger(ttlMs) || ttlMs <= 0 || ttlMs > MAX_GRANT_TTL_MS) {
        throw new ToolError("config_invalid", `ttlMs must be a whole number of milliseconds between 1 and ${MAX_GRANT_TTL_MS}`);
      }
      const { request: asked, live } = await decider(requestId, options);
      if (asked.approvals?.some((a) => a.by === live.id)) {
        throw new ToolError("approval_invalid", `${live.id} already approved ${requestId}; it needs a second, different approver`);
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
          approver: live.id,
          via: live.via,
          ...(live.linked.length > 0 ? { linked: live.linked } : {}),
          tokenHash: sha256Hex(token),
          grantExpiresAt: expiresAt,
          at: new Date(at).toISOString(),
        }));
      } catch (error) {
        redactor.unregister(token);
        throw error;
      }
      if (request.status !== "granted") {
        redactor.unregister(token);
        return { status: "needs_another", request };
      }
      telemetry?.approvalDecided(request.toolId, "granted");
      return { status: "granted", grant: Object.freeze({ requestId, token, toolId: request.toolId, expiresAt }) };
    },
    async deny(requestId, options) {
      const { live } = await decider(requestId, options);
      const reason = typeof options.reason === "string" && options.reason.trim() !== "" ? options.reason : "denied";
      const { request } = await journal.decideApproval(requestId, {
        kind: "deny",
        approver: live.id,
        via: live.via,
        reason,
        at: new Date(now()).toISOString(),
      });
      telemetry?.approvalDecided(request.toolId, "denied");
      return request;
    },
  };
}
