/**
 * Notion's OAuth for public integrations: the one-time code its consent screen would redirect
 * with, and `POST /v1/oauth/token` exchanging a code or a refresh token for a bearer token.
 */
import { randomBytes, randomUUID, timingSafeEqual } from "node:crypto";
import type { OauthTokenResponse } from "@notionhq/client";
import { verifierMatches } from "../oauth-consent.js";
import type { NotionWorld } from "./world.js";

/** How long a code from the consent page may wait for its exchange. */
const CODE_TTL_MS = 60_000;

/** A one-time authorization code for an OAuth integration; from the consent page, bound to a PKCE challenge and short-lived. */
export function issueAuthorizationCode(
  world: NotionWorld,
  integrationId: string,
  redirectUri: string | undefined,
  consent?: { readonly codeChallenge: string; readonly now: number },
): string {
  if (!world.integrations.get(integrationId)?.oauth) throw new Error(`integration ${integrationId} has no OAuth client`);
  const code = `code_${randomBytes(12).toString("hex")}`;
  world.codes.set(code, { integrationId, redirectUri, ...(consent ? { codeChallenge: consent.codeChallenge, expiresAt: consent.now + CODE_TTL_MS } : {}) });
  return code;
}

/** Answer `POST /v1/oauth/token`: the client authenticates with Basic, the grant names the integration. */
export function exchangeOAuthToken(
  world: NotionWorld,
  authorization: string | undefined,
  body: Record<string, unknown>,
  now: number = Date.now(),
): { status: number; body: object } {
  const basic = /^Basic\s+(.+)$/i.exec(authorization ?? "");
  const decoded = basic ? Buffer.from(basic[1]!, "base64").toString("utf8") : "";
  const colon = decoded.indexOf(":");
  const clientId = colon < 0 ? "" : decoded.slice(0, colon);
  const clientSecret = colon < 0 ? "" : decoded.slice(colon + 1);
  const integration = [...world.integrations.values()].find((i) => i.oauth?.clientId === clientId);
  if (!integration?.oauth || !sameSecret(integration.oauth.clientSecret, clientSecret)) {
    return { status: 401, body: { error: "invalid_client", error_description: "Client authentication failed." } };
  }
  let integrationId: string | undefined;
  if (body["grant_type"] === "authorization_code") {
    const code = typeof body["code"] === "string" ? world.codes.get(body["code"]) : undefined;
    if (code) world.codes.delete(body["code"] as string); // one use, even when refused
    if (code && code.redirectUri !== undefined && code.redirectUri !== body["redirect_uri"]) {
      return { status: 400, body: { error: "invalid_grant", error_description: "redirect_uri does not match." } };
    }
    const verifier = typeof body["code_verifier"] === "string" ? body["code_verifier"] : undefined;
    const expired = code?.expiresAt !== undefined && code.expiresAt <= now;
    if (expired || (code?.codeChallenge !== undefined && !verifierMatches(verifier, code.codeChallenge))) {
      return { status: 400, body: { error: "invalid_grant", error_description: "The grant is invalid or expired." } };
    }
    integrationId = code?.integrationId;
  } else if (body["grant_type"] === "refresh_token") {
    const refresh = typeof body["refresh_token"] === "string" ? body["refresh_token"] : "";
    integrationId = world.refreshTokens.get(refresh);
    if (integrationId !== undefined) world.refreshTokens.delete(refresh); // refresh tokens rotate
  } else {
    return { status: 400, body: { error: "unsupported_grant_type", error_description: "grant_type is not supported." } };
  }
  if (integrationId !== integration.id) return { status: 400, body: { error: "invalid_grant", error_description: "The grant is invalid or expired." } };
  const issued = world.issueOAuthTokens(integration.id);
  const response: OauthTokenResponse = {
    access_token: issued.accessToken,
    token_type: "bearer",
    refresh_token: issued.refreshToken,
    bot_id: integration.botId,
    workspace_icon: null,
    workspace_name: world.workspaceName,
    workspace_id: world.workspaceId,
    owner: { type: "workspace", workspace: true },
    duplicated_template_id: null,
    request_id: randomUUID(),
  };
  return { status: 200, body: response };
}

function sameSecret(expected: string, given: string): boolean {
  const a = Buffer.from(expected);
  const b = Buffer.from(given);
  return a.length === b.length && timingSafeEqual(a, b);
}
