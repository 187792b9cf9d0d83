import { z } from "zod";
import { webhookUrlSchema } from "../config.js";
import { CliFailure, EXIT } from "../output.js";

/**
 * What `toolgate connections connect PROVIDER` needs of a provider's OAuth client: a composition
 * returns these as `oauthClients`. The secret never leaves the token request; it is never printed.
 *
 * ```js
 * oauthClients: [{ provider: "google", clientId: process.env.GOOGLE_CLIENT_ID, clientSecret: process.env.GOOGLE_CLIENT_SECRET }]
 * ```
 */
export interface OAuthClientSetup {
  readonly provider: "google" | "notion";
  readonly clientId: string;
  readonly clientSecret: string;
  /** The consent page; default the provider's own. https, or http on 127.0.0.1, [::1] or localhost (an emulator). */
  readonly authorizeUrl?: string;
  /** The token endpoint; default the provider's own; the same rule. */
  readonly tokenUrl?: string;
  /** What to ask for when `--scopes` is not given; default every scope the composed tools of this provider need. */
  readonly scopes?: readonly string[];
}

/** The provider's own endpoints, and how each authenticates the client at its token endpoint. */
export const PROVIDER_OAUTH = {
  google: { authorizeUrl: "https://accounts.google.com/o/oauth2/v2/auth", tokenUrl: "https://oauth2.googleapis.com/token", clientAuth: "post" },
  notion: { authorizeUrl: "https://api.notion.com/v1/oauth/authorize", tokenUrl: "https://api.notion.com/v1/oauth/token", clientAuth: "basic" },
} as const;

export type ConnectProvider = keyof typeof PROVIDER_OAUTH;

/** https, or http only to this machine (an emulator); no credentials in it. */
const endpoint = webhookUrlSchema;

const setupSchema = z.object({
  provider: z.enum(["google", "notion"]),
  clientId: z.string().min(1, { error: "clientId is empty" }),
  clientSecret: z.string().min(1, { error: "clientSecret is empty" }),
  authorizeUrl: endpoint.optional(),
  tokenUrl: endpoint.optional(),
  scopes: z.array(z.string().min(1)).optional(),
});

/** A provider's OAuth client as resolved from the composition: endpoints filled in. */
export interface ResolvedOAuthClient {
  readonly provider: ConnectProvider;
  readonly clientId: string;
  readonly clientSecret: string;
  readonly authorizeUrl: string;
  readonly tokenUrl: string;
  readonly clientAuth: "post" | "basic";
  readonly scopes: readonly string[] | undefined;
}

/** The composition's OAuth client for `provider`; a configuration failure (exit 3) when there is none or it is malformed. */
export function oauthClientFor(oauthClients: unknown, provider: ConnectProvider): ResolvedOAuthClient {
  const hint = `return oauthClients: [{ provider: "${provider}", clientId, clientSecret }] from the composition's compose()`;
  const list: unknown[] = Array.isArray(oauthClients) ? oauthClients : [];
  const entry = list.find((c) => typeof c === "object" && c !== null && (c as { provider?: unknown }).provider === provider);
  if (entry === undefined) throw new CliFailure(`the composition names no OAuth client for ${provider}`, EXIT.config, hint);
  const parsed = setupSchema.safeParse(entry);
  if (!parsed.success) {
    // Name the fields, never their values (one is a secret).
    const fields = [...new Set(parsed.error.issues.map((i) => `${i.path.join(".") || "entry"}: ${i.message}`))].join("; ");
    throw new CliFailure(`the ${provider} OAuth client in the composition is not usable (${fields})`, EXIT.config, hint);
  }
  const own = PROVIDER_OAUTH[provider];
  const s = parsed.data;
  return {
    provider,
    clientId: s.clientId,
    clientSecret: s.clientSecret,
    authorizeUrl: s.authorizeUrl ?? own.authorizeUrl,
    tokenUrl: s.tokenUrl ?? own.tokenUrl,
    clientAuth: own.clientAuth,
    scopes: s.scopes,
  };
}
