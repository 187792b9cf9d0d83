import { randomBytes } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { DEFAULT_LOOPBACK_REDIRECTS, loopbackKey, verifierMatches } from "../oauth-consent.js";
import { sendJson } from "./http.js";

/** An OAuth client registered with the emulator. */
export interface OAuthClientCredentials {
  readonly clientId: string;
  readonly clientSecret: string;
}

export interface AuthorizeOptions {
  /** The scopes the simulated user grants. */
  readonly scopes: readonly string[];
  /** Default: the emulator's default client. */
  readonly clientId?: string;
  /** When set, the token exchange must present the same `redirect_uri`. */
  readonly redirectUri?: string;
  /** Lifetime of access tokens issued under this grant; default 3600 seconds. */
  readonly accessTokenTtlSeconds?: number;
  /** PKCE (RFC 7636, S256 only): the exchange must present the verifier whose SHA-256 this is. */
  readonly codeChallenge?: string;
}

interface Grant {
  readonly id: number;
  readonly clientId: string;
  readonly scopes: readonly string[];
  readonly ttlSeconds: number;
  readonly refreshToken: string;
  revoked: boolean;
}

interface AccessToken {
  readonly grant: Grant;
  readonly expiresAt: number;
}

interface PendingCode {
  readonly grant: Omit<Grant, "refreshToken" | "revoked" | "id">;
  readonly redirectUri: string | undefined;
  readonly codeChallenge: string | undefined;
  readonly expiresAt: number;
}

/** What the API side learns about a bearer token. */
export type TokenVerdict = { readonly ok: true; readonly scopes: readonly string[] } | { readonly ok: false; readonly why: "unknown" | "expired" | "revoked" };

/** Counters tests read. */
export interface OAuthStats {
  /** Successful authorization-code exchanges. */
  readonly codeExchanges: number;
  /** Successful refresh-token grants. */
  readonly refreshes: number;
  /** Refused token requests (any grant type). */
  readonly refused: number;
  readonly revocations: number;
}

/** How long a code may wait for its exchange (RFC 6749 §4.1.2: short; ten minutes at most). */
export const CODE_TTL_MS = 60_000;

/** @internal the emulator's OAuth authorization server. */
export class OAuthServer {
  private readonly clients = new Map<string, string>();
  /** Loopback redirect URIs registered per client, port left out (RFC 8252 §7.3: any port matches). */
  private readonly redirects = new Map<string, readonly string[]>();
  private readonly codes = new Map<string, PendingCode>();
  private readonly refreshTokens = new Map<string, Grant>();
  private readonly accessTokens = new Map<string, AccessToken>();
  private nextGrant = 1;
  private counters = { codeExchanges: 0, refreshes: 0, refused: 0, revocations: 0 };
  readonly defaultClient: OAuthClientCredentials;

  constructor(private readonly clock: () => number) {
    this.defaultClient = this.registerClient();
  }

  get stats(): OAuthStats {
    return { ...this.counters };
  }

  /** `redirectUris`: loopback URIs (any port matches); default `http://127.0.0.1/callback` and `http://[::1]/callback`. */
  registerClient(credentials?: Partial<OAuthClientCredentials> & { readonly redirectUris?: readonly string[] }): OAuthClientCredentials {
    const clientId = credentials?.clientId ?? `${randomBytes(6).toString("hex")}.apps.emulator.test`;
    const clientSecret = credentials?.clientSecret ?? `emu-secret-${randomBytes(18).toString("base64url")}`;
    this.clients.set(clientId, clientSecret);
    this.redirects.set(clientId, (credentials?.redirectUris ?? DEFAULT_LOOPBACK_REDIRECTS).map(withoutPort));
    return { clientId, clientSecret };
  }

  hasClient(clientId: string): boolean {
    return this.clients.has(clientId);
  }

  /** True when `uri` is a loopback http URI registered for the client, on any port. */
  redirectAllowed(clientId: string, uri: string): boolean {
    const key = loopbackKey(uri);
    return key !== undefined && (this.redirects.get(clientId) ?? []).includes(key);
  }

  /** The consent screen: the user grants `scopes`; returns a one-time authorization code. */
  authorize(options: AuthorizeOptions): { readonly code: string } {
    const clientId = options.clientId ?? this.defaultClient.clientId;
    if (!this.clients.has(clientId)) throw new Error(`unknown OAuth client ${clientId}`);
    const code = `4/emu-${randomBytes(24).toString("base64url")}`;
    this.codes.set(code, {
      grant: { clientId, scopes: [...new Set(options.scopes)], ttlSeconds: options.accessTokenTtlSeconds ?? 3600 },
      redirectUri: options.redirectUri,
      codeChallenge: options.codeChallenge,
      expiresAt: this.clock() + CODE_TTL_MS,
    });
    return { code };
  }

