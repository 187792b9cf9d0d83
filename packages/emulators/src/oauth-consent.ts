/**
 * The consent screen both emulators serve at their authorization endpoint: the authorization-code
 * flow (RFC 6749 §4.1) with PKCE (RFC 7636, S256 only) to a loopback redirect URI (RFC 8252 §7.3).
 * `GET` checks the request and answers a small HTML page listing the scopes, each ticked, with
 * Allow and Deny; the page's `POST` redirects back with a code (for the scopes still ticked) or
 * `error=access_denied`. A client or redirect URI that is not registered gets an error page, never
 * a redirect; later errors are redirected, with the state.
 */
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import type { ServerResponse } from "node:http";

/** One request the user is asked to consent to. */
export interface ConsentRequest {
  readonly clientId: string;
  readonly redirectUri: string;
  readonly state: string | undefined;
  readonly scopes: readonly string[];
  readonly codeChallenge: string;
}

export interface ConsentOptions {
  /** Who asks, on the page: "Google", "Notion". */
  readonly service: string;
  /** The endpoint's path; the page posts back to it. */
  readonly path: string;
  readonly clock: () => number;
  hasClient(clientId: string): boolean;
  redirectAllowed(clientId: string, redirectUri: string): boolean;
  /** The scopes asked for; a string is an error to redirect with (`invalid_scope`). */
  scopesOf(params: URLSearchParams, clientId: string): readonly string[] | string;
  /** Whether the user may untick scopes (grant fewer than asked). */
  readonly narrowable: boolean;
  /** Issue a one-time code bound to the request for the scopes granted. */
  issue(request: ConsentRequest, granted: readonly string[]): string;
  /** Extra parameters of the success redirect (Google adds `scope`). */
  redirectExtras?(granted: readonly string[]): Record<string, string>;
}

/** How long the consent page stays answerable. */
const PAGE_TTL_MS = 10 * 60_000;
/** An S256 challenge: base64url of 32 bytes, no padding. */
const CHALLENGE = /^[A-Za-z0-9_-]{43}$/;

