import { readFile } from "node:fs/promises";
import { resolve } from "node:path";
import { z } from "zod";
import { ToolError } from "../errors.js";
import { DEFAULT_REFRESH_LEEWAY_MS } from "./runtime.js";
import { connectionSchema, type Connection, type ConnectionInfo, type TokenSet, type TokenVault } from "./types.js";
import { describeIssues } from "./vault-store.js";

/**
 * A connection's state as an operator sees it — never a token.
 *
 * `state` is `ready` (the access token is good beyond the leeway), `will_refresh` (it expires
 * within the leeway or has expired, and a refresh token is stored: the next call refreshes it) or
 * `reauth_required` (it has expired and cannot be refreshed: a human must authorize again).
 */
export interface ConnectionStatus {
  readonly id: string;
  readonly provider: string;
  readonly tenant?: string;
  readonly principal?: string;
  readonly isDefault: boolean;
  readonly scopes: readonly string[];
  readonly tokenType: string;
  /** ISO 8601; `null` when there is no access token yet. */
  readonly expiresAt: string | null;
  readonly expired: boolean;
  readonly refreshable: boolean;
  readonly state: "ready" | "will_refresh" | "reauth_required";
  /** ISO 8601: when the vault entry was last written. */
  readonly updatedAt: string;
}

export interface StatusOptions {
  /** Milliseconds since the epoch; default `Date.now`. */
  readonly clock?: () => number;
  /** The runtime's leeway; default 60 000. */
  readonly leewayMs?: number;
}

export interface AddConnectionFromFileOptions extends StatusOptions {
  readonly vault: TokenVault;
  /** A token JSON file (see `parseTokenJson` for the shapes accepted). */
  readonly file: string;
  /** The connection's id, provider and whom it serves. */
  readonly connection: Connection;
  /** The granted scopes, when the file does not say (or to narrow what it says). */
  readonly scopes?: readonly string[];
}

const tokenFileSchema = z
  .object({
    accessToken: z.string().optional(),
    access_token: z.string().optional(),
    refreshToken: z.string().optional(),
    refresh_token: z.string().optional(),
    expiresAt: z.union([z.number(), z.string()]).optional(),
    expires_at: z.union([z.number(), z.string()]).optional(),
    expiry_date: z.number().optional(),
    expires_in: z.union([z.number(), z.string().regex(/^\d+$/)]).optional(),
    scopes: z.array(z.string().min(1)).optional(),
    scope: z.string().optional(),
    tokenType: z.string().min(1).optional(),
    token_type: z.string().min(1).optional(),
  })
  .loose();

/**
 * Turn the text of a token JSON file into a token set. Accepted shapes:
 * - Toolgate's own: `{ accessToken, refreshToken?, expiresAt, scopes, tokenType }`
 *   (`expiresAt` in milliseconds since the epoch or ISO 8601);
 * - an OAuth token response: `{ access_token, refresh_token?, expires_in, scope, token_type }`
 *   (`expires_in` counts from `now`);
 * - a Google-style credentials file: `{ access_token?, refresh_token, expiry_date?, scope? }`.
 *
 * Other fields (a client id, a client secret) are ignored, never stored. At least one of an access
 * token or a refresh token is required; a file without an expiry is treated as already expired.
 * Errors name the fields that are wrong, never their values.
 */
export function parseTokenJson(text: string, options: { readonly now: number; readonly scopes?: readonly string[]; readonly source?: string }): TokenSet {
  const where = options.source ?? "token JSON";
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    throw new ToolError("config_invalid", `${where} is not JSON`);
  }
  const parsed = tokenFileSchema.safeParse(raw);
  if (!parsed.success) throw new ToolError("config_invalid", `${where} is not a token file: ${describeIssues(parsed.error)}`);
  const f = parsed.data;
  const accessToken = f.accessToken ?? f.access_token ?? "";
  const refreshToken = f.refreshToken ?? f.refresh_token;
  if (accessToken === "" && !refreshToken) throw new ToolError("config_invalid", `${where} has neither an access token nor a refresh token`);

  const expiresAt = expiryOf(f, options.now, where);
  const fileScopes = f.scopes ?? (f.scope === undefined ? undefined : f.scope.split(/[\s,]+/).filter((s) => s !== ""));
  const scopes = options.scopes ?? fileScopes;
  if (!scopes || scopes.length === 0) throw new ToolError("config_invalid", `${where} does not say which scopes were granted; give them as scopes`);
  if (options.scopes && fileScopes) {
    const extra = options.scopes.filter((s) => !fileScopes.includes(s));
    if (extra.length > 0) throw new ToolError("config_invalid", `${where} was not granted ${extra.join(", ")}; scopes may only narrow what the file says`);
  }
  return {
    accessToken,
    ...(refreshToken ? { refreshToken } : {}),
    expiresAt: accessToken === "" ? 0 : expiresAt,
    scopes: [...new Set(scopes)],
    tokenType: f.tokenType ?? f.token_type ?? "Bearer",
  };
}

/** The last instant a Date can hold: an expiry past it could be stored, but no status could show it. */
export const LAST_DATE_MS = 8_640_000_000_000_000;

