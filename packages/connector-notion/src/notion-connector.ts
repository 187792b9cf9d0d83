import { Client, isHTTPResponseError } from "@notionhq/client";
import { ToolError } from "@toolgate/core";
import {
  LAST_DATE_MS,
  TokenRefreshError,
  type AccessGrant,
  type ConnectorProvider,
  type RefreshRequest,
  type RefreshedTokens,
  type TokenSet,
} from "@toolgate/core/connectors";

/** Notion's API; tests point `baseUrl` at `@toolgate/emulators` on 127.0.0.1 instead. */
export const NOTION_API_URL = "https://api.notion.com";

/** The provider name the Notion tools declare in `connector.provider`. */
export const NOTION_PROVIDER = "notion";

/**
 * Notion has no OAuth scopes: what a connection may do is its integration's capabilities. The
 * connector runtime treats them as the connection's granted scopes, so a tool that needs a
 * capability the connection lacks is refused (`scope_missing`) before any token is read.
 */
export const NOTION_CAPABILITIES = ["read_content", "update_content", "insert_content", "read_comments", "insert_comments"] as const;
export type NotionCapability = (typeof NOTION_CAPABILITIES)[number];

/** The `Notion-Version` the family speaks. */
export const NOTION_VERSION = "2025-09-03";

/** An integration token never expires; the vault stores this as its expiry: the last instant a Date can hold (status prints it as one). */
export const NEVER_EXPIRES = LAST_DATE_MS;

export interface NotionConnectorOptions {
  /** The API's origin; default Notion's. Must be https, or http on a loopback address. */
  readonly baseUrl?: string;
  /** A public integration's OAuth client id; needed only to refresh OAuth connections. */
  readonly clientId?: string;
  /** Its client secret; registered with every call's redactor. */
  readonly clientSecret?: string;
  /** Per-request timeout of the client, in milliseconds; default 30 000. */
  readonly timeoutMs?: number;
  /** The provider name manifests use; default `notion`. */
  readonly provider?: string;
}

/**
 * What a Notion tool receives from `ctx.connector.client<NotionAccess>()`: a way to build a
 * `@notionhq/client` `Client` bound to the call's signal, so that cancelling the call aborts the
 * request in flight. The client holds the access token and cannot refresh it.
 */
export interface NotionAccess {
  readonly connectionId: string;
  /** Capabilities the connection was granted. */
  readonly capabilities: readonly string[];
  client(signal: AbortSignal): Client;
}

/**
 * The Notion adapter for `createConnectorRuntime({ providers })`.
 *
 * - Integration tokens (`ntn_…`) never expire: store them with `notionIntegrationTokens()` and the
 *   runtime never refreshes them.
 * - OAuth connections come from Notion's token exchange (`exchangeNotionCode`); `refresh` runs the
 *   `refresh_token` grant through the client's own `oauth.token` and reports failures from the
 *   HTTP status and the OAuth error code only — never from the response body.
 * - `createClient` returns a `NotionAccess` whose clients have retries turned off: requests go
 *   through `callNotion`, which retries within the family's bounds and the call's signal.
 *
 * ```ts
 * const runtime = createConnectorRuntime({
 *   vault: createMemoryVault({
 *     connections: [{ connection: { id: "team-notion", provider: "notion" }, tokens: notionIntegrationTokens({ token, capabilities: ["read_content"] }) }],
 *   }),
 *   providers: [createNotionConnector()],
 * });
 * ```
 */
export function createNotionConnector(options: NotionConnectorOptions = {}): ConnectorProvider<NotionAccess> {
  const baseUrl = checkedBaseUrl(options.baseUrl ?? NOTION_API_URL, "createNotionConnector");
  const timeoutMs = options.timeoutMs ?? 30_000;
  if ((options.clientId === undefined) !== (options.clientSecret === undefined)) {
    throw new ToolError("config_invalid", "createNotionConnector needs both clientId and clientSecret, or neither");
  }
  return Object.freeze({
    provider: options.provider ?? NOTION_PROVIDER,
    secrets: Object.freeze(options.clientSecret ? [options.clientSecret] : []),

    async refresh(request: RefreshRequest): Promise<RefreshedTokens> {
      if (options.clientId === undefined || options.clientSecret === undefined) {
        throw new TokenRefreshError("invalid_client", "no OAuth client is configured to refresh Notion connections");
      }
      const client = new Client({ baseUrl, retry: false, timeoutMs, logger: () => undefined, fetch: boundFetch(request.signal) });
      try {
        const answer = await client.oauth.token({
          client_id: options.clientId,
          client_secret: options.clientSecret,
          grant_type: "refresh_token",
          refresh_token: request.refreshToken,
        });
        return tokensOf(answer);
      } catch (error) {
        throw classifyTokenError(error);
      }
    },

    createClient(grant: AccessGrant): NotionAccess {
      const token = grant.accessToken;
      return Object.freeze({
        connectionId: grant.connectionId,
        capabilities: grant.scopes,
        client: (signal: AbortSignal) =>
          new Client({ auth: token, baseUrl, notionVersion: NOTION_VERSION, retry: false, timeoutMs, logger: () => undefined, fetch: boundFetch(signal) }),
      });
    },
  });
}

