import { spawn } from "node:child_process";
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { addConnection, LAST_DATE_MS, parseTokenJson, type TokenSet } from "@toolgate/core/connectors";
import { buildInventory } from "@toolgate/core/operator";
import { CliFailure, EXIT, type Io } from "../output.js";
import type { Runtime } from "../runtime.js";
import { connectionOf, renderConnections, vaultOf, type ConnectionOptions } from "./connections.js";
import { listenForRedirect } from "./connect-listener.js";
import { oauthClientFor, type ConnectProvider, type ResolvedOAuthClient } from "./connect-setup.js";

export interface ConnectOptions extends Omit<ConnectionOptions, "provider" | "id"> {
  readonly id?: string;
  readonly scopes?: string;
  /** False with `--no-browser`. */
  readonly browser: boolean;
  /** Seconds to wait for the browser's answer. */
  readonly timeout: number;
  /** The listener's port; default 0 (any free one). For a provider that matches the registered port too. */
  readonly port?: number;
}

/** Notion's OAuth tokens do not expire: the vault stores the last instant a Date can hold (status prints the expiry as a date). */
const NEVER_EXPIRES = LAST_DATE_MS;

/**
 * `toolgate connections connect google|notion`: the authorization-code flow with PKCE (S256)
 * through a loopback redirect (RFC 8252). Prints the consent address, waits for one redirect,
 * checks its state, exchanges the code and stores the tokens in the vault as `connections add`
 * does. Nothing is stored on a denial, a state mismatch, a refused exchange or a timeout.
 */
export async function connectionsConnect(runtime: Runtime, provider: ConnectProvider, options: ConnectOptions, io: Io): Promise<number> {
  if (options.timeout < 1 || options.timeout > 3600) throw new CliFailure(`--timeout must be from 1 to 3600 seconds, not ${options.timeout}`, EXIT.usage);
  const vault = vaultOf(runtime);
  const client = oauthClientFor(runtime.composition.oauthClients, provider);
  const tools = buildInventory(runtime.registry, { profiles: runtime.profiles }).tools.flatMap((t) =>
    t.connector?.provider === provider ? [{ id: t.id, scopes: t.connector.scopes }] : [],
  );
  const asked = options.scopes !== undefined ? options.scopes.split(/[\s,]+/).filter(Boolean) : (client.scopes ?? [...new Set(tools.flatMap((t) => t.scopes))]);
  if (asked.length === 0) throw new CliFailure(`no scopes to ask ${provider} for: no composed tool needs one`, EXIT.usage, "give them with --scopes");

  if (options.port !== undefined && options.port > 65535) throw new CliFailure(`--port must be from 0 to 65535, not ${options.port}`, EXIT.usage);
  const listener = await listenForRedirect(options.port).catch((error: NodeJS.ErrnoException) => {
    throw new CliFailure(
      `cannot listen on 127.0.0.1:${options.port ?? 0} (${error.code ?? "error"})`,
      EXIT.failed,
      "give another --port, or leave it out for any free one",
    );
  });
  let params: URLSearchParams | undefined;
  const state = randomBytes(32).toString("base64url");
  const verifier = randomBytes(32).toString("base64url");
  try {
    const url = authorizeUrl(client, listener.redirectUri, asked, state, verifier);
    io.err(
      `Open this address in a browser and sign in to ${provider}:\n\n  ${url}\n\nWaiting for the answer on ${listener.redirectUri} (${options.timeout} s)…`,
    );
    if (options.browser) openBrowser(url);
    params = await listener.wait(options.timeout * 1000, (p) => pageFor(p, state));
  } finally {
    await listener.close();
  }
  if (!params)
    throw new CliFailure(`no answer from the browser within ${options.timeout} s; nothing stored`, EXIT.failed, "run the command again, or --timeout SECONDS");
  if (!sameState(params.get("state"), state)) {
    throw new CliFailure(
      "the redirect's state does not match this sign-in: refused, nothing stored",
      EXIT.failed,
      "run the command again; if you did not open that address, someone tried to connect an account they chose",
    );
  }
  const error = params.get("error");
  if (error !== null) {
    const code = /^[a-z_]{1,64}$/.test(error) ? error : "an unreadable error";
    throw new CliFailure(
      code === "access_denied"
        ? `${provider} access was denied at the consent page; nothing stored`
        : `${provider} refused the authorization (${code}); nothing stored`,
      EXIT.failed,
    );
  }
  const code = params.get("code");
  if (!code) throw new CliFailure(`the redirect carried no code; nothing stored`, EXIT.failed);

  const tokens = await exchange(client, code, listener.redirectUri, verifier, asked);
  const status = await addConnection({ vault, connection: connectionOf({ ...options, id: options.id ?? provider, provider }), tokens });
  io.out(renderConnections([status]));
  io.out(`granted: ${tokens.scopes.join(" ")}`);
  const missing = asked.filter((s) => !tokens.scopes.includes(s));
  if (missing.length > 0) {
    const broken = tools.filter((t) => t.scopes.some((s) => !tokens.scopes.includes(s))).map((t) => t.id);
    io.err(
      `warning: ${provider} granted fewer scopes than asked; not granted: ${missing.join(" ")}\n` +
        `  ${broken.length > 0 ? `these tools will be refused (scope_missing) with this connection: ${broken.join(", ")}` : "no composed tool needs them"}\n` +
        `  run toolgate connections connect ${provider} again and leave them ticked to grant them`,
    );
  }
  return EXIT.ok;
}

