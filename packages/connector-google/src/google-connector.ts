import { ToolError } from "@toolgate/core";
import { TokenRefreshError, type AccessGrant, type ConnectorProvider, type RefreshRequest, type RefreshedTokens } from "@toolgate/core/connectors";
import { OAuth2Client } from "google-auth-library";

/** Google's token endpoint; tests and emulators point `tokenUrl` at a server on 127.0.0.1. */
export const GOOGLE_TOKEN_URL = "https://oauth2.googleapis.com/token";

/** The manifest provider name Google families declare in `connector.provider`. */
export const GOOGLE_PROVIDER = "google";

export interface GoogleConnectorOptions {
  /** The OAuth client id the connections were authorized for. */
  readonly clientId: string;
  /** The OAuth client secret; registered with every call's redactor. */
  readonly clientSecret: string;
  /** The token endpoint; default Google's. Point it at a local server in tests. */
  readonly tokenUrl?: string;
  /** The provider name manifests use; default `google`. */
  readonly provider?: string;
}

/**
 * The Google adapter for `createConnectorRuntime({ providers })`.
 *
 * - `refresh` runs google-auth-library's own refresh_token grant against `tokenUrl`, and reports
 *   failures as `TokenRefreshError` from the HTTP status and the OAuth error code only: a revoked
 *   grant (`invalid_grant`) is `invalid_grant`, a refused client `invalid_client`, other 4xx
 *   `rejected`, 5xx and network failures `unavailable`. The response body — which may echo a
 *   secret — never reaches a message, and the library's error (which carries the request's
 *   secrets) is not kept.
 * - `createClient` returns an `OAuth2Client` holding only the access token: no refresh token and
 *   no client secret, so it cannot refresh behind the runtime's back. Pass it as `auth` to
 *   `@googleapis/gmail` or `@googleapis/calendar`.
 *
 * ```ts
 * const runtime = createConnectorRuntime({
 *   vault: createFileVault({ path: "/var/lib/app/tokens.vault", key: { env: "TOOLGATE_VAULT_KEY" } }),
 *   providers: [createGoogleConnector({ clientId, clientSecret })],
 * });
 * ```
 */
export function createGoogleConnector(options: GoogleConnectorOptions): ConnectorProvider<OAuth2Client> {
  if (!options || typeof options.clientId !== "string" || options.clientId === "")
    throw new ToolError("config_invalid", "createGoogleConnector needs a clientId");
  if (typeof options.clientSecret !== "string" || options.clientSecret === "")
    throw new ToolError("config_invalid", "createGoogleConnector needs a clientSecret");
  const tokenUrl = options.tokenUrl ?? GOOGLE_TOKEN_URL;
  let parsed: URL;
  try {
    parsed = new URL(tokenUrl);
  } catch {
    throw new ToolError("config_invalid", "createGoogleConnector's tokenUrl is not a URL");
  }
  if (parsed.protocol !== "https:" && !(parsed.protocol === "http:" && isLoopback(parsed.hostname))) {
    throw new ToolError("config_invalid", "createGoogleConnector's tokenUrl must be https (or http on a loopback address)");
  }
  const provider = options.provider ?? GOOGLE_PROVIDER;

  return Object.freeze({
    provider,
    secrets: Object.freeze([options.clientSecret]),

    async refresh(request: RefreshRequest): Promise<RefreshedTokens> {
      const client = new RefreshingClient({ clientId: options.clientId, clientSecret: options.clientSecret, endpoints: { oauth2TokenUrl: tokenUrl } });
      let answer: Awaited<ReturnType<RefreshingClient["refreshWith"]>>;
      try {
        answer = await client.refreshWith(request.refreshToken);
      } catch (error) {
        throw classify(error);
      }
      const tokens = answer.tokens;
      const now = Date.now();
      if (typeof tokens.access_token !== "string" || tokens.access_token === "") {
        throw new TokenRefreshError("unavailable", "the token endpoint answered without an access token", { status: answer.res?.status ?? 200 });
      }
      return {
        accessToken: tokens.access_token,
        ...(typeof tokens.refresh_token === "string" && tokens.refresh_token !== "" ? { refreshToken: tokens.refresh_token } : {}),
        // The library turned expires_in into an absolute time on the wall clock; hand the runtime a
        // lifetime so it can apply its own clock.
        ...(typeof tokens.expiry_date === "number" ? { expiresInSeconds: Math.max(0, Math.floor((tokens.expiry_date - now) / 1000)) } : {}),
        ...(typeof tokens.scope === "string" && tokens.scope.trim() !== "" ? { scopes: tokens.scope.trim().split(/\s+/) } : {}),
        ...(typeof tokens.token_type === "string" && tokens.token_type !== "" ? { tokenType: tokens.token_type } : {}),
      };
    },

    createClient(grant: AccessGrant): OAuth2Client {
      const client = new OAuth2Client();
      // No expiry_date: the runtime already judged freshness on its own clock, and a client with an
      // expiry but no refresh token would try (and fail) to refresh early.
      client.setCredentials({ access_token: grant.accessToken, token_type: grant.tokenType, scope: grant.scopes.join(" ") });
      return client;
    },
  });
}

/** Exposes the library's refresh_token grant (a protected method) without its per-client cache. */
class RefreshingClient extends OAuth2Client {
  refreshWith(refreshToken: string) {
    return this.refreshToken(refreshToken);
  }
}

function classify(error: unknown): TokenRefreshError {
  // The library's errors carry the HTTP response; read its status and OAuth error code only.
  const response = error instanceof Error && "response" in error ? (error as { response?: { status?: unknown; data?: unknown } }).response : undefined;
  if (response) {
    const status = typeof response.status === "number" ? response.status : undefined;
    const data: unknown = response.data;
    const code =
      data !== null && typeof data === "object" && typeof (data as { error?: unknown }).error === "string" ? (data as { error: string }).error : undefined;
    const oauthError = code !== undefined && /^[a-z_]{1,64}$/.test(code) ? code : undefined;
    const said = `the token endpoint answered ${status ?? "without a status"}${oauthError ? ` (${oauthError})` : ""}`;
    const facts = { ...(status === undefined ? {} : { status }), ...(oauthError === undefined ? {} : { oauthError }) };
    if (oauthError === "invalid_grant") return new TokenRefreshError("invalid_grant", said, facts);
    if (oauthError === "invalid_client" || oauthError === "unauthorized_client") return new TokenRefreshError("invalid_client", said, facts);
    if (status !== undefined && status >= 400 && status < 500 && status !== 408 && status !== 429) return new TokenRefreshError("rejected", said, facts);
    if (status !== undefined) return new TokenRefreshError("unavailable", said, facts);
  }
  return new TokenRefreshError("unavailable", "the token endpoint could not be reached");
}

function isLoopback(hostname: string): boolean {
  return hostname === "127.0.0.1" || hostname === "[::1]" || hostname === "localhost";
}
