import { randomBytes } from "node:crypto";
import { sha256Hex } from "../canonical-json.js";
import { ToolError } from "../errors.js";
import type { ApprovalEditInput, ApprovalExpectation } from "../journal/edit-types.js";
import { currentApprovals } from "../journal/edit-rules.js";
import type { ApprovalRequest, ApprovalStatus } from "../journal/types.js";
import { checkDecider } from "../authority/create-authority.js";
import type { Approver, Authority } from "../authority/types.js";
import { checkEdit, previewBudget, refuseStale, type EditOptions, type EditPreview } from "./edit-desk.js";
import type { GateEnv } from "./env.js";

export type { EditOptions, EditPreview } from "./edit-desk.js";

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
  /**
   * The version the approver saw and its preview hash: the grant is refused if the request changed
   * since. Required on an edited request and with `edit`; optional (today's API) otherwise.
   */
  readonly expect?: ApprovalExpectation;
  /**
   * Approve an edited input instead of the one asked (`previewEdit` first): the whole input and the
   * preview hash the approver saw for it. Checked again; refused if the recomputed preview moved.
   */
  readonly edit?: { readonly input: unknown; readonly previewHash: string };
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
  /** Check an edit of a pending call's input and recompute its preview; writes nothing (at most 20 per request and approver). */
  previewEdit(requestId: string, options: EditOptions): Promise<EditPreview>;
  grant(requestId: string, options: GrantOptions): Promise<ApprovalDecisionResult>;
  deny(requestId: string, options: DenyOptions): Promise<ApprovalRequest>;
}

/** A decision's `expect` as a plain copy, read once (a getter cannot say one thing to the desk and another to the journal). */
function snapshot(expect: unknown): ApprovalExpectation | undefined {
  if (typeof expect !== "object" || expect === null) return expect as undefined;
  try {
    const { version, previewHash } = expect as Record<string, unknown>;
    return { version, previewHash } as ApprovalExpectation;
  } catch {
    throw new ToolError("approval_invalid", "expect could not be read; it names the version seen and its preview hash ({ version, previewHash })");
  }
}

/** An option read once, as a plain value: a getter that throws is refused as an input the desk cannot read. */
function readOnce<T>(read: () => T, what: string): T {
  try {
    return read();
  } catch {
    throw new ToolError("invalid_input", `${what} could not be read; it is plain JSON data`);
  }
}

/** A grant's proposed edit, each part read once (what is checked is what the journal is handed). */
function proposedOf(options: GrantOptions | undefined): { readonly input: unknown; readonly previewHash: unknown } | undefined {
  return readOnce(() => {
    const edit = options?.edit as { readonly input?: unknown; readonly previewHash?: unknown } | null | undefined;
    return edit === undefined ? undefined : { input: edit?.input, previewHash: edit?.previewHash };
  }, "the edit");
}

export const DEFAULT_GRANT_TTL_MS = 10 * 60_000;
export const MAX_GRANT_TTL_MS = 24 * 60 * 60_000;

export function createApprovalDesk(env: GateEnv, authority: Authority): ApprovalDesk {
  const { journal, redactor, tools, telemetry } = env;
  const now = env.clock;
  const previewed = previewBudget();
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
    async previewEdit(requestId, options) {
      const { request, live } = await decider(requestId, options);
      previewed(request.id, live.id);
      const input = readOnce(() => options.input, "the edited input");
      return checkEdit(env, request, input, snapshot(options.expect));
    },
    async grant(requestId, options) {
      const ttlMs = options?.ttlMs ?? DEFAULT_GRANT_TTL_MS;
      if (!Number.isInteger(ttlMs) || ttlMs <= 0 || ttlMs > MAX_GRANT_TTL_MS) {
        throw new ToolError("config_invalid", `ttlMs must be a whole number of milliseconds between 1 and ${MAX_GRANT_TTL_MS}`);
      }
      const { request: asked, live } = await decider(requestId, options);
      // Read once: what is checked here is what the journal is handed.
      const expect = snapshot(options?.expect);
      const proposed = proposedOf(options);
      // With an edit, checkEdit compares expect in its place among the edit's checks.
      if (proposed === undefined && (expect !== undefined || asked.edit !== undefined)) refuseStale(asked, expect);
      let edit: ApprovalEditInput | undefined;
      if (proposed !== undefined) {
        previewed(asked.id, `${live.id}\u0000grant`);
        const checked = await checkEdit(env, asked, proposed.input, expect);
        if (checked.previewHash !== proposed.previewHash) {
          throw new ToolError("approval_invalid", `the preview of the edit of ${requestId} changed while you looked: check the edit again`);
        }
        const { input, inputHash, preview, previewHash, target, changes } = checked;
        const fromInputHash = asked.edit?.inputHash ?? asked.inputHash;
        edit = { input, inputHash, preview, previewHash, target, changes, fromInputHash, by: live.id, via: live.via, at: new Date(now()).toISOString() };
      } else if (currentApprovals(asked).some((a) => a.by === live.id)) {
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
          ...(expect === undefined ? {} : { expect }),
          ...(edit === undefined ? {} : { edit }),
        }));
      } catch (error) {
        redactor.unregister(token);
        throw error;
      }
      if (request.status !== "granted") {
        redactor.unregister(token);
        return { status: "needs_another", request };
      }
      telemetry?.approvalDecided(request.toolId, "granted", edit === undefined ? undefined : { edited: true });
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