  verify(token: string): TokenVerdict {
    const entry = this.accessTokens.get(token);
    if (!entry) return { ok: false, why: "unknown" };
    if (entry.grant.revoked) return { ok: false, why: "revoked" };
    if (entry.expiresAt <= this.clock()) return { ok: false, why: "expired" };
    return { ok: true, scopes: entry.grant.scopes };
  }

  /** Expire every access token now (refresh tokens stay valid). */
  expireAccessTokens(): void {
    for (const [token, entry] of this.accessTokens) this.accessTokens.set(token, { ...entry, expiresAt: Math.min(entry.expiresAt, this.clock()) });
  }

  /** Revoke a grant by any of its tokens; false when the token is unknown. */
  revoke(token: string): boolean {
    const grant = this.refreshTokens.get(token) ?? this.accessTokens.get(token)?.grant;
    if (!grant || grant.revoked) return false;
    grant.revoked = true;
    this.counters.revocations++;
    return true;
  }

  /** POST /token: authorization_code and refresh_token grants (RFC 6749 §4.1.3, §6). */
  handleToken(req: IncomingMessage, res: ServerResponse, body: Buffer): void {
    const form = new URLSearchParams(body.toString("utf8"));
    const refuse = (status: number, error: string, description: string): void => {
      this.counters.refused++;
      sendJson(res, status, { error, error_description: description }, { "cache-control": "no-store" });
    };
    const client = this.clientOf(req, form);
    if (!client) return refuse(401, "invalid_client", "The OAuth client was not found.");
    const grantType = form.get("grant_type");
    if (grantType === "authorization_code") {
      const code = form.get("code") ?? "";
      const pending = this.codes.get(code);
      this.codes.delete(code); // one use, even when refused
      if (!pending || pending.expiresAt <= this.clock() || pending.grant.clientId !== client) return refuse(400, "invalid_grant", "Malformed auth code.");
      if (pending.redirectUri !== undefined && form.get("redirect_uri") !== pending.redirectUri) return refuse(400, "redirect_uri_mismatch", "Bad Request");
      if (pending.codeChallenge !== undefined) {
        if (!verifierMatches(form.get("code_verifier"), pending.codeChallenge)) return refuse(400, "invalid_grant", "Invalid code verifier.");
      }
      const grant: Grant = { ...pending.grant, id: this.nextGrant++, refreshToken: `1//emu-${randomBytes(32).toString("base64url")}`, revoked: false };
      this.refreshTokens.set(grant.refreshToken, grant);
      const access = this.issue(grant);
      this.counters.codeExchanges++;
      return sendJson(res, 200, { ...access, refresh_token: grant.refreshToken }, { "cache-control": "no-store" });
    }
    if (grantType === "refresh_token") {
      const grant = this.refreshTokens.get(form.get("refresh_token") ?? "");
      if (!grant || grant.revoked) return refuse(400, "invalid_grant", "Token has been expired or revoked.");
      if (grant.clientId !== client) return refuse(401, "unauthorized_client", "Unauthorized");
      this.counters.refreshes++;
      // Google does not return a new refresh token on refresh.
      return sendJson(res, 200, this.issue(grant), { "cache-control": "no-store" });
    }
    return refuse(400, "unsupported_grant_type", "Invalid grant_type");
  }

  /** POST /revoke?token=… (or token in the form body). */
  handleRevoke(url: URL, res: ServerResponse, body: Buffer): void {
    const token = url.searchParams.get("token") ?? new URLSearchParams(body.toString("utf8")).get("token") ?? "";
    if (!this.revoke(token)) return sendJson(res, 400, { error: "invalid_token", error_description: "Token expired or revoked" });
    sendJson(res, 200, {});
  }

  private issue(grant: Grant): Record<string, unknown> {
    const token = `ya29.emu-${randomBytes(32).toString("base64url")}`;
    this.accessTokens.set(token, { grant, expiresAt: this.clock() + grant.ttlSeconds * 1000 });
    return { access_token: token, expires_in: grant.ttlSeconds, scope: grant.scopes.join(" "), token_type: "Bearer" };
  }

  /** client_secret_basic or client_secret_post; the client id when the secret matches. */
  private clientOf(req: IncomingMessage, form: URLSearchParams): string | undefined {
    let id = form.get("client_id") ?? undefined;
    let secret = form.get("client_secret") ?? undefined;
    const basic = /^Basic\s+(.+)$/i.exec(req.headers.authorization ?? "");
    if (basic?.[1]) {
      const decoded = Buffer.from(basic[1], "base64").toString("utf8");
      const colon = decoded.indexOf(":");
      if (colon > 0) {
        id = decodeURIComponent(decoded.slice(0, colon));
        secret = decodeURIComponent(decoded.slice(colon + 1));
      }
    }
    if (id === undefined || secret === undefined) return undefined;
    return this.clients.get(id) === secret ? id : undefined;
  }
}

function withoutPort(uri: string): string {
  const key = loopbackKey(uri);
  if (key === undefined) throw new Error(`redirect URI ${uri} is not a loopback http URI (http://127.0.0.1 or http://[::1])`);
  return key;
}
