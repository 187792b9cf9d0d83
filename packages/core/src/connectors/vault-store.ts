import { z } from "zod";
import { ToolError } from "../errors.js";
import { connectionSchema, tokenSetSchema, type Connection, type ConnectionInfo, type TokenSet, type TokenVault } from "./types.js";

/** One stored connection: its binding, its tokens and when it was last written. */
export const vaultEntrySchema = z
  .object({
    connection: connectionSchema,
    tokens: tokenSetSchema,
    updatedAt: z.number().int().nonnegative(),
  })
  .strict();

export const vaultDataSchema = z.object({ connections: z.record(z.string(), vaultEntrySchema) }).strict();

export type VaultEntry = z.infer<typeof vaultEntrySchema>;
export type VaultData = z.infer<typeof vaultDataSchema>;

/** Where a vault keeps its data: the memory vault keeps a copy, the file vault an encrypted file. */
export interface VaultStorage {
  readonly location: string;
  load(): Promise<VaultData>;
  save(data: VaultData): Promise<void>;
}

/** Issue paths and messages only: zod's messages for these schemas never echo a value. */
export function describeIssues(error: z.ZodError): string {
  return error.issues
    .slice(0, 5)
    .map((i) => `${i.path.map(String).join(".") || "(root)"}: ${i.message}`)
    .join("; ");
}

/** The one TokenVault implementation over any storage: validation, defaults, serialized writes. */
export function vaultOver(storage: VaultStorage, clock: () => number): TokenVault {
  let writes: Promise<unknown> = Promise.resolve();
  const serialized = <T>(work: () => Promise<T>): Promise<T> => {
    const next = writes.then(work, work);
    writes = next.catch(() => undefined);
    return next;
  };

  const parseConnection = (connection: unknown): Connection => {
    const parsed = connectionSchema.safeParse(connection);
    if (!parsed.success) throw new ToolError("config_invalid", `invalid connection for vault ${storage.location}: ${describeIssues(parsed.error)}`);
    return parsed.data;
  };
  const parseTokens = (id: string, tokens: unknown): TokenSet => {
    const parsed = tokenSetSchema.safeParse(tokens);
    if (!parsed.success) throw new ToolError("config_invalid", `invalid token set for connection ${id}: ${describeIssues(parsed.error)}`);
    if (parsed.data.accessToken === "" && parsed.data.refreshToken === undefined) {
      throw new ToolError("config_invalid", `connection ${id} needs an access token or a refresh token`);
    }
    return parsed.data;
  };

  return {
    location: storage.location,

    async list() {
      const data = await storage.load();
      return Object.values(data.connections)
        .map(infoOf)
        .sort((a, b) => a.id.localeCompare(b.id));
    },

    async readTokens(connectionId) {
      const data = await storage.load();
      const entry = Object.hasOwn(data.connections, connectionId) ? data.connections[connectionId] : undefined;
      return entry === undefined ? undefined : copyTokens(entry.tokens);
    },

    put(connection, tokens) {
      const checked = parseConnection(connection);
      const checkedTokens = tokens === undefined ? undefined : parseTokens(checked.id, tokens);
      return serialized(async () => {
        const data = await storage.load();
        const existing = Object.hasOwn(data.connections, checked.id) ? data.connections[checked.id] : undefined;
        const nextTokens = checkedTokens ?? existing?.tokens;
        if (nextTokens === undefined)
          throw new ToolError("connector_unavailable", `no connection ${checked.id} in vault ${storage.location} to update; give its tokens`);
        if (checked.isDefault === true) {
          const other = Object.values(data.connections).find(
            (e) => e.connection.provider === checked.provider && e.connection.isDefault === true && e.connection.id !== checked.id,
          );
          if (other) {
            throw new ToolError(
              "config_invalid",
              `provider ${checked.provider} already has a default connection (${other.connection.id}); make that one non-default first`,
            );
          }
        }
        data.connections[checked.id] = { connection: checked, tokens: copyTokens(nextTokens), updatedAt: clock() };
        await storage.save(data);
      });
    },

    writeTokens(connectionId, tokens) {
      const checked = parseTokens(connectionId, tokens);
      return serialized(async () => {
        const data = await storage.load();
        const existing = Object.hasOwn(data.connections, connectionId) ? data.connections[connectionId] : undefined;
        if (!existing) throw new ToolError("connector_unavailable", `no connection ${connectionId} in vault ${storage.location}`);
        data.connections[connectionId] = { ...existing, tokens: copyTokens(checked), updatedAt: clock() };
        await storage.save(data);
      });
    },

    remove(connectionId) {
      return serialized(async () => {
        const data = await storage.load();
        if (!Object.hasOwn(data.connections, connectionId)) return false;
        delete data.connections[connectionId];
        await storage.save(data);
        return true;
      });
    },
  };
}

function infoOf(entry: VaultEntry): ConnectionInfo {
  const { connection, tokens } = entry;
  return Object.freeze({
    id: connection.id,
    provider: connection.provider,
    ...(connection.tenant === undefined ? {} : { tenant: connection.tenant }),
    ...(connection.principal === undefined ? {} : { principal: connection.principal }),
    isDefault: connection.isDefault === true,
    scopes: Object.freeze([...tokens.scopes]),
    tokenType: tokens.tokenType,
    expiresAt: tokens.accessToken === "" ? 0 : tokens.expiresAt,
    hasAccessToken: tokens.accessToken !== "",
    refreshable: tokens.refreshToken !== undefined,
    updatedAt: entry.updatedAt,
  });
}

function copyTokens(tokens: TokenSet): TokenSet {
  return {
    accessToken: tokens.accessToken,
    ...(tokens.refreshToken === undefined ? {} : { refreshToken: tokens.refreshToken }),
    expiresAt: tokens.expiresAt,
    scopes: [...tokens.scopes],
    tokenType: tokens.tokenType,
  };
}
