import { createConsentEndpoint, scopeTokens } from "../oauth-consent.js";
import type { OAuthServer } from "./oauth.js";

/** Google's authorization endpoint for installed apps. */
export const GOOGLE_AUTHORIZE_PATH = "/o/oauth2/v2/auth";

/**
 * `GET|POST /o/oauth2/v2/auth`: Google's consent screen. The user may untick scopes (Google's
 * granular consent); the redirect and the token response carry the scopes granted.
 */
export function googleAuthorizeEndpoint(oauth: OAuthServer, clock: () => number): ReturnType<typeof createConsentEndpoint> {
  return createConsentEndpoint({
    service: "Google",
    path: GOOGLE_AUTHORIZE_PATH,
    clock,
    narrowable: true,
    hasClient: (clientId) => oauth.hasClient(clientId),
    redirectAllowed: (clientId, uri) => oauth.redirectAllowed(clientId, uri),
    scopesOf: (params) => scopeTokens(params.get("scope") ?? "") ?? "Some requested scopes were invalid or missing.",
    issue: (request, granted) =>
      oauth.authorize({ clientId: request.clientId, scopes: granted, redirectUri: request.redirectUri, codeChallenge: request.codeChallenge }).code,
    redirectExtras: (granted) => ({ scope: granted.join(" ") }),
  });
}
