/**
 * `toolgate operators`: the people who may view, decide or administer, kept in the journal. The
 * CLI acts as the owner (whoever holds the state directory and its audit key).
 */
import { RISK_LEVELS, ToolError, type RiskLevel } from "@toolgate/core";
import type { Operator, OperatorRole, OperatorScope } from "@toolgate/core/operator";
import { DEFAULT_CONSOLE_PORT } from "../console-config.js";
import { CliFailure, EXIT, printList, type Io } from "../output.js";
import { printable } from "../printable.js";
import type { Runtime } from "../runtime.js";
import { splitList, toolSelectors } from "./targets.js";

const ROLES: readonly OperatorRole[] = ["viewer", "approver", "admin"];

export interface OperatorsAddOptions {
  readonly role?: string;
  readonly tools?: string;
  readonly maxRisk?: string;
  readonly tenants?: string;
  readonly port?: string;
}

/** The scope as one short line: `tools notes.*; risk ≤ high; tenants acme`, or `-`. */
export function describeScope(scope: OperatorScope | undefined): string {
  const parts = [
    ...(scope?.tools ? [`tools ${scope.tools.join(",")}`] : []),
    ...(scope?.maxRisk ? [`risk ≤ ${scope.maxRisk}`] : []),
    ...(scope?.tenants ? [`tenants ${scope.tenants.join(",")}`] : []),
  ];
  return parts.length === 0 ? "-" : parts.join("; ");
}

function parseRole(role: string | undefined): OperatorRole {
  if (ROLES.includes(role as OperatorRole)) return role as OperatorRole;
  throw new CliFailure(
    role === undefined ? "operators add needs --role" : `--role must be viewer, approver or admin, not ${JSON.stringify(role)}`,
    EXIT.usage,
    "viewer sees inventory, audit and outbox; approver decides approvals; admin does everything. e.g. toolgate operators add alice --role approver",
  );
}

/** The console's port for the link: --port, else the composition's console.port, else 7878. */
function loginPort(runtime: Runtime, given: string | undefined): number {
  if (given === undefined) return runtime.config.console?.port || DEFAULT_CONSOLE_PORT;
  const port = Number(given);
  if (/^\d+$/.test(given) && port >= 1 && port <= 65535) return port;
  throw new CliFailure(
    `--port must be a port number (1-65535), not ${JSON.stringify(given)}`,
    EXIT.usage,
    "the port toolgate console --port N serves on; default 7878",
  );
}

/** The one-time link and what it is for, printed once: the token is not kept anywhere but its hash. */
function printLogin(io: Io, name: string, login: { loginToken: string; expiresAt: string }, port: number, now: number): void {
  const minutes = Math.max(1, Math.round((Date.parse(login.expiresAt) - now) / 60_000));
  io.out(
    [
      `one-time login link for ${name} (works once, for ${minutes} minutes, until ${login.expiresAt}):`,
      `  http://127.0.0.1:${port}/login?token=${login.loginToken}`,
      `token ${login.loginToken}`,
      `give it to ${name} only; open it while \`toolgate console${port === DEFAULT_CONSOLE_PORT ? "" : ` --port ${port}`}\` runs. A new link: toolgate operators login ${name}`,
    ].join("\n"),
  );
}

export async function operatorsAdd(runtime: Runtime, name: string, options: OperatorsAddOptions, io: Io): Promise<number> {
  const role = parseRole(options.role);
  const port = loginPort(runtime, options.port);
  if (options.maxRisk !== undefined && !(RISK_LEVELS as readonly string[]).includes(options.maxRisk))
    throw new CliFailure(`--max-risk must be one of ${RISK_LEVELS.join(", ")}`, EXIT.usage, "e.g. --max-risk high: this operator decides nothing riskier");
  const scope: OperatorScope = {
    ...(options.tools !== undefined ? { tools: toolSelectors(runtime, options.tools) } : {}),
    ...(options.maxRisk !== undefined ? { maxRisk: options.maxRisk as RiskLevel } : {}),
    ...(options.tenants !== undefined ? { tenants: splitList(options.tenants) } : {}),
  };
  const scoped = Object.keys(scope).length > 0;
  if (scoped && role === "viewer")
    throw new CliFailure(
      "a viewer decides nothing, so --tools, --max-risk and --tenants do not apply",
      EXIT.usage,
      `use --role approver to scope ${name}'s decisions`,
    );
  const authority = runtime.gate.authority;
  const added = await authority.operators.add(name, { role, ...(scoped ? { scope } : {}) }, authority.owner()).catch((error: unknown) => {
    if (ToolError.is(error, "conflict"))
      throw new CliFailure(`an operator named ${name} exists`, EXIT.failed, `toolgate operators login ${name} gives a new link`);
    // The authority's own checks of what was typed (the name, the scope) are usage errors here.
    if (ToolError.is(error, "config_invalid")) throw new CliFailure(error.message, EXIT.usage, `e.g. toolgate operators add alice --role ${role}`);
    throw error;
  });
  io.out(`added ${added.operator.role} ${name} (${added.operator.id}), scope ${describeScope(added.operator.scope)}`);
  printLogin(io, name, added, port, Date.now());
  return EXIT.ok;
}

export async function operatorsList(runtime: Runtime, options: { json: boolean }, io: Io): Promise<number> {
  return printList(io, await runtime.gate.authority.operators.list(), {
    json: options.json,
    empty: "no operators yet: toolgate operators add NAME --role approver",
    headers: ["id", "name", "role", "scope", "status"],
    row: (o) => [o.id, o.name, o.role, describeScope(o.scope), o.status].map(printable),
  });
}

const CHANGES = {
  disable: { verb: "disabled", after: "their sessions and login links stop working now; toolgate operators enable NAME undoes it" },
  enable: { verb: "enabled", after: "a new login link: toolgate operators login NAME" },
  remove: { verb: "removed", after: "for good: the record stays so the audit trail still names them" },
} as const;

export async function operatorsChange(runtime: Runtime, change: keyof typeof CHANGES, name: string, io: Io): Promise<number> {
  const authority = runtime.gate.authority;
  const operator: Operator = await authority.operators[change](name, authority.owner()).catch((error: unknown) => {
    throw unknownOperator(error, name);
  });
  io.out(`${CHANGES[change].verb} ${operator.name} (${operator.id}): ${CHANGES[change].after.replace("NAME", operator.name)}`);
  return EXIT.ok;
}

export async function operatorsLogin(runtime: Runtime, name: string, options: { port?: string }, io: Io): Promise<number> {
  const port = loginPort(runtime, options.port);
  const authority = runtime.gate.authority;
  const login = await authority.operators.issueLogin(name, authority.owner()).catch((error: unknown) => {
    throw unknownOperator(error, name);
  });
  printLogin(io, name, login, port, Date.now());
  return EXIT.ok;
}

function unknownOperator(error: unknown, name: string): unknown {
  if (ToolError.is(error, "operator_unknown")) return new CliFailure(`no operator ${name}`, EXIT.failed, "toolgate operators list shows them");
  if (ToolError.is(error, "operator_disabled"))
    return new CliFailure(`${error.message}`, EXIT.failed, `toolgate operators enable ${name} first (a removed operator is gone: add a new one)`);
  return error;
}
