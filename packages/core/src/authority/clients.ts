/** MCP clients: each with its own bearer token (only its hash kept), principal and profile; in-band approval only when an operator enabled it. */
import { randomBytes } from "node:crypto";
import { ToolError } from "../errors.js";
import type { SecretLease } from "../redactor.js";
import { mint } from "./approver.js";
import { changeEvent, looksLikeSecret, newSecret, publicClient, sameHash, secretHash, type AuthorityContext, type ClientRecord } from "./context.js";
import { checkName } from "./operators.js";
import type { Authority, McpClient } from "./types.js";

const PROFILE_NAME = /^[a-z0-9][a-z0-9_.-]*$/i;

export function createClients(ctx: AuthorityContext): Authority["clients"] {
  const { journal } = ctx;
  // A client's token is redacted for as long as this process knows it and the client exists.
  const leases = new Map<string, SecretLease>();
  const records = async () => (await journal.listRecords("client")).map((r) => r.value as ClientRecord);
  const find = async (idOrName: string) => {
    if (typeof idOrName !== "string" || idOrName === "") return undefined;
    if (idOrName.startsWith("mcc_")) return (await journal.getRecord("client", idOrName)) as ClientRecord | undefined;
    return (await records()).find((c) => c.name === idOrName && c.status === "active");
  };
  return {
    async add(name, options, by) {
      const live = await ctx.admin(by);
      checkName(name, "an MCP client's", "mcc_");
      if (typeof options?.profile !== "string" || !PROFILE_NAME.test(options.profile))
        throw new ToolError("config_invalid", "an MCP client needs a profile name");
      const principal = options.principal ?? `mcp:${name}`;
      const tenant = options.tenant ?? "default";
      if (typeof principal !== "string" || principal === "" || typeof tenant !== "string" || tenant === "") {
        throw new ToolError("config_invalid", "an MCP client's principal and tenant must be non-empty strings");
      }
      if (options.elicitation !== undefined && typeof options.elicitation !== "boolean")
        throw new ToolError("config_invalid", "elicitation must be true or false");
      if (await find(name)) throw new ToolError("conflict", `an MCP client named ${name} exists`);
      const token = newSecret("tgc_");
      const client: McpClient = Object.freeze({
        id: `mcc_${randomBytes(8).toString("hex")}`,
        name,
        profile: options.profile,
        principal,
        tenant,
        elicitation: options.elicitation === true,
        status: "active",
        createdAt: ctx.iso(),
        createdBy: live.id,
      });
      leases.set(client.id, ctx.redactor.hold(token));
      try {
        await journal.updateRecord("client", client.id, (current) => {
          if (current !== undefined) throw new ToolError("conflict", "an MCP client id collided");
          const { id, profile, elicitation } = client;
          return {
            value: { ...client, tokenHash: secretHash(token) },
            event: changeEvent(ctx, "client.added", live, { client: id, name, profile, principal, tenant, elicitation }),
            result: undefined,
          };
        });
      } catch (error) {
        leases.get(client.id)?.release();
        leases.delete(client.id);
        throw error;
      }
      return { client, token };
    },
    list: async () => (await records()).map(publicClient),
    async remove(idOrName, by) {
      const live = await ctx.admin(by);
      const found = await find(idOrName);
      if (!found) throw new ToolError("operator_unknown", "no MCP client by that id or name");
      const { result } = await journal.updateRecord("client", found.id, (current) => {
        const now = current as ClientRecord | undefined;
        if (!now || now.status !== "active") throw new ToolError("operator_unknown", `MCP client ${found.id} is not active`);
        const next: ClientRecord = { ...now, status: "removed" };
        return { value: next, event: changeEvent(ctx, "client.removed", live, { client: now.id, name: now.name }), result: publicClient(next) };
      });
      leases.get(found.id)?.release();
      leases.delete(found.id);
      return result;
    },
    async authenticate(bearer) {
      if (!looksLikeSecret(bearer, "tgc_")) return undefined;
      const hash = secretHash(bearer);
      // Every active client is compared (in constant time each), so the time taken says nothing of which matched.
      let match: ClientRecord | undefined;
      for (const client of await records()) if (sameHash(client.tokenHash, hash) && client.status === "active") match = client;
      return match && publicClient(match);
    },
    approver(client) {
      if (!client || typeof client !== "object" || client.status !== "active" || client.elicitation !== true || typeof client.id !== "string") {
        throw new ToolError("approver_forbidden", "in-band approval is off for this MCP client (an operator enables it with elicitation)");
      }
      // Stands for the client's record, re-read at every decision: a removed client or one with elicitation off is refused then.
      return mint({ kind: "client", id: `mcp:${client.id}`, name: client.name, role: "approver", via: "elicitation" }, { kind: "client", clientId: client.id });
    },
  };
}