/** The authorization endpoint: answers one request, returns the HTTP status it sent. */
export function createConsentEndpoint(options: ConsentOptions): (method: string, url: URL, body: Buffer, res: ServerResponse) => number {
  const pending = new Map<string, ConsentRequest & { readonly expiresAt: number }>();
  const page = (res: ServerResponse, status: number, title: string, text: string, form = ""): number => {
    const html = `<!doctype html><html><head><meta charset="utf-8"><title>${esc(title)}</title></head><body><h1>${esc(title)}</h1><p>${esc(text)}</p>${form}</body></html>`;
    res.writeHead(status, {
      "content-type": "text/html; charset=utf-8",
      "cache-control": "no-store",
      "x-frame-options": "DENY",
      "content-security-policy": "default-src 'none'; frame-ancestors 'none'",
      "content-length": Buffer.byteLength(html),
    });
    res.end(html);
    return status;
  };
  const redirect = (res: ServerResponse, request: Pick<ConsentRequest, "redirectUri" | "state">, params: Record<string, string>): number => {
    const target = new URL(request.redirectUri);
    for (const [k, v] of Object.entries(params)) target.searchParams.set(k, v);
    if (request.state !== undefined) target.searchParams.set("state", request.state);
    res.writeHead(302, { location: target.href, "cache-control": "no-store", "content-length": 0 });
    res.end();
    return 302;
  };

  const ask = (url: URL, res: ServerResponse): number => {
    const q = url.searchParams;
    const clientId = q.get("client_id") ?? "";
    if (!options.hasClient(clientId)) return page(res, 401, "Authorization error", "Error 401: invalid_client. The OAuth client was not found.");
    const redirectUri = q.get("redirect_uri") ?? "";
    if (!options.redirectAllowed(clientId, redirectUri)) {
      return page(res, 400, "Authorization error", "Error 400: redirect_uri_mismatch. The redirect URI is not a loopback address registered for this client.");
    }
    const state = q.get("state") ?? undefined;
    const fail = (error: string, description: string) => redirect(res, { redirectUri, state }, { error, error_description: description });
    if (q.get("response_type") !== "code") return fail("unsupported_response_type", "response_type must be code");
    if (q.get("code_challenge_method") !== "S256") return fail("invalid_request", "code_challenge_method must be S256");
    const codeChallenge = q.get("code_challenge") ?? "";
    if (!CHALLENGE.test(codeChallenge)) return fail("invalid_request", "code_challenge must be an S256 challenge");
    const scopes = options.scopesOf(q, clientId);
    if (typeof scopes === "string") return fail("invalid_scope", scopes);
    const id = randomBytes(16).toString("base64url");
    pending.set(id, { clientId, redirectUri, state, scopes, codeChallenge, expiresAt: options.clock() + PAGE_TTL_MS });
    const items = scopes
      .map((s) =>
        options.narrowable
          ? `<li><label><input type="checkbox" name="scope" value="${esc(s)}" checked> ${esc(s)}</label></li>`
          : `<li>${esc(s)}<input type="hidden" name="scope" value="${esc(s)}"></li>`,
      )
      .join("");
    const form =
      `<form method="post" action="${esc(options.path)}"><input type="hidden" name="consent" value="${id}"><ul>${items}</ul>` +
      `<button type="submit" name="decision" value="allow">Allow</button> <button type="submit" name="decision" value="deny">Deny</button></form>`;
    return page(res, 200, `Sign in to ${options.service}`, `An application (${clientId}) asks for access to your account:`, form);
  };

  const decide = (body: Buffer, res: ServerResponse): number => {
    const form = new URLSearchParams(body.toString("utf8"));
    const id = form.get("consent") ?? "";
    const request = pending.get(id);
    pending.delete(id); // one answer per page
    if (!request || request.expiresAt <= options.clock())
      return page(res, 400, "Authorization error", "This consent page has expired or was already answered.");
    if (form.get("decision") !== "allow") return redirect(res, request, { error: "access_denied" });
    const ticked = form.getAll("scope");
    const granted = request.scopes.filter((s) => ticked.includes(s));
    if (granted.length === 0) return redirect(res, request, { error: "access_denied" });
    return redirect(res, request, { code: options.issue(request, granted), ...options.redirectExtras?.(granted) });
  };

  return (method, url, body, res) => {
    if (method === "GET") return ask(url, res);
    if (method === "POST") return decide(body, res);
    return page(res, 405, "Authorization error", "Method not allowed.");
  };
}

function esc(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** The scope tokens of a space-separated `scope` (RFC 6749 §3.3), without repeats; undefined when empty or malformed. */
export function scopeTokens(scope: string): readonly string[] | undefined {
  const tokens = scope.split(" ").filter((s) => s !== "");
  if (tokens.length === 0 || tokens.length > 50 || !tokens.every((s) => /^[\x21\x23-\x5B\x5D-\x7E]{1,200}$/.test(s))) return undefined;
  return [...new Set(tokens)];
}

/** The redirect URIs a client gets when it registers none. */
export const DEFAULT_LOOPBACK_REDIRECTS: readonly string[] = ["http://127.0.0.1/callback", "http://[::1]/callback"];

/** A loopback http URI without its port (`http://127.0.0.1/callback`); undefined for anything else. */
export function loopbackKey(uri: string): string | undefined {
  if (!URL.canParse(uri)) return undefined;
  const url = new URL(uri);
  if (url.protocol !== "http:" || !["127.0.0.1", "[::1]"].includes(url.hostname)) return undefined;
  if (url.username !== "" || url.password !== "" || url.hash !== "" || url.search !== "" || /[#?]/.test(uri)) return undefined;
  return `http://${url.hostname}${url.pathname}`;
}

/** A PKCE verifier as RFC 7636 §4.1 allows: 43 to 128 unreserved characters. */
const VERIFIER = /^[A-Za-z0-9\-._~]{43,128}$/;

/** True when `verifier` is well formed and its S256 challenge (RFC 7636 §4.2) is `challenge`. */
export function verifierMatches(verifier: string | null | undefined, challenge: string): boolean {
  if (typeof verifier !== "string" || !VERIFIER.test(verifier)) return false;
  const a = Buffer.from(createHash("sha256").update(verifier, "ascii").digest("base64url"));
  const b = Buffer.from(challenge);
  return a.length === b.length && timingSafeEqual(a, b);
}
