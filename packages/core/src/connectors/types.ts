import { z } from "zod";

/** Connection ids: short, printable, safe in file names, log lines and error messages. */
export const CONNECTION_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/** Provider names as manifests spell them in `connector.provider` (`google`, `notion`). */
export const PROVIDER_NAME_PATTERN = /^[a-z][a-z0-9_-]{0,63}$/;

/**
 * One connection's OAuth tokens, as the vault stores them.
 *
 * - `accessToken`: the bearer token; an empty string means "none yet" (a connection imported from
 *   a refresh token alone is refreshed on first use).
 * - `refreshToken`: absent when the grant cannot be renewed without a human.
 * - `expiresAt`: when `accessToken` stops working, in milliseconds since the epoch, on the
 *   runtime's clock.
 * - `scopes`: what the connection was granted. The runtime compares a manifest's
 *   `connector.scopes` with these before it reads any token.
 * - `tokenType`: usually `Bearer`.
 *
 * Every string here except `scopes` and `tokenType` is a secret: it is registered with the
 * redactor the moment the runtime reads it, and never appears in a status, a log event or an error.
 */
export const tokenSetSchema = z
  .object({
    accessToken: z.string(),
    refreshToken: z.string().min(1).optional(),
    expiresAt: z.number().int().nonnegative(),
    scopes: z.array(z.string().min(1)),
    tokenType: z.string().min(1),
  })
  .strict();

export type TokenSet = z.infer<typeof tokenSetSchema>;

/**
 * A connection: one account's grant at one provider, and whom it serves.
 *
 * An application may hold several connections per provider — one per tenant, one per principal,
 * or one shared. `tenant` and `principal` restrict whom a connection serves (absent means any);
 * they are never relaxed. When a call is served by several connections, the most specific wins:
 * tenant and principal › principal › tenant › neither. Among equally specific ones the provider's
 * default (`isDefault`, at most one per provider) wins; with no default the call is refused as
 * ambiguous (`connector_unavailable`) rather than guessed.
 */
export const connectionSchema = z
  .object({
    id: z.string().regex(CONNECTION_ID_PATTERN, "must be 1–128 letters, digits, '.', '_' or '-', starting with a letter or digit"),
    provider: z.string().regex(PROVIDER_NAME_PATTERN, "must be a lower-case provider name"),
    tenant: z.string().min(1).max(256).optional(),
    principal: z.string().min(1).max(256).optional(),
    isDefault: z.boolean().optional(),
  })
  .strict();

export type Connection = z.infer<typeof connectionSchema>;

/**
 * What the vault says about a connection without revealing a secret: its binding, its granted
 * scopes, when its access token expires and whether it can be refreshed. The runtime decides
 * which connection serves a call, and whether it has the scopes, from this alone.
 */
export interface ConnectionInfo {
  readonly id: string;
  readonly provider: string;
  readonly tenant?: string;
  readonly principal?: string;
  readonly isDefault: boolean;
  readonly scopes: readonly string[];
  readonly tokenType: string;
  /** Milliseconds since the epoch; 0 when the connection has no access token yet. */
  readonly expiresAt: number;
  readonly hasAccessToken: boolean;
  /** True when a refresh token is stored. */
  readonly refreshable: boolean;
  /** When the entry was last written, in milliseconds since the epoch (the vault's clock). */
  readonly updatedAt: number;
}

/**
 * Where token sets live. Two implementations ship in core: `createMemoryVault` (tests) and
 * `createFileVault` (AES-256-GCM at rest, atomic writes, mode 0600).
 *
 * The interface separates metadata (`list`) from secrets (`readTokens`) so that a refusal —
 * an unknown provider, no connection, a missing scope — happens without a token ever being read.
 * Every write is durable before the returned promise resolves.
 *
 * Failures are `ToolError`s: `config_invalid` for an unreadable, corrupted or wrongly keyed store
 * (naming it, never its contents), `connector_unavailable` for an unknown connection id.
 */
export interface TokenVault {
  /** Where the tokens live, for messages: `memory` or the vault file's path. Never a secret. */
  readonly location: string;
  /** Every connection, without token values. */
  list(): Promise<readonly ConnectionInfo[]>;
  /** The token set of one connection, or `undefined` when there is no such connection. */
  readTokens(connectionId: string): Promise<TokenSet | undefined>;
  /**
   * Add a connection or replace one with the same id. `tokens` may be left out only when the
   * connection exists (its binding is updated, its tokens kept). Refuses (`config_invalid`) a
   * second default for the same provider.
   */
  put(connection: Connection, tokens?: TokenSet): Promise<void>;
  /** Replace the token set of an existing connection (after a refresh). */
  writeTokens(connectionId: string, tokens: TokenSet): Promise<void>;
  /** Remove a connection; false when there was none. */
  remove(connectionId: string): Promise<boolean>;
}