function expiryOf(f: z.infer<typeof tokenFileSchema>, now: number, where: string): number {
  const ms = expiryMs(f, now);
  if (!Number.isFinite(ms) || ms < 0 || ms > LAST_DATE_MS) throw new ToolError("config_invalid", `${where} has an unreadable expiry`);
  return Math.floor(ms);
}

function expiryMs(f: z.infer<typeof tokenFileSchema>, now: number): number {
  const stamp = f.expiresAt ?? f.expires_at ?? f.expiry_date;
  if (stamp !== undefined) return typeof stamp === "number" ? (stamp < 1e11 ? stamp * 1000 : stamp) : Date.parse(stamp);
  if (f.expires_in !== undefined) return now + Number(f.expires_in) * 1000;
  return 0;
}

/**
 * Add (or replace) a connection from a token JSON file. The file's secrets go straight into the
 * vault; the answer is the connection's status, which holds none.
 *
 * ```ts
 * const vault = createFileVault({ path: "/var/lib/app/tokens.vault", key: { file: "/etc/app/vault.key" } });
 * const status = await addConnectionFromFile({
 *   vault,
 *   file: "./google-token.json",
 *   connection: { id: "google-acme", provider: "google", tenant: "acme", isDefault: true },
 * });
 * console.log(status.state, status.scopes); // "ready" [...]
 * ```
 */
export async function addConnectionFromFile(options: AddConnectionFromFileOptions): Promise<ConnectionStatus> {
  const clock = options.clock ?? Date.now;
  const file = resolve(options.file);
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (cause) {
    throw new ToolError("config_invalid", `token file ${file} cannot be read (${(cause as NodeJS.ErrnoException).code ?? "error"})`, { cause });
  }
  const tokens = parseTokenJson(text, { now: clock(), source: `token file ${file}`, ...(options.scopes ? { scopes: options.scopes } : {}) });
  return addConnection({ vault: options.vault, connection: options.connection, tokens, ...statusOptions(options) });
}

/** Add (or replace) a connection with a token set already in hand. Returns its status. */
export async function addConnection(
  options: { readonly vault: TokenVault; readonly connection: Connection; readonly tokens: TokenSet } & StatusOptions,
): Promise<ConnectionStatus> {
  await options.vault.put(options.connection, options.tokens);
  return connectionStatus(options.vault, options.connection.id, statusOptions(options));
}

/** Every connection's status, sorted by id. Reads no token. */
export async function listConnections(vault: TokenVault, options: StatusOptions = {}): Promise<readonly ConnectionStatus[]> {
  const now = (options.clock ?? Date.now)();
  return (await vault.list()).map((info) => statusOf(info, now, options.leewayMs ?? DEFAULT_REFRESH_LEEWAY_MS));
}

/** One connection's status (`connector_unavailable` when there is none). Reads no token. */
export async function connectionStatus(vault: TokenVault, connectionId: string, options: StatusOptions = {}): Promise<ConnectionStatus> {
  const found = (await listConnections(vault, options)).find((s) => s.id === connectionId);
  if (!found) throw new ToolError("connector_unavailable", `no connection ${connectionId} in vault ${vault.location}`);
  return found;
}

/** Remove a connection and its tokens; false when there was none. */
export function removeConnection(vault: TokenVault, connectionId: string): Promise<boolean> {
  return vault.remove(connectionId);
}

/** Make `connectionId` its provider's default, and the previous default an ordinary connection. */
export async function setDefaultConnection(vault: TokenVault, connectionId: string): Promise<void> {
  const all = await vault.list();
  const target = all.find((c) => c.id === connectionId);
  if (!target) throw new ToolError("connector_unavailable", `no connection ${connectionId} in vault ${vault.location}`);
  for (const other of all) {
    if (other.provider === target.provider && other.isDefault && other.id !== connectionId) await vault.put({ ...bindingOf(other), isDefault: false });
  }
  await vault.put({ ...bindingOf(target), isDefault: true });
}

function bindingOf(info: ConnectionInfo): Connection {
  return connectionSchema.parse({
    id: info.id,
    provider: info.provider,
    ...(info.tenant === undefined ? {} : { tenant: info.tenant }),
    ...(info.principal === undefined ? {} : { principal: info.principal }),
    isDefault: info.isDefault,
  });
}

function statusOptions(options: StatusOptions): StatusOptions {
  return { ...(options.clock ? { clock: options.clock } : {}), ...(options.leewayMs === undefined ? {} : { leewayMs: options.leewayMs }) };
}

function statusOf(info: ConnectionInfo, now: number, leewayMs: number): ConnectionStatus {
  const expired = !info.hasAccessToken || info.expiresAt <= now;
  const stale = !info.hasAccessToken || info.expiresAt - leewayMs <= now;
  return Object.freeze({
    id: info.id,
    provider: info.provider,
    ...(info.tenant === undefined ? {} : { tenant: info.tenant }),
    ...(info.principal === undefined ? {} : { principal: info.principal }),
    isDefault: info.isDefault,
    scopes: info.scopes,
    tokenType: info.tokenType,
    expiresAt: info.hasAccessToken ? new Date(info.expiresAt).toISOString() : null,
    expired,
    refreshable: info.refreshable,
    state: !stale ? "ready" : info.refreshable ? "will_refresh" : expired ? "reauth_required" : "ready",
    updatedAt: new Date(info.updatedAt).toISOString(),
  });
}