/** The vault's token set for an internal integration's secret: it never expires. */
export function notionIntegrationTokens(options: { readonly token: string; readonly capabilities: readonly NotionCapability[] }): TokenSet {
  if (typeof options?.token !== "string" || options.token.length < 8)
    throw new ToolError("config_invalid", "notionIntegrationTokens needs the integration's token");
  return { accessToken: options.token, expiresAt: NEVER_EXPIRES, scopes: [...options.capabilities], tokenType: "Bearer" };
}

export interface ExchangeNotionCodeOptions {
  readonly code: string;
  readonly redirectUri?: string;
  readonly clientId: string;
  readonly clientSecret: string;
  /** What the integration was configured to do; Notion's token response does not say. */
  readonly capabilities: readonly NotionCapability[];
  readonly baseUrl?: string;
  readonly signal?: AbortSignal;
}

/**
 * Exchange an authorization code from Notion's consent screen for a token set to store in the
 * vault. Failures are `ToolError`s built from the status and OAuth error code only.
 */
export async function exchangeNotionCode(options: ExchangeNotionCodeOptions): Promise<TokenSet> {
  const baseUrl = checkedBaseUrl(options.baseUrl ?? NOTION_API_URL, "exchangeNotionCode");
  const client = new Client({ baseUrl, retry: false, logger: () => undefined, fetch: boundFetch(options.signal) });
  try {
    const answer = await client.oauth.token({
      client_id: options.clientId,
      client_secret: options.clientSecret,
      grant_type: "authorization_code",
      code: options.code,
      ...(options.redirectUri === undefined ? {} : { redirect_uri: options.redirectUri }),
    });
    return { ...tokensOf(answer), scopes: [...options.capabilities] };
  } catch (error) {
    const failure = classifyTokenError(error);
    throw new ToolError(
      failure.reason === "unavailable" ? "provider_unavailable" : "provider_rejected",
      `Notion refused the code exchange: ${failure.message}`,
      {
        retryable: failure.reason === "unavailable",
      },
    );
  }
}

/** The token set in an answer of Notion's token endpoint; Notion's OAuth tokens do not expire. */
function tokensOf(answer: { readonly access_token: string; readonly refresh_token?: string | null }): Omit<TokenSet, "scopes"> & RefreshedTokens {
  return {
    accessToken: answer.access_token,
    ...(answer.refresh_token ? { refreshToken: answer.refresh_token } : {}),
    expiresAt: NEVER_EXPIRES,
    tokenType: "Bearer",
  };
}

function classifyTokenError(error: unknown): TokenRefreshError {
  if (isHTTPResponseError(error)) {
    let oauthError: string | undefined;
    try {
      const parsed: unknown = JSON.parse(error.body);
      const code =
        parsed !== null && typeof parsed === "object"
          ? ((parsed as { error?: unknown; code?: unknown }).error ?? (parsed as { code?: unknown }).code)
          : undefined;
      oauthError = typeof code === "string" && /^[a-z_]{1,64}$/.test(code) ? code : undefined;
    } catch {
      oauthError = undefined;
    }
    const said = `the token endpoint answered ${error.status}${oauthError ? ` (${oauthError})` : ""}`;
    const facts = { status: error.status, ...(oauthError === undefined ? {} : { oauthError }) };
    if (oauthError === "invalid_grant") return new TokenRefreshError("invalid_grant", said, facts);
    if (oauthError === "invalid_client" || oauthError === "unauthorized_client" || error.status === 401)
      return new TokenRefreshError("invalid_client", said, facts);
    if (error.status >= 400 && error.status < 500 && error.status !== 408 && error.status !== 429) return new TokenRefreshError("rejected", said, facts);
    return new TokenRefreshError("unavailable", said, facts);
  }
  return new TokenRefreshError("unavailable", "the token endpoint could not be reached");
}

/** A fetch for the client that aborts with `signal`. */
function boundFetch(signal: AbortSignal | undefined) {
  return (url: string, init?: { body?: string | FormData; headers?: Record<string, string>; method?: string }) =>
    fetch(url, {
      ...(init?.method ? { method: init.method } : {}),
      ...(init?.headers ? { headers: init.headers } : {}),
      ...(init?.body === undefined ? {} : { body: init.body }),
      ...(signal ? { signal } : {}),
    });
}

function checkedBaseUrl(value: string, who: string): string {
  let parsed: URL;
  try {
    parsed = new URL(value);
  } catch {
    throw new ToolError("config_invalid", `${who}'s baseUrl is not a URL`);
  }
  const loopback = parsed.hostname === "127.0.0.1" || parsed.hostname === "[::1]" || parsed.hostname === "localhost";
  if (parsed.protocol !== "https:" && !(parsed.protocol === "http:" && loopback)) {
    throw new ToolError("config_invalid", `${who}'s baseUrl must be https (or http on a loopback address)`);
  }
  return parsed.origin;
}
