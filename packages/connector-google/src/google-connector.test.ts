import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  createGate,
  createMemoryJournal,
  createToolRegistry,
  defineFamily,
  defineProfile,
  defineTool,
  ToolError,
  type ConnectorOpenRequest,
} from "@toolgate/core";
import { createConnectorRuntime, createFileVault, generateVaultKey, type ConnectorLogEvent, type TokenSet, type TokenVault } from "@toolgate/core/connectors";
import { OAuth2Client } from "google-auth-library";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { createGoogleConnector } from "./google-connector.js";

const CLIENT_ID = "toolgate-test.apps.local";
const CLIENT_SECRET = "GOCSPX-client-secret-under-test";
const GMAIL_READ = "https://www.googleapis.com/auth/gmail.readonly";
const CALENDAR = "https://www.googleapis.com/auth/calendar.events";
const T0 = 1_900_000_000_000;

/**
 * A real OAuth token endpoint on 127.0.0.1 implementing the refresh_token grant, plus one API
 * route that checks the bearer token. Switches make it revoke, omit the refresh token, rotate it,
 * hold answers, or echo what it was sent back in its error bodies.
 */
interface TokenServer {
  readonly url: string;
  readonly apiUrl: string;
  tokenRequests: number;
  readonly revoked: Set<string>;
  readonly issued: string[];
  omitRefreshToken: boolean;
  rotateRefreshToken: boolean;
  /** Echo the submitted client secret and refresh token in every error body. */
  echoSecrets: boolean;
  /** Echo the bearer token in the API's error body. */
  echoBearer: boolean;
  failWith: number | undefined;
  hold(): () => void;
  close(): Promise<void>;
}

