/**
 * The approval authority: who may decide and change what, kept in the journal as sealed records
 * (operators, login tokens, sessions, MCP clients, kill switches), so every worker sharing the
 * journal sees the same state and an edited row is `journal_tampered`, never trusted.
 */
import { ToolError } from "../errors.js";
import type { ApprovalRequest } from "../journal/types.js";
import { riskRank, type AnyToolManifest } from "../manifest.js";
import type { Redactor } from "../redactor.js";
import { isMinted, mint, mintedOf, OWNER_ID } from "./approver.js";
import { createClients } from "./clients.js";
import { createContext, type AuthorityContext, type LiveApprover } from "./context.js";
import { createOperators, createSessions, DEFAULT_SESSION_TTL_MS } from "./operators.js";
import { createSwitches } from "./switches.js";
import type { Approver, Authority, RecordJournal } from "./types.js";

export interface CreateAuthorityOptions {
  /** Milliseconds since the epoch; default `Date.now`. */
  readonly clock?: () => number;
  /** Every secret the authority makes (login tokens, sessions, client tokens) is redacted here while it lives. */
  readonly redactor: Redactor;
  /** How long a console session lasts; default 12 hours. */
  readonly sessionTtlMs?: number;
}

const contexts = new WeakMap<Authority, AuthorityContext>();

export function createAuthority(journal: RecordJournal, options: CreateAuthorityOptions): Authority {
  if (!journal || typeof journal.updateRecord !== "function") throw new ToolError("config_invalid", "createAuthority needs a journal with authority records");
  if (!options?.redactor) throw new ToolError("config_invalid", "createAuthority needs the gate's redactor");
  const sessionTtlMs = options.sessionTtlMs ?? DEFAULT_SESSION_TTL_MS;
  if (!Number.isInteger(sessionTtlMs) || sessionTtlMs <= 0) throw new ToolError("config_invalid", "sessionTtlMs must be a positive whole number");
  const ctx = createContext(journal, options.redactor, options.clock ?? Date.now);
  const operators = createOperators(ctx);
  const { find: _find, ...operatorsApi } = operators;
  const owner = mint({ kind: "operator", id: OWNER_ID, name: "owner", role: "admin", via: "owner" }, { kind: "owner" });
  const authority: Authority = Object.freeze({
    owner: () => owner,
    ...createSessions(ctx, operators, sessionTtlMs),
    operators: Object.freeze(operatorsApi),
    clients: Object.freeze(createClients(ctx)),
    switches: Object.freeze(createSwitches(ctx)),
    can(approver: Approver, action: "view" | "decide" | "admin") {
      if (!isMinted(approver)) return false;
      if (action === "view") return true;
      if (action === "decide") return approver.role === "approver" || approver.role === "admin";
      return action === "admin" && approver.role === "admin" && mintedOf(approver).kind !== "client";
    },
  });
  contexts.set(authority, ctx);
  return authority;
}

/**
 * May `by` decide `request` now? Re-reads the operator (or session, or client) behind it: a
 * string, a look-alike, an ended session → `approver_invalid`; a viewer, a disabled or removed
 * operator, a tool, risk or tenant outside its scope, an in-band client deciding another
 * principal's call → `approver_forbidden`. `manifest` is the request's tool as this gate knows it
 * (a scope with `maxRisk` refuses a tool it does not know).
 */
export async function checkDecider(authority: Authority, by: unknown, request: ApprovalRequest, manifest: AnyToolManifest | undefined): Promise<LiveApprover> {
  const ctx = contexts.get(authority);
  if (!ctx) throw new ToolError("config_invalid", "not an authority made by createAuthority");
  const live = await ctx.live(by);
  const refuse = (why: string) => new ToolError("approver_forbidden", `${live.id} may not decide ${request.id}: ${why}`, { details: { approver: live.id } });
  if (live.role !== "approver" && live.role !== "admin") throw refuse(`a ${live.role} cannot decide approvals`);
  if (live.client && (live.client.principal !== request.principal || live.client.tenant !== request.tenant)) {
    throw refuse("an in-band client decides only its own calls");
  }
  const scope = live.scope;
  if (scope?.tools) {
    const family = `${request.toolId.slice(0, request.toolId.indexOf("."))}.*`;
    if (!scope.tools.includes(request.toolId) && !scope.tools.includes(family)) throw refuse(`${request.toolId} is outside its tools`);
  }
  if (scope?.maxRisk) {
    if (!manifest || manifest.id !== request.toolId) throw refuse(`${request.toolId}'s risk is not known to this gate`);
    if (riskRank(manifest.risk) > riskRank(scope.maxRisk)) throw refuse(`${request.toolId} is ${manifest.risk} risk, above its ${scope.maxRisk}`);
  }
  if (scope?.tenants && !scope.tenants.includes(request.tenant)) throw refuse(`tenant ${request.tenant} is outside its tenants`);
  return live;
}
