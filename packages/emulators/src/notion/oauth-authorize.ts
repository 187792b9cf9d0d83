import { createConsentEndpoint, DEFAULT_LOOPBACK_REDIRECTS, loopbackKey } from "../oauth-consent.js";
import { issueAuthorizationCode } from "./oauth-token.js";
import type { NotionWorld } from "./world.js";

/** Notion's authorization endpoint, after `/v1`. */
export const NOTION_AUTHORIZE_PATH = "/oauth/authorize";

/**
 * `GET|POST /v1/oauth/authorize`: Notion's consent screen for a public integration. Notion has no
 * OAuth scopes: the page lists the integration's capabilities (the user cannot untick them, as on
 * Notion) and Allow or Deny. The code is bound to the client, the redirect URI and the PKCE
 * challenge, and exchanged at `POST /v1/oauth/token`.
 */
export function notionAuthorizeEndpoint(world: NotionWorld, clock: () => number): ReturnType<typeof createConsentEndpoint> {
  const integrationOf = (clientId: string) => [...world.integrations.values()].find((i) => i.oauth !== undefined && i.oauth.clientId === clientId);
  return createConsentEndpoint({
    service: "Notion",
    path: `/v1${NOTION_AUTHORIZE_PATH}`,
    clock,
    narrowable: false,
    hasClient: (clientId) => integrationOf(clientId) !== undefined,
    redirectAllowed: (clientId, uri) => {
      const key = loopbackKey(uri);
      const allowed = integrationOf(clientId)?.oauth?.redirectUris ?? DEFAULT_LOOPBACK_REDIRECTS;
      return key !== undefined && allowed.some((r) => loopbackKey(r) === key);
    },
    scopesOf: (params, clientId) => (params.get("owner") === "user" ? [...integrationOf(clientId)!.capabilities] : "owner must be user"),
    issue: (request, _granted) =>
      issueAuthorizationCode(world, integrationOf(request.clientId)!.id, request.redirectUri, { codeChallenge: request.codeChallenge, now: clock() }),
  });
}