async function startTokenServer(validRefreshTokens: readonly string[]): Promise<TokenServer> {
  const valid = new Set(validRefreshTokens);
  let gate: Promise<void> = Promise.resolve();
  const readBody = (req: IncomingMessage) =>
    new Promise<string>((resolve) => {
      let body = "";
      req.setEncoding("utf8");
      req.on("data", (chunk: string) => (body += chunk));
      req.on("end", () => resolve(body));
    });
  const send = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { "content-type": "application/json" });
    res.end(JSON.stringify(body));
  };
  const state: TokenServer = {
    url: "",
    apiUrl: "",
    tokenRequests: 0,
    revoked: new Set(),
    issued: [],
    omitRefreshToken: false,
    rotateRefreshToken: false,
    echoSecrets: false,
    echoBearer: false,
    failWith: undefined,
    hold() {
      let release!: () => void;
      gate = new Promise<void>((resolve) => (release = resolve));
      return () => release();
    },
    close: async () => undefined,
  };
  const server: Server = createServer(async (req, res) => {
    if (req.method === "GET" && req.url === "/api/profile") {
      const bearer = /^Bearer (.+)$/.exec(req.headers.authorization ?? "")?.[1] ?? "";
      if (!state.issued.includes(bearer) || state.echoBearer) return send(res, 401, { error: { code: 401, message: `token ${bearer} is not valid here` } });
      return send(res, 200, { email: "someone@example.test" });
    }
    if (req.method !== "POST" || req.url !== "/token") return send(res, 404, { error: "not_found" });
    state.tokenRequests++;
    const form = new URLSearchParams(await readBody(req));
    await gate;
    const refreshToken = form.get("refresh_token") ?? "";
    const echo = state.echoSecrets ? ` (you sent client_secret=${form.get("client_secret")} refresh_token=${refreshToken})` : "";
    if (state.failWith !== undefined) return send(res, state.failWith, { error: "server_error", error_description: `try later${echo}` });
    if (form.get("grant_type") !== "refresh_token") return send(res, 400, { error: "unsupported_grant_type" });
    if (form.get("client_id") !== CLIENT_ID || form.get("client_secret") !== CLIENT_SECRET) {
      return send(res, 401, { error: "invalid_client", error_description: `The OAuth client was not found${echo}` });
    }
    if (!valid.has(refreshToken) || state.revoked.has(refreshToken)) {
      // "ReAuth" makes the library copy this body into its own error message.
      return send(res, 400, { error: "invalid_grant", error_description: `Token has been expired or revoked. ReAuth needed${echo}` });
    }
    const accessToken = `ya29.local-${state.tokenRequests}-${Math.random().toString(36).slice(2, 10)}`;
    state.issued.push(accessToken);
    let next: string | undefined;
    if (state.rotateRefreshToken) {
      next = `1//rotated-${state.tokenRequests}-${Math.random().toString(36).slice(2, 10)}`;
      valid.add(next);
    } else if (!state.omitRefreshToken) {
      next = refreshToken;
    }
    return send(res, 200, {
      access_token: accessToken,
      expires_in: 3599,
      scope: `${GMAIL_READ} ${CALENDAR}`,
      token_type: "Bearer",
      ...(next === undefined ? {} : { refresh_token: next }),
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return Object.assign(state, {
    url: `http://127.0.0.1:${port}/token`,
    apiUrl: `http://127.0.0.1:${port}/api/profile`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  });
}

const REFRESH = "1//refresh-token-under-test";
const STALE_ACCESS = "ya29.stale-access-token-under-test";

let server: TokenServer;
let root: string;
let keyFile: string;
let vaultPath: string;
let now: number;

beforeEach(async () => {
  server = await startTokenServer([REFRESH]);
  root = mkdtempSync(join(tmpdir(), "toolgate-google-"));
  mkdirSync(join(root, "keys"), { mode: 0o700 });
  keyFile = join(root, "keys", "vault.key");
  writeFileSync(keyFile, generateVaultKey(), { mode: 0o600 });
  chmodSync(keyFile, 0o600);
  vaultPath = join(root, "data", "tokens.vault");
  now = T0;
});

afterEach(async () => {
  vi.restoreAllMocks();
  await server.close();
  rmSync(root, { recursive: true, force: true });
});

const openVault = (): TokenVault => createFileVault({ path: vaultPath, key: { file: keyFile } });

async function seed(tokens: Partial<TokenSet> = {}): Promise<void> {
  await openVault().put(
    { id: "google-acme", provider: "google", tenant: "acme", isDefault: true },
    { accessToken: STALE_ACCESS, refreshToken: REFRESH, expiresAt: T0 - 1, scopes: [GMAIL_READ, CALENDAR], tokenType: "Bearer", ...tokens },
  );
}

function runtimeOver(vault: TokenVault, log?: ConnectorLogEvent[]) {
  return createConnectorRuntime({
    vault,
    providers: [createGoogleConnector({ clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, tokenUrl: server.url })],
    clock: () => now,
    ...(log ? { log: (event: ConnectorLogEvent) => log.push(event) } : {}),
  });
}

function openRequest(secrets: string[] = []): ConnectorOpenRequest {
  return {
    provider: "google",
    scopes: [GMAIL_READ],
    principal: "agent-1",
    tenant: "acme",
    toolId: "mail.read_profile",
    signal: new AbortController().signal,
    registerSecret: (value) => secrets.push(value),
  };
}

async function failure(promise: Promise<unknown>): Promise<ToolError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!ToolError.is(error)) throw new Error(`expected a ToolError, got ${String(error)}`);
  return error;
}

/** A real gate with one tool that calls the local API through the connector's OAuth2Client. */
function gateOver(runtime: ReturnType<typeof runtimeOver>) {
  const readProfile = defineTool({
    id: "mail.read_profile",
    title: "Read the mailbox profile",
    description: "Read the connected mailbox's address.",
    input: z.object({}).strict(),
    output: z.object({ email: z.string() }),
    actionType: "email-read",
    effect: "read",
    requiredAllowlist: ["mail:read"],
    risk: "low",
    approval: "never",
    connector: { provider: "google", scopes: [GMAIL_READ] },
    runtimeIsolation: { network: "provider", filesystem: "none", secrets: "connector", subprocess: "none" },
    untrustedOutput: false,
    handler: async (_input, ctx) => {
      const client = await ctx.connector!.client<OAuth2Client>();
      try {
        const res = await client.request<{ email: string }>({ url: server.apiUrl, retry: false });
        return { email: res.data.email };
      } catch (error) {
        // A careless tool: it puts the provider's whole error body in its message.
        const body = (error as { response?: { data?: unknown } }).response?.data;
        throw new ToolError("provider_rejected", `profile request failed: ${JSON.stringify(body)}`);
      }
    },
  });
  const journal = createMemoryJournal({ auditKey: "google-test-audit-key" });
  const gate = createGate({
    registry: createToolRegistry({ families: [defineFamily({ name: "mail", tools: [readProfile], permissions: ["mail:read"] })] }),
    journal,
    connectors: runtime,
    clock: () => now,
  });
  const profile = defineProfile({ name: "reader", allow: ["mail:read"], maxRisk: "low" });
  const call = { principal: "agent-1", tenant: "acme", profile };
  return { gate, journal, invoke: () => gate.invoke("mail.read_profile", {}, call) };
}

/** Everything written to stdout and stderr while `work` runs. */
async function captureOutput<T>(work: () => Promise<T>): Promise<{ value: T; output: string }> {
  const chunks: string[] = [];
  const grab = (chunk: unknown) => {
    chunks.push(typeof chunk === "string" ? chunk : Buffer.from(chunk as Uint8Array).toString("utf8"));
    return true;
  };
  const out = vi.spyOn(process.stdout, "write").mockImplementation(grab as typeof process.stdout.write);
  const err = vi.spyOn(process.stderr, "write").mockImplementation(grab as typeof process.stderr.write);
  const logs = (["log", "error", "warn", "info", "debug"] as const).map((level) =>
    vi
      .spyOn(console, level)
      .mockImplementation((...args: unknown[]) => void chunks.push(args.map((a) => (typeof a === "string" ? a : JSON.stringify(a))).join(" "))),
  );
  try {
    return { value: await work(), output: chunks.join("\n") };
  } finally {
    out.mockRestore();
    err.mockRestore();
    for (const l of logs) l.mockRestore();
  }
}

function expectNoSecret(text: string, secrets: readonly string[]): void {
  for (const secret of secrets) {
    expect(text).not.toContain(secret);
    expect(text).not.toContain(encodeURIComponent(secret));
  }
}

describe("google connector: refusals first", () => {
  it("a refresh token is needed: an expired connection without one → connector_reauth_required, no request sent", async () => {
    await openVault().put(
      { id: "google-acme", provider: "google", tenant: "acme", isDefault: true },
      { accessToken: STALE_ACCESS, expiresAt: T0 - 1, scopes: [GMAIL_READ], tokenType: "Bearer" },
    );
    const error = await failure(runtimeOver(openVault()).open(openRequest()));
    expect(error.code).toBe("connector_reauth_required");
    expect(error.message).toMatch(/^connection google-acme \(google\) must be authorized again/);
    expect(server.tokenRequests).toBe(0);
  });

  it("a revoked grant → connector_reauth_required naming the connection; nothing is overwritten", async () => {
    await seed();
    server.revoked.add(REFRESH);
    server.echoSecrets = true;
    const before = readFileSync(vaultPath);
    const log: ConnectorLogEvent[] = [];
    const error = await failure(runtimeOver(openVault(), log).open(openRequest()));
    expect(error.code).toBe("connector_reauth_required");
    expect(error.message).toContain("google-acme");
    expect(error.message).toContain("invalid_grant");
    expect(error.message).not.toMatch(/\n\s+at /);
    expectNoSecret(JSON.stringify({ message: error.message, cause: String(error.cause), details: error.details, log }), [CLIENT_SECRET, REFRESH]);
    expect(server.tokenRequests).toBe(1);
    expect(readFileSync(vaultPath).equals(before)).toBe(true);
  });

  it("a corrupted vault is config_invalid naming the file; no request is sent and the file is left as it was", async () => {
    await seed();
    writeFileSync(vaultPath, "{ this is not a vault");
    const error = await failure(runtimeOver(openVault()).open(openRequest()));
    expect(error.code).toBe("config_invalid");
    expect(error.message).toContain(vaultPath);
    expect(server.tokenRequests).toBe(0);
    expect(readFileSync(vaultPath, "utf8")).toBe("{ this is not a vault");

    const { invoke } = gateOver(runtimeOver(openVault()));
    const result = await invoke();
    expect(result).toMatchObject({ status: "error", code: "config_invalid", boundary: "effect_not_started" });
    expect(readFileSync(vaultPath, "utf8")).toBe("{ this is not a vault");
  });

  it("a missing scope is refused before the vault's tokens are read or any request is sent", async () => {
    await seed({ scopes: [CALENDAR] });
    const error = await failure(runtimeOver(openVault()).open(openRequest()));
    expect(error).toMatchObject({ code: "scope_missing" });
    expect(error.message).toContain(GMAIL_READ);
    expect(server.tokenRequests).toBe(0);
  });
});

describe("google connector: refresh against a real token endpoint", () => {
  it("twenty concurrent opens → one request reaches the token server, and every client carries the new token", async () => {
    await seed();
    const runtime = runtimeOver(openVault());
    const release = server.hold();
    const opening = Array.from({ length: 20 }, () => runtime.open(openRequest()));
    while (server.tokenRequests === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    release();
    const handles = await Promise.all(opening);
    const clients = await Promise.all(handles.map((h) => h.client<OAuth2Client>()));
    expect(server.tokenRequests).toBe(1);
    expect(clients.every((c) => c instanceof OAuth2Client)).toBe(true);
    const tokens = new Set(clients.map((c) => c.credentials.access_token));
    expect(tokens).toEqual(new Set([server.issued[0]]));
    // The tools' clients cannot refresh on their own: no refresh token, no client secret.
    expect(clients.every((c) => !c.credentials.refresh_token && !JSON.stringify(c.credentials).includes(CLIENT_SECRET))).toBe(true);
  });

  it("persists the refreshed set before use and across a restart; keeps the refresh token the server omitted", async () => {
    await seed();
    server.omitRefreshToken = true;
    const first = await runtimeOver(openVault()).open(openRequest());
    expect(server.tokenRequests).toBe(1);
    const stored = await openVault().readTokens("google-acme");
    expect(stored).toEqual({
      accessToken: server.issued[0],
      refreshToken: REFRESH,
      expiresAt: expect.any(Number),
      scopes: [GMAIL_READ, CALENDAR],
      tokenType: "Bearer",
    });
    expect(stored!.expiresAt).toBeGreaterThan(T0 + 3_500_000);
    expect(stored!.expiresAt).toBeLessThanOrEqual(T0 + 3_599_000);
    expect((await first.client<OAuth2Client>()).credentials.access_token).toBe(server.issued[0]);

    // A new process: a new vault object over the same file and a new runtime.
    now = T0 + 10 * 60_000;
    const second = await runtimeOver(openVault()).open(openRequest());
    expect(server.tokenRequests).toBe(1);
    expect((await second.client<OAuth2Client>()).credentials.access_token).toBe(server.issued[0]);

    // Past the leeway, the kept refresh token still works.
    now = stored!.expiresAt - 30_000;
    const third = await runtimeOver(openVault()).open(openRequest());
    expect(server.tokenRequests).toBe(2);
    expect((await third.client<OAuth2Client>()).credentials.access_token).toBe(server.issued[1]);
  });

  it("stores a rotated refresh token", async () => {
    await seed();
    server.rotateRefreshToken = true;
    await runtimeOver(openVault()).open(openRequest());
    expect((await openVault().readTokens("google-acme"))?.refreshToken).toMatch(/^1\/\/rotated-1-/);
  });

  it("a failing token endpoint is provider_unavailable, and the stored set is untouched", async () => {
    await seed();
    server.failWith = 503;
    const before = readFileSync(vaultPath);
    const error = await failure(runtimeOver(openVault()).open(openRequest()));
    expect(error).toMatchObject({ code: "provider_unavailable", retryable: true });
    expect(readFileSync(vaultPath).equals(before)).toBe(true);
  });

  it("the authorized client works against the API with the refreshed token", async () => {
    await seed();
    const { invoke } = gateOver(runtimeOver(openVault()));
    expect(await invoke()).toMatchObject({ status: "ok", output: { email: "someone@example.test" } });
  });
});

describe("google connector: secrets echoed back never leave", () => {
  it("client secret and refresh token echoed by the token endpoint appear in no result, journal entry, log event or output line", async () => {
    await seed();
    server.echoSecrets = true;
    const log: ConnectorLogEvent[] = [];
    const connector = createGoogleConnector({ clientId: CLIENT_ID, clientSecret: "GOCSPX-wrong-secret-value", tokenUrl: server.url });
    const runtime = createConnectorRuntime({ vault: openVault(), providers: [connector], clock: () => now, log: (e) => log.push(e) });
    const { invoke, journal } = gateOver(runtime);
    const { value: rejected, output: out1 } = await captureOutput(invoke);
    expect(rejected).toMatchObject({ status: "error", code: "provider_rejected", boundary: "effect_not_started" });

    // With the right client but a revoked grant: the library copies the body into its own message.
    server.revoked.add(REFRESH);
    const { invoke: invoke2, journal: journal2 } = gateOver(runtimeOver(openVault(), log));
    const { value: revoked, output: out2 } = await captureOutput(invoke2);
    expect(revoked).toMatchObject({ status: "error", code: "connector_reauth_required" });
    expect(server.tokenRequests).toBe(2);

    const everything = JSON.stringify({
      rejected,
      revoked,
      audit: await journal.readAudit(),
      outbox: await journal.listOutbox(),
      audit2: await journal2.readAudit(),
      outbox2: await journal2.listOutbox(),
      log,
      out1,
      out2,
    });
    expectNoSecret(everything, ["GOCSPX-wrong-secret-value", CLIENT_SECRET, REFRESH, STALE_ACCESS]);
    expect(everything).toContain("google-acme");
  });

  it("an access token echoed by the API into a tool's error is redacted from the result and the journal", async () => {
    await seed();
    const { invoke, journal } = gateOver(runtimeOver(openVault()));
    server.echoBearer = true;
    const { value: result, output } = await captureOutput(invoke);
    expect(result).toMatchObject({ status: "error", code: "provider_rejected" });
    expect(server.issued).toHaveLength(1);
    const accessToken = server.issued[0]!;
    expect(JSON.stringify(result)).toContain("[REDACTED]");
    const journaled = JSON.stringify({ audit: await journal.readAudit(), outbox: await journal.listOutbox() });
    expectNoSecret(JSON.stringify(result) + journaled + output, [accessToken, REFRESH, CLIENT_SECRET]);
  });
});

describe("google connector: configuration", () => {
  it("refuses a plain-http token endpoint off loopback, and missing credentials", () => {
    expect(() => createGoogleConnector({ clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, tokenUrl: "http://tokens.example.test/token" })).toThrow(/https/);
    expect(() => createGoogleConnector({ clientId: "", clientSecret: CLIENT_SECRET })).toThrow(/clientId/);
    expect(() => createGoogleConnector({ clientId: CLIENT_ID, clientSecret: "" })).toThrow(/clientSecret/);
  });
});
