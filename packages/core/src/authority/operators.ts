/** Operators, their one-time login tokens and their sessions: sealed journal records, each change with its audit event. */
import { randomBytes } from "node:crypto";
import { ToolError } from "../errors.js";
import { RISK_LEVELS, TOOL_ID_PATTERN } from "../manifest.js";
import { mint } from "./approver.js";
import {
  changeEvent,
  looksLikeSecret,
  newSecret,
  orUndefined,
  sameEpoch,
  secretHash,
  type AuthorityContext,
  type LiveApprover,
  type OperatorRecord,
  type SecretRecord,
} from "./context.js";
import type { Approver, Authority, Operator, OperatorRole, OperatorScope, OperatorStatus } from "./types.js";

export const LOGIN_TTL_MS = 15 * 60_000;
export const DEFAULT_SESSION_TTL_MS = 12 * 60 * 60_000;
const ROLES: readonly OperatorRole[] = ["viewer", "approver", "admin"];
const NAME = /^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$/;
const FAMILY_WILDCARD = /^[a-z][a-z0-9_]*\.\*$/;

/** A name an operator or client may have: short, printable, never one of the authority's own ids. */
export function checkName(name: unknown, what: string, idPrefix: string): string {
  if (typeof name !== "string" || !NAME.test(name) || name.startsWith(idPrefix) || name === "owner" || name.startsWith("mcp:")) {
    throw new ToolError("config_invalid", `${what} name must be 1–64 letters, digits, ".", "_", "@" or "-", and not "owner" or an id`);
  }
  return name;
}

function checkScope(scope: unknown): OperatorScope | undefined {
  if (scope === undefined) return undefined;
  const s = scope as OperatorScope;
  const list = (value: unknown, ok: (item: string) => boolean) =>
    value === undefined || (Array.isArray(value) && value.length > 0 && value.every((item) => typeof item === "string" && ok(item)));
  if (
    typeof scope !== "object" ||
    scope === null ||
    !list(s.tools, (t) => TOOL_ID_PATTERN.test(t) || FAMILY_WILDCARD.test(t)) ||
    !list(s.tenants, (t) => t.length > 0 && t.length <= 256) ||
    (s.maxRisk !== undefined && !(RISK_LEVELS as readonly string[]).includes(s.maxRisk))
  ) {
    throw new ToolError("config_invalid", "scope: tools are tool ids or family.*, tenants non-empty strings (each list non-empty), maxRisk a risk level");
  }
  return {
    ...(s.tools ? { tools: [...s.tools] } : {}),
    ...(s.maxRisk ? { maxRisk: s.maxRisk } : {}),
    ...(s.tenants ? { tenants: [...s.tenants] } : {}),
  };
}

export type OperatorsApi = Authority["operators"] & {
  find(idOrName: string): Promise<OperatorRecord | undefined>;
};

export function createOperators(ctx: AuthorityContext): OperatorsApi {
  const { journal } = ctx;
  const all = async () => (await journal.listRecords("operator")).map((r) => r.value as OperatorRecord);
  const find = async (idOrName: string): Promise<OperatorRecord | undefined> => {
    if (typeof idOrName !== "string" || idOrName === "") return undefined;
    if (idOrName.startsWith("op_")) return (await journal.getRecord("operator", idOrName)) as OperatorRecord | undefined;
    return (await all()).find((o) => o.name === idOrName && o.status !== "removed");
  };
  const mustFind = async (idOrName: string) => {
    const found = await find(idOrName);
    if (!found) throw new ToolError("operator_unknown", "no operator by that id or name");
    return found;
  };

  /** A one-time login token for an operator: registered with the redactor until it expires or is spent. */
  const issue = async (operator: OperatorRecord, by: LiveApprover) => {
    const loginToken = newSecret("tgl_");
    const at = ctx.clock();
    const expiresAt = ctx.iso(at + LOGIN_TTL_MS);
    ctx.redactor.register(loginToken, { until: at + LOGIN_TTL_MS });
    const record: SecretRecord = { operatorId: operator.id, status: "open", expiresAt, createdAt: ctx.iso(at), ...epochOf(operator), issuedBy: by.id };
    await journal.updateRecord("login", secretHash(loginToken), (current) => {
      if (current !== undefined) throw new ToolError("conflict", "a login token collided");
      return { value: record, event: changeEvent(ctx, "operator.login_issued", by, { operator: operator.id, expiresAt }), result: undefined };
    });
    return { loginToken, expiresAt };
  };

  const setStatus = async (idOrName: string, status: OperatorStatus, type: string, by: Approver): Promise<Operator> => {
    const live = await ctx.admin(by);
    const target = await mustFind(idOrName);
    const { result } = await journal.updateRecord("operator", target.id, (current) => {
      const now = current as OperatorRecord | undefined;
      if (!now) throw new ToolError("operator_unknown", `no operator ${target.id}`);
      if (now.status === "removed") throw new ToolError("operator_disabled", `operator ${now.name} was removed`);
      // Stopped: every session and login token made so far stays closed, even once enabled again.
      const next: OperatorRecord = { ...now, status, ...(status === "active" ? {} : { epoch: (now.epoch ?? 0) + 1 }) };
      return { value: next, event: changeEvent(ctx, type, live, { operator: now.id, name: now.name }), result: Object.freeze(next) };
    });
    return result;
  };

  return {
    find,
    async add(name, options, by) {
      const live = await ctx.admin(by);
      checkName(name, "an operator's", "op_");
      if (!ROLES.includes(options?.role)) throw new ToolError("config_invalid", `role must be one of ${ROLES.join(", ")}`);
      const scope = checkScope(options.scope);
      if (await find(name)) throw new ToolError("conflict", `an operator named ${name} exists`);
      const operator: OperatorRecord = Object.freeze({
        id: `op_${randomBytes(8).toString("hex")}`,
        name,
        role: options.role,
        ...(scope ? { scope } : {}),
        status: "active",
        createdAt: ctx.iso(),
        createdBy: live.id,
      });
      await journal.updateRecord("operator", operator.id, (current) => {
        if (current !== undefined) throw new ToolError("conflict", "an operator id collided");
        const event = changeEvent(ctx, "operator.added", live, { operator: operator.id, name, role: operator.role, scope: scope ?? null });
        return { value: operator, event, result: undefined };
      });
      return { operator, ...(await issue(operator, live)) };
    },
    list: all,
    get: find,
    disable: (idOrName, by) => setStatus(idOrName, "disabled", "operator.disabled", by),
    enable: (idOrName, by) => setStatus(idOrName, "active", "operator.enabled", by),
    remove: (idOrName, by) => setStatus(idOrName, "removed", "operator.removed", by),
    async issueLogin(idOrName, by) {
      const live = await ctx.admin(by);
      const operator = await mustFind(idOrName);
      if (operator.status !== "active") throw new ToolError("operator_disabled", `operator ${operator.name} is ${operator.status}`);
      return issue(operator, live);
    },
  };
}