function authorizeUrl(client: ResolvedOAuthClient, redirectUri: string, scopes: readonly string[], state: string, verifier: string): string {
  const url = new URL(client.authorizeUrl);
  const q = url.searchParams;
  q.set("client_id", client.clientId);
  q.set("redirect_uri", redirectUri);
  q.set("response_type", "code");
  if (client.provider === "google") {
    q.set("scope", scopes.join(" "));
    q.set("access_type", "offline"); // a refresh token
    q.set("prompt", "consent");
  } else {
    q.set("owner", "user");
  }
  q.set("state", state);
  q.set("code_challenge", createHash("sha256").update(verifier, "ascii").digest("base64url"));
  q.set("code_challenge_method", "S256");
  return url.href;
}

/** What the browser is told once the redirect arrives. */
function pageFor(params: URLSearchParams, state: string): string {
  if (!sameState(params.get("state"), state)) return "Toolgate refused this answer: it does not belong to the sign-in Toolgate started. Nothing was stored.";
  if (params.get("error") !== null) return "Access was not granted. Nothing was stored.";
  return "Toolgate received the authorization and is finishing the connection.";
}

function sameState(given: string | null, state: string): boolean {
  if (given === null) return false;
  const a = Buffer.from(given);
  const b = Buffer.from(state);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** The code for tokens at the token endpoint; failures name the HTTP status and OAuth error code only. */
export async function exchange(client: ResolvedOAuthClient, code: string, redirectUri: string, verifier: string, asked: readonly string[]): Promise<TokenSet> {
  const grant = { grant_type: "authorization_code", code, redirect_uri: redirectUri, code_verifier: verifier };
  const request: RequestInit =
    client.clientAuth === "basic"
      ? {
          headers: {
            authorization: `Basic ${Buffer.from(`${encodeURIComponent(client.clientId)}:${encodeURIComponent(client.clientSecret)}`).toString("base64")}`,
            "content-type": "application/json",
          },
          body: JSON.stringify(grant),
        }
      : { body: new URLSearchParams({ ...grant, client_id: client.clientId, client_secret: client.clientSecret }) };
  let response: Response;
  let answer: unknown;
  try {
    response = await fetch(client.tokenUrl, { method: "POST", ...request, redirect: "error", signal: AbortSignal.timeout(30_000) });
    answer = await boundedJson(response);
  } catch (error) {
    if (error instanceof CliFailure) throw error;
    throw new CliFailure(`the ${client.provider} token endpoint could not be reached; nothing stored`, EXIT.failed);
  }
  const fields = typeof answer === "object" && answer !== null ? (answer as Record<string, unknown>) : {};
  if (!response.ok || typeof fields["access_token"] !== "string") {
    const oauthError = typeof fields["error"] === "string" && /^[a-z_]{1,64}$/.test(fields["error"]) ? ` (${fields["error"]})` : "";
    throw new CliFailure(`the ${client.provider} token endpoint refused the code: ${response.status}${oauthError}; nothing stored`, EXIT.failed);
  }
  if (typeof fields["scope"] === "string" && !readableScope(fields["scope"])) {
    throw new CliFailure(
      `the ${client.provider} token endpoint's answer has an unreadable scope (at most ${MAX_SCOPES} scope tokens of printable ASCII expected); nothing stored`,
      EXIT.failed,
    );
  }
  // Only the token fields, re-read by the same parser as `connections add`'s token files.
  const kept = {
    access_token: fields["access_token"],
    ...(typeof fields["refresh_token"] === "string" ? { refresh_token: fields["refresh_token"] } : {}),
    ...(typeof fields["token_type"] === "string" ? { token_type: fields["token_type"] } : {}),
    ...(typeof fields["expires_in"] === "number" ? { expires_in: fields["expires_in"] } : client.provider === "notion" ? { expiresAt: NEVER_EXPIRES } : {}),
    ...(typeof fields["scope"] === "string" && fields["scope"].trim() !== "" ? { scope: fields["scope"] } : { scopes: asked }),
  };
  return parseTokenJson(JSON.stringify(kept), { now: Date.now(), source: `the ${client.provider} token endpoint's answer` });
}

/** More than any token response holds: a larger answer is not read on. */
const MAX_TOKEN_ANSWER_BYTES = 64 * 1024;
const MAX_SCOPES = 100;
/** A scope token (RFC 6749 §3.3): printable ASCII without space, `"` or backslash; bounded. */
const SCOPE_TOKEN = /^[\x21\x23-\x5B\x5D-\x7E]{1,256}$/;

/** True when `scope` is at most MAX_SCOPES scope tokens, so nothing a terminal acts on is stored or printed. */
function readableScope(scope: string): boolean {
  const tokens = scope.split(/[ ,]+/).filter(Boolean);
  return tokens.length <= MAX_SCOPES && tokens.every((t) => SCOPE_TOKEN.test(t));
}

/** The answer's JSON (undefined when it is not JSON), read up to MAX_TOKEN_ANSWER_BYTES; a larger answer is refused. */
async function boundedJson(response: Response): Promise<unknown> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of response.body ?? []) {
    size += chunk.byteLength;
    // Leaving the loop cancels the rest of the body.
    if (size > MAX_TOKEN_ANSWER_BYTES)
      throw new CliFailure(`the token endpoint's answer is larger than ${MAX_TOKEN_ANSWER_BYTES} bytes; refused, nothing stored`, EXIT.failed);
    chunks.push(chunk);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString("utf8"));
  } catch {
    return undefined;
  }
}

/** Open the address in the desktop's browser, only from a terminal with a display; never waits for it. */
function openBrowser(url: string): void {
  if (!process.stdout.isTTY || !process.stdin.isTTY) return;
  const [command, args] =
    process.platform === "darwin"
      ? ["open", [url]]
      : process.platform === "win32"
        ? ["rundll32", ["url.dll,FileProtocolHandler", url]]
        : process.env["DISPLAY"] || process.env["WAYLAND_DISPLAY"]
          ? ["xdg-open", [url]]
          : [undefined, []];
  if (command === undefined) return;
  try {
    const child = spawn(command, args as string[], { stdio: "ignore", detached: true });
    child.on("error", () => undefined);
    child.unref();
  } catch {
    // The address is printed; the user opens it.
  }
}
