/** What the authority's parts share: the record journal, the clock, the redactor, and how an approver is checked now. */
import { randomBytes, timingSafeEqual } from "node:crypto";
import { sha256Hex } from "../canonical-json.js";
import { ToolError } from "../errors.js";
import type { AuditEventInput } from "../journal/types.js";
import type { Redactor } from "../redactor.js";
import { mintedOf, OWNER_ID } from "./approver.js";
import type { Approver, McpClient, Operator, OperatorRole, OperatorScope, RecordJournal } from "./types.js";

/** An approver as it stands now: its current role and scope, from the records. */
export interface LiveApprover {
  readonly id: string;
  readonly via: Approver["via"];
  readonly role: OperatorRole;
  readonly scope: OperatorScope | undefined;
  /** For an in-band client: the only principal and tenant it may decide for. */
  readonly client: McpClient | undefined;
  /**
   * Other people this approver's credential came from (the admin who issued the sign-in link of its
   * session; the admin who added an in-band client): a two-person request needs two approvers none
   * of whom could have been the other. The owner is never named (it could act as anyone anyway).
   */
  readonly linked: readonly string[];
}

export interface AuthorityContext {
  readonly journal: RecordJournal;
  readonly redactor: Redactor;
  readonly clock: () => number;
  iso(ms?: number): string;
  /** The approver as it stands now; `approver_invalid` / `approver_forbidden` when it no longer stands. */
  live(approver: unknown): Promise<LiveApprover>;
  /** The approver as it stands now, and an admin; otherwise `approver_forbidden`. */
  admin(approver: unknown): Promise<LiveApprover>;
}

export interface OperatorRecord extends Operator {
  /** Raised each time the operator is disabled or removed: sessions and login tokens made before stay closed, even once it is enabled again. */
  readonly epoch?: number;
}
export interface ClientRecord extends McpClient {
  readonly tokenHash: string;
}
export interface SecretRecord {
  readonly operatorId: string;
  readonly status: "open" | "spent" | "active" | "ended";
  readonly expiresAt: string;
  readonly createdAt: string;
  /** The operator's epoch when this was made (absent: 0). */
  readonly epoch?: number;
  /** Who issued the login token (and so could have opened the session): an approver id. */
  readonly issuedBy?: string;
}

/** The people a credential came from, besides its holder and the owner. */
export function linkedIds(holder: string, ...from: (string | undefined)[]): readonly string[] {
  return from.filter((id): id is string => id !== undefined && id !== holder && id !== OWNER_ID);
}

/** A session or login token opens only for the operator as it was when it was made, never across a disable. */
export function sameEpoch(secret: Pick<SecretRecord, "epoch">, operator: Pick<OperatorRecord, "epoch">): boolean {
  return (secret.epoch ?? 0) === (operator.epoch ?? 0);
}

/** 32 random bytes, base64url, with its kind's prefix (`tgl_`, `tgs_`, `tgc_`). */
export function newSecret(prefix: "tgl_" | "tgs_" | "tgc_"): string {
  return `${prefix}${randomBytes(32).toString("base64url")}`;
}

/** A string that could be a secret of this kind (so nothing else is hashed and looked up). */
export function looksLikeSecret(value: unknown, prefix: "tgl_" | "tgs_" | "tgc_"): value is string {
  return typeof value === "string" && value.length === prefix.length + 43 && value.startsWith(prefix) && /^[A-Za-z0-9_-]+$/.test(value.slice(4));
}

export const secretHash = (secret: string): string => sha256Hex(secret);

export function sameHash(a: string, b: string): boolean {
  return a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));
}

/** The audit event of an authority change, naming who made it. */
export function changeEvent(
  ctx: AuthorityContext,
  type: string,
  by: Pick<LiveApprover, "id" | "via"> | undefined,
  data: Record<string, unknown>,
): AuditEventInput {
  return { type, at: ctx.iso(), data: { ...data, ...(by ? { by: by.id, via: by.via } : {}) } };
}

export function createContext(journal: RecordJournal, redactor: Redactor, clock: () => number): AuthorityContext {
  const ctx: AuthorityContext = {
    journal,
    redactor,
    clock,
    iso: (ms = clock()) => new Date(ms).toISOString(),
    async live(approver) {
      const stands = mintedOf(approver);
      const via = (approver as Approver).via;
      if (stands.kind === "owner") return { id: OWNER_ID, via, role: "admin", scope: undefined, client: undefined, linked: [] };
      if (stands.kind === "client") {
        const client = (await journal.getRecord("client", stands.clientId)) as ClientRecord | undefined;
        if (!client || client.status !== "active" || !client.elicitation) {
          throw new ToolError("approver_forbidden", `MCP client ${stands.clientId} is removed or may no longer approve in band`);
        }
        return { id: `mcp:${client.id}`, via, role: "approver", scope: undefined, client: publicClient(client), linked: linkedIds("", client.createdBy) };
      }
      let session: SecretRecord | undefined;
      if (stands.sessionHash !== undefined) {
        session = (await journal.getRecord("session", stands.sessionHash)) as SecretRecord | undefined;
        if (!session || session.status !== "active" || Date.parse(session.expiresAt) <= clock()) {
          throw new ToolError("approver_invalid", "the session has ended or expired; sign in again");
        }
      }
      const operator = (await journal.getRecord("operator", stands.operatorId)) as OperatorRecord | undefined;
      if (!operator) throw new ToolError("approver_invalid", `no operator ${stands.operatorId}`);
      if (operator.status !== "active") throw new ToolError("approver_forbidden", `operator ${operator.name} is ${operator.status}`);
      if (session && !sameEpoch(session, operator))
        throw new ToolError("approver_invalid", "the session began before the operator was disabled; sign in again");
      return { id: operator.id, via, role: operator.role, scope: operator.scope, client: undefined, linked: linkedIds(operator.id, session?.issuedBy) };
    },
    async admin(approver) {
      const live = await ctx.live(approver);
      if (live.role !== "admin") throw new ToolError("approver_forbidden", `${live.id} is not an admin`);
      return live;
    },
  };
  return ctx;
}

export function publicClient(record: ClientRecord): McpClient {
  const { tokenHash: _hash, ...client } = record;
  return Object.freeze(client);
}

/** Run `fn` and give undefined for the refusal it expects (a spent token, an unknown session). */
export async function orUndefined<T>(fn: () => Promise<T>, ...codes: Parameters<typeof ToolError.is>[1][]): Promise<T | undefined> {
  try {
    return await fn();
  } catch (error) {
    if (ToolError.is(error, ...codes)) return undefined;
    throw error;
  }
}