export type SessionsApi = Pick<Authority, "login" | "session" | "logout" | "actingAs">;

const epochOf = (operator: OperatorRecord): { readonly epoch?: number } => (operator.epoch ? { epoch: operator.epoch } : {});

export function operatorApprover(operator: Operator, via: Approver["via"], sessionHash?: string): Approver {
  return mint(
    { kind: "operator", id: operator.id, name: operator.name, role: operator.role, via },
    { kind: "operator", operatorId: operator.id, ...(sessionHash === undefined ? {} : { sessionHash }) },
  );
}

export function createSessions(ctx: AuthorityContext, operators: OperatorsApi, sessionTtlMs: number): SessionsApi {
  const { journal } = ctx;
  const activeOperator = async (id: string) => {
    const operator = await operators.find(id);
    return operator?.status === "active" ? operator : undefined;
  };
  return {
    async actingAs(idOrName) {
      const operator = await operators.find(idOrName);
      if (!operator) throw new ToolError("operator_unknown", "no operator by that id or name");
      if (operator.status !== "active") throw new ToolError("operator_disabled", `operator ${operator.name} is ${operator.status}`);
      return operatorApprover(operator, "host");
    },
    async login(loginToken) {
      if (!looksLikeSecret(loginToken, "tgl_")) return undefined;
      const at = ctx.clock();
      // Spent inside the journal's write transaction: of two workers presenting the same token, one wins.
      const spent = await orUndefined(
        () =>
          journal.updateRecord("login", secretHash(loginToken), (current) => {
            const token = current as SecretRecord | undefined;
            if (!token || token.status !== "open" || Date.parse(token.expiresAt) <= at) {
              throw new ToolError("approver_invalid", "the login token is unknown, spent or expired");
            }
            const event = changeEvent(ctx, "operator.login", undefined, { operator: token.operatorId });
            return { value: { ...token, status: "spent" }, event, result: token };
          }),
        "approver_invalid",
      );
      ctx.redactor.unregister(loginToken);
      const operator = spent && (await activeOperator(spent.result.operatorId));
      if (!operator || !sameEpoch(spent.result, operator)) return undefined;
      const session = newSecret("tgs_");
      const hash = secretHash(session);
      const expiresAt = ctx.iso(at + sessionTtlMs);
      ctx.redactor.register(session, { until: at + sessionTtlMs });
      const issuedBy = spent.result.issuedBy === undefined ? {} : { issuedBy: spent.result.issuedBy };
      const record: SecretRecord = { operatorId: operator.id, status: "active", expiresAt, createdAt: ctx.iso(at), ...epochOf(operator), ...issuedBy };
      await journal.updateRecord("session", hash, (current) => {
        if (current !== undefined) throw new ToolError("conflict", "a session id collided");
        return { value: record, event: changeEvent(ctx, "session.started", undefined, { operator: operator.id, expiresAt }), result: undefined };
      });
      return { session, approver: operatorApprover(operator, "session", hash), expiresAt };
    },
    async session(session) {
      if (!looksLikeSecret(session, "tgs_")) return undefined;
      const hash = secretHash(session);
      const record = (await journal.getRecord("session", hash)) as SecretRecord | undefined;
      if (!record || record.status !== "active" || Date.parse(record.expiresAt) <= ctx.clock()) return undefined;
      const operator = await activeOperator(record.operatorId);
      return operator && sameEpoch(record, operator) ? operatorApprover(operator, "session", hash) : undefined;
    },
    async logout(session) {
      if (!looksLikeSecret(session, "tgs_")) return;
      await orUndefined(
        () =>
          journal.updateRecord("session", secretHash(session), (current) => {
            const record = current as SecretRecord | undefined;
            if (!record || record.status !== "active") throw new ToolError("approver_invalid", "no such session");
            return {
              value: { ...record, status: "ended" },
              event: changeEvent(ctx, "session.ended", undefined, { operator: record.operatorId }),
              result: undefined,
            };
          }),
        "approver_invalid",
      );
      ctx.redactor.unregister(session);
    },
  };
}