/** What a provider adapter is asked to do when a connection's access token is (nearly) expired. */
export interface RefreshRequest {
  readonly connectionId: string;
  readonly refreshToken: string;
  /** The scopes the connection holds now; an adapter may ask for them again. */
  readonly scopes: readonly string[];
  /** Aborts when the runtime gives up on the refresh (its own deadline). Pass it on. */
  readonly signal: AbortSignal;
}

/**
 * A provider's answer to a refresh. Leave out what the provider left out: a missing
 * `refreshToken` keeps the stored one, missing `scopes` keep the granted scopes, a missing
 * `tokenType` keeps the stored type. Give `expiresInSeconds` (the OAuth `expires_in`) where the
 * provider said it; the runtime turns it into `expiresAt` on its own clock.
 */
export interface RefreshedTokens {
  readonly accessToken: string;
  readonly refreshToken?: string;
  readonly expiresInSeconds?: number;
  /** Milliseconds since the epoch, used only when `expiresInSeconds` is absent. */
  readonly expiresAt?: number;
  readonly scopes?: readonly string[];
  readonly tokenType?: string;
}

/** What a provider adapter gets to build the client a tool uses. */
export interface AccessGrant {
  readonly connectionId: string;
  readonly provider: string;
  readonly accessToken: string;
  readonly tokenType: string;
  /** The connection's granted scopes. */
  readonly scopes: readonly string[];
  /** Milliseconds since the epoch on the runtime's clock. */
  readonly expiresAt: number;
}

/**
 * A provider adapter: everything the token runtime needs to know about one provider, so that
 * core never learns provider specifics. `@toolgate/connector-google` is one.
 *
 * Adapters should use a well-kept OAuth library for the grant itself. They report a failed
 * refresh by throwing `TokenRefreshError` (a revoked grant is `invalid_grant`); anything else they
 * throw is reported as `provider_unavailable`. Messages must be built from status codes and OAuth
 * error codes only — never from a response body, which may echo a secret back.
 */
export interface ConnectorProvider<TClient = unknown> {
  /** The name manifests use in `connector.provider`. */
  readonly provider: string;
  /**
   * Secrets the adapter holds (a client secret). The runtime registers them with the redactor of
   * every call it opens, so an echo of them is redacted wherever it lands.
   */
  readonly secrets?: readonly string[];
  /** Exchange a refresh token for a new token set. */
  refresh(request: RefreshRequest): Promise<RefreshedTokens>;
  /**
   * Build the authorized client a tool receives through `ctx.connector.client()`. The client may
   * hold the access token; it must not be able to refresh on its own (the runtime owns refresh).
   */
  createClient(grant: AccessGrant): TClient | Promise<TClient>;
}

/** Why a refresh failed, as an adapter classifies it. */
export const TOKEN_REFRESH_FAILURES = {
  invalid_grant: "The grant was revoked, expired or is otherwise unusable: a human must authorize again.",
  invalid_client: "The provider refused the client credentials (client id or secret).",
  rejected: "The provider refused the refresh for another reason.",
  unavailable: "The provider did not answer, or failed (network, 5xx, malformed response).",
} as const;

export type TokenRefreshFailure = keyof typeof TOKEN_REFRESH_FAILURES;

/**
 * Thrown by a provider adapter when a refresh fails. `message` must not contain anything the
 * provider sent back; `status` and `oauthError` carry what an operator needs.
 */
export class TokenRefreshError extends Error {
  override readonly name = "TokenRefreshError";
  readonly reason: TokenRefreshFailure;
  readonly status: number | undefined;
  /** The OAuth `error` code, when it is a plain code (`invalid_grant`). */
  readonly oauthError: string | undefined;

  constructor(reason: TokenRefreshFailure, message: string, options: { status?: number; oauthError?: string; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.reason = reason;
    this.status = options.status;
    this.oauthError = options.oauthError !== undefined && /^[a-z_]{1,64}$/.test(options.oauthError) ? options.oauthError : undefined;
  }
}

/**
 * An event the runtime reports for operators' logs. Never carries a token or a provider's
 * response body; `message` is redacted.
 */
export interface ConnectorLogEvent {
  readonly type:
    | "connector.opened"
    | "connector.refresh_started"
    | "connector.refreshed"
    | "connector.refresh_failed"
    | "connector.scope_missing"
    | "connector.reauth_required";
  /** Milliseconds since the epoch on the runtime's clock. */
  readonly at: number;
  readonly provider: string;
  readonly connectionId?: string;
  readonly toolId?: string;
  readonly code?: string;
  readonly message?: string;
}
