/** The approval authority's public shapes: operators, MCP clients, kill switches and the approvers they act as. */
import type { AuditEventInput, JournalReceipt } from "../journal/types.js";
import type { RiskLevel } from "../manifest.js";

export type OperatorRole = "viewer" | "approver" | "admin";

/** What an approver may decide; each list, when given, must include the request's tool (id or `family.*`) or tenant. */
export interface OperatorScope {
  /** Tool ids, or `family.*` for every tool of a family. */
  readonly tools?: readonly string[];
  /** The riskiest tool (by its manifest) the operator may decide. */
  readonly maxRisk?: RiskLevel;
  readonly tenants?: readonly string[];
}

export type OperatorStatus = "active" | "disabled" | "removed";

export interface Operator {
  /** `op_…` */
  readonly id: string;
  readonly name: string;
  readonly role: OperatorRole;
  readonly scope?: OperatorScope;
  readonly status: OperatorStatus;
  readonly createdAt: string;
  /** The approver id that added it (`owner`, `op_…`). */
  readonly createdBy: string;
}

export interface McpClient {
  /** `mcc_…` */
  readonly id: string;
  readonly name: string;
  /** The profile the client's calls run under. */
  readonly profile: string;
  readonly principal: string;
  readonly tenant: string;
  /** An operator enabled in-band approval (elicitation) for this client, which is itself a human interface. */
  readonly elicitation: boolean;
  readonly status: "active" | "removed";
  readonly createdAt: string;
  readonly createdBy: string;
}

export interface KillSwitch {
  /** `tool:<id>` or `family:<name>`. */
  readonly target: string;
  readonly reason: string;
  /** The approver id that disabled it. */
  readonly by: string;
  readonly at: string;
}

/**
 * An authenticated decider. Only the authority makes these (`owner()`, `actingAs`, `login`,
 * `session`, `clients.approver`); a look-alike object (the same fields, a copy, a JSON round trip)
 * is refused with `approver_invalid`. Every use re-reads the operator, session or client behind it.
 */
export interface Approver {
  readonly kind: "operator" | "client";
  /** `op_…`, `owner`, or `mcp:<clientId>`. */
  readonly id: string;
  readonly name: string;
  readonly role: OperatorRole;
  readonly via: "session" | "owner" | "host" | "elicitation";
}

export type AuthorityAction = "view" | "decide" | "admin";

export interface Authority {
  /** The project's owner (whoever holds its state directory): id `owner`, role admin. */
  owner(): Approver;
  /** A host application's signed-in user, as an operator created for it: an active operator, else `operator_unknown` / `operator_disabled`. */
  actingAs(idOrName: string): Promise<Approver>;
  readonly operators: {
    /** Adds an operator and issues its first one-time login token (15 minutes). Admin only. */
    add(
      name: string,
      options: { readonly role: OperatorRole; readonly scope?: OperatorScope },
      by: Approver,
    ): Promise<{ readonly operator: Operator; readonly loginToken: string; readonly expiresAt: string }>;
    list(): Promise<readonly Operator[]>;
    get(idOrName: string): Promise<Operator | undefined>;
    /** Its sessions stop working at once. Admin only. */
    disable(idOrName: string, by: Approver): Promise<Operator>;
    enable(idOrName: string, by: Approver): Promise<Operator>;
    /** For good: the record stays (status `removed`) so the audit trail still names it. */
    remove(idOrName: string, by: Approver): Promise<Operator>;
    /** A new one-time login token (15 minutes). Admin only. */
    issueLogin(idOrName: string, by: Approver): Promise<{ readonly loginToken: string; readonly expiresAt: string }>;
  };
  /** Spends a one-time login token (once, across workers sharing the journal); undefined when it is unknown, spent or expired. */
  login(loginToken: string): Promise<{ readonly session: string; readonly approver: Approver; readonly expiresAt: string } | undefined>;
  /** The approver behind a session; undefined when it ended, expired, or its operator is no longer active. */
  session(session: string): Promise<Approver | undefined>;
  logout(session: string): Promise<void>;
  readonly clients: {
    /** Admin only; the token is shown once, only its hash is kept. */
    add(
      name: string,
      options: { readonly profile: string; readonly principal?: string; readonly tenant?: string; readonly elicitation?: boolean },
      by: Approver,
    ): Promise<{ readonly client: McpClient; readonly token: string }>;
    list(): Promise<readonly McpClient[]>;
    remove(idOrName: string, by: Approver): Promise<McpClient>;
    /** The active client a bearer token belongs to; undefined otherwise. */
    authenticate(bearer: string): Promise<McpClient | undefined>;
    /** The in-band approver for a client an operator enabled elicitation for; else ToolError `approver_forbidden`. */
    approver(client: McpClient): Approver;
  };
  readonly switches: {
    /** Admin only. `target`: `tool:<id>` or `family:<name>`. */
    disable(target: string, reason: string, by: Approver): Promise<KillSwitch>;
    enable(target: string, by: Approver): Promise<void>;
    list(): Promise<readonly KillSwitch[]>;
  };
  /**
   * May this approver do this, by its role as made (view: any role; decide: approver or admin;
   * admin: admin)? False for anything the authority did not make. A hint for what to show: every
   * decision and change checks again against the current records and the request's scope.
   */
  can(approver: Approver, action: AuthorityAction): boolean;
}

/** The part of the journal the authority keeps its records in (sealed, each change atomic with its audit event). */
export interface RecordJournal {
  getRecord(kind: string, id: string): Promise<unknown>;
  listRecords(kind: string): Promise<readonly { readonly id: string; readonly value: unknown }[]>;
  updateRecord<T>(
    kind: string,
    id: string,
    fn: (current: unknown) => { readonly value: unknown; readonly event: AuditEventInput; readonly result: T },
  ): Promise<{ readonly result: T; readonly receipt: JournalReceipt }>;
}
