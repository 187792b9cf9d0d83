import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { ConnectorOpenRequest } from "../context.js";
import { ToolError } from "../errors.js";
import { createRedactor } from "../redactor.js";
import { createFileVault, generateVaultKey } from "./file-vault.js";
import { createMemoryVault } from "./memory-vault.js";
import { createConnectorRuntime } from "./runtime.js";
import {
  TokenRefreshError,
  type AccessGrant,
  type Connection,
  type ConnectorLogEvent,
  type ConnectorProvider,
  type RefreshedTokens,
  type TokenSet,
  type TokenVault,
} from "./types.js";

const T0 = 1_800_000_000_000;
const HOUR = 3_600_000;
const CLIENT_SECRET = "client-secret-abcdef";

/** A vault whose every call is recorded, so tests can prove what was (not) read and in what order. */
function recording(inner: TokenVault, calls: string[]): TokenVault {
  return {
    location: inner.location,
    list: () => (calls.push("list"), inner.list()),
    readTokens: (id) => (calls.push(`readTokens:${id}`), inner.readTokens(id)),
    put: (c, t) => (calls.push(`put:${c.id}`), inner.put(c, t)),
    writeTokens: (id, t) => (calls.push(`writeTokens:${id}`), inner.writeTokens(id, t)),
    remove: (id) => (calls.push(`remove:${id}`), inner.remove(id)),
  };
}

interface FakeClient {
  readonly kind: "fake-client";
  readonly grant: AccessGrant;
}

/** A provider adapter with a scripted token endpoint; counts refreshes and records the order of events. */
function fakeProvider(script: { answer?: (refreshToken: string, n: number) => RefreshedTokens | Promise<RefreshedTokens>; events?: string[] } = {}) {
  const state = { refreshes: 0, refreshTokensSeen: [] as string[], clients: [] as AccessGrant[] };
  let release: (() => void) | undefined;
  const gate = { wait: Promise.resolve() as Promise<void> };
  const provider: ConnectorProvider<FakeClient> = {
    provider: "mail",
    secrets: [CLIENT_SECRET],
    async refresh(request) {
      state.refreshes++;
      state.refreshTokensSeen.push(request.refreshToken);
      script.events?.push("refresh");
      await gate.wait;
      const n = state.refreshes;
      return script.answer
        ? script.answer(request.refreshToken, n)
        : { accessToken: `access-refreshed-${n}`, refreshToken: `refresh-rotated-${n}`, expiresInSeconds: 3600 };
    },
    createClient(grant) {
      script.events?.push(`client:${grant.accessToken}`);
      state.clients.push(grant);
      return { kind: "fake-client", grant };
    },
  };
  const hold = () => {
    gate.wait = new Promise<void>((resolve) => (release = resolve));
    return () => release?.();
  };
  return { provider, state, hold };
}

const mailConnection: Connection = { id: "mail-acme", provider: "mail", tenant: "acme" };
const goodTokens = (overrides: Partial<TokenSet> = {}): TokenSet => ({
  accessToken: "access-original-1",
  refreshToken: "refresh-original-1",
  expiresAt: T0 + HOUR,
  scopes: ["mail.read", "mail.send"],
  tokenType: "Bearer",
  ...overrides,
});

function request(overrides: Partial<ConnectorOpenRequest> = {}, secrets: string[] = []): ConnectorOpenRequest {
  return {
    provider: "mail",
    scopes: ["mail.read"],
    principal: "agent-1",
    tenant: "acme",
    toolId: "mail.search_messages",
    signal: new AbortController().signal,
    registerSecret: (value) => secrets.push(value),
    ...overrides,
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

describe("connector runtime: refusals before any token is read", () => {
  it("scope_missing names the missing scopes, and the vault's tokens were never read", async () => {
    const calls: string[] = [];
    const vault = recording(createMemoryVault({ connections: [{ connection: mailConnection, tokens: goodTokens({ scopes: ["mail.read"] }) }] }), calls);
    const { provider, state } = fakeProvider();
    const runtime = createConnectorRuntime({ vault, providers: [provider], clock: () => T0 });
    const secrets: string[] = [];
    const error = await failure(runtime.open(request({ scopes: ["mail.read", "mail.send", "mail.delete"] }, secrets)));
    expect(error.code).toBe("scope_missing");
    expect(error.message).toContain("mail.send, mail.delete");
    expect(error.message).toContain("mail-acme");
    expect(error.details).toMatchObject({ missing: ["mail.send", "mail.delete"], connectionId: "mail-acme" });
    expect(calls).toEqual(["list"]);
    expect(state.refreshes).toBe(0);
    expect(secrets).not.toContain("access-original-1");
  });

  it("scope_missing comes before refresh, even when the token has expired", async () => {
    const calls: string[] = [];
    const vault = recording(
      createMemoryVault({ connections: [{ connection: mailConnection, tokens: goodTokens({ scopes: ["mail.read"], expiresAt: T0 - 1 }) }] }),
      calls,
    );
    const { provider, state } = fakeProvider();
    const runtime = createConnectorRuntime({ vault, providers: [provider], clock: () => T0 });
    expect((await failure(runtime.open(request({ scopes: ["mail.send"] })))).code).toBe("scope_missing");
    expect(calls).toEqual(["list"]);
    expect(state.refreshes).toBe(0);
  });

  it("an unknown provider or no serving connection is connector_unavailable, without reading the vault's tokens", async () => {
    const calls: string[] = [];
    const vault = recording(createMemoryVault({ connections: [{ connection: mailConnection, tokens: goodTokens() }] }), calls);
    const runtime = createConnectorRuntime({ vault, providers: [fakeProvider().provider], clock: () => T0 });
    const noProvider = await failure(runtime.open(request({ provider: "calendar" })));
    expect(noProvider).toMatchObject({ code: "connector_unavailable" });
    expect(noProvider.message).toMatch(/no connector provider named calendar/);
    const otherTenant = await failure(runtime.open(request({ tenant: "globex" })));
    expect(otherTenant.code).toBe("connector_unavailable");
    expect(otherTenant.message).toMatch(/no mail connection serves principal agent-1 in tenant globex/);
    expect(calls.filter((c) => c.startsWith("readTokens"))).toEqual([]);
  });

  it("an aborted signal is refused before anything is read", async () => {
    const calls: string[] = [];
    const vault = recording(createMemoryVault({ connections: [{ connection: mailConnection, tokens: goodTokens() }] }), calls);
    const runtime = createConnectorRuntime({ vault, providers: [fakeProvider().provider], clock: () => T0 });
    const controller = new AbortController();
    controller.abort();
    expect((await failure(runtime.open(request({ signal: controller.signal })))).code).toBe("cancelled");
    expect(calls).toEqual([]);
  });
});

describe("connector runtime: re-authorization", () => {
  it("an expired token without a refresh token → connector_reauth_required naming the connection, no stack trace", async () => {
    const events: ConnectorLogEvent[] = [];
    const vault = createMemoryVault({
      connections: [{ connection: mailConnection, tokens: { accessToken: "access-only-0001", expiresAt: T0 - 1, scopes: ["mail.read"], tokenType: "Bearer" } }],
    });
    const { provider, state } = fakeProvider();
    const runtime = createConnectorRuntime({ vault, providers: [provider], clock: () => T0, log: (e) => events.push(e) });
    const error = await failure(runtime.open(request()));
    expect(error.code).toBe("connector_reauth_required");
    expect(error.message).toBe("connection mail-acme (mail) must be authorized again: its access token has expired and it has no refresh token");
    expect(error.message).not.toMatch(/\n\s+at /);
    expect(state.refreshes).toBe(0);
    expect(events.map((e) => e.type)).toEqual(["connector.reauth_required"]);
  });

  it("a token inside the leeway but not yet expired is still used when it cannot be refreshed", async () => {
    const vault = createMemoryVault({
      connections: [
        { connection: mailConnection, tokens: { accessToken: "access-only-0002", expiresAt: T0 + 30_000, scopes: ["mail.read"], tokenType: "Bearer" } },
      ],
    });
    const { provider, state } = fakeProvider();
    const runtime = createConnectorRuntime({ vault, providers: [provider], clock: () => T0 });
    const client = await (await runtime.open(request())).client<FakeClient>();
    expect(client.grant.accessToken).toBe("access-only-0002");
    expect(state.refreshes).toBe(0);
  });

  it("a revoked grant (invalid_grant) → connector_reauth_required; the echoed secret reaches no message, cause or log", async () => {
    const events: ConnectorLogEvent[] = [];
    const vault = createMemoryVault({ connections: [{ connection: mailConnection, tokens: goodTokens({ expiresAt: T0 }) }] });
    const { provider } = fakeProvider({
      answer: (refreshToken) => {
        throw new TokenRefreshError("invalid_grant", `provider said: token ${refreshToken} revoked (secret ${CLIENT_SECRET})`, {
          status: 400,
          oauthError: "invalid_grant",
        });
      },
    });
    const logged: string[] = [];
    const runtime = createConnectorRuntime({
      vault,
      providers: [provider],
      clock: () => T0,
      log: (e) => events.push(e),
      registerSecret: (s) => logged.push(s),
    });
    const secrets: string[] = [];
    const error = await failure(runtime.open(request({}, secrets)));
    expect(error.code).toBe("connector_reauth_required");
    expect(error.message).toBe(
      "connection mail-acme (mail) must be authorized again: the provider refused its grant (HTTP 400, invalid_grant); it was revoked or has expired",
    );
    const everything = JSON.stringify({ message: error.message, details: error.details, cause: String(error.cause), events });
    for (const secret of ["refresh-original-1", CLIENT_SECRET, "access-original-1"]) expect(everything).not.toContain(secret);
    expect(secrets).toEqual(expect.arrayContaining(["refresh-original-1", CLIENT_SECRET, "access-original-1"]));
    expect(logged).toEqual(expect.arrayContaining(["refresh-original-1", CLIENT_SECRET]));
    expect(events.map((e) => e.type)).toEqual(["connector.refresh_started", "connector.reauth_required"]);
    // Nothing was written: the stored tokens are as they were.
    expect(await vault.readTokens("mail-acme")).toEqual(goodTokens({ expiresAt: T0 }));
  });

  it("other refresh failures map to provider codes, with messages built by the runtime", async () => {
    const cases: [unknown, string][] = [
      [new TokenRefreshError("invalid_client", "x", { status: 401, oauthError: "invalid_client" }), "provider_rejected"],
      [new TokenRefreshError("unavailable", "x", { status: 503 }), "provider_unavailable"],
      [new Error(`socket hang up near ${CLIENT_SECRET}`), "provider_unavailable"],
    ];
    for (const [thrown, code] of cases) {
      const vault = createMemoryVault({ connections: [{ connection: mailConnection, tokens: goodTokens({ expiresAt: T0 }) }] });
      const { provider } = fakeProvider({ answer: () => Promise.reject(thrown) });
      const runtime = createConnectorRuntime({ vault, providers: [provider], clock: () => T0 });
      const error = await failure(runtime.open(request()));
      expect(error.code).toBe(code);
      expect(error.message).toContain("mail-acme");
      expect(`${error.message} ${String(error.cause)}`).not.toContain(CLIENT_SECRET);
    }
  });
});

describe("connector runtime: refresh", () => {
  it("refreshes only when the token expires within the leeway (default 60 s, injected clock)", async () => {
    let now = T0;
    const vault = createMemoryVault({ connections: [{ connection: mailConnection, tokens: goodTokens({ expiresAt: T0 + 60_001 }) }] });
    const { provider, state } = fakeProvider();
    const runtime = createConnectorRuntime({ vault, providers: [provider], clock: () => now });
    expect((await (await runtime.open(request())).client<FakeClient>()).grant.accessToken).toBe("access-original-1");
    expect(state.refreshes).toBe(0);
    now = T0 + 1; // now exactly 60 s before expiry: inside the leeway
    expect((await (await runtime.open(request())).client<FakeClient>()).grant.accessToken).toBe("access-refreshed-1");
    expect(state.refreshes).toBe(1);
    expect((await vault.readTokens("mail-acme"))?.expiresAt).toBe(now + HOUR);
  });

  it("honours a custom leeway", async () => {
    const vault = createMemoryVault({ connections: [{ connection: mailConnection, tokens: goodTokens({ expiresAt: T0 + 5 * 60_000 }) }] });
    const { provider, state } = fakeProvider();
    await createConnectorRuntime({ vault, providers: [provider], clock: () => T0, leewayMs: 10 * 60_000 }).open(request());
    expect(state.refreshes).toBe(1);
  });

  it("twenty concurrent opens of a stale connection → exactly one refresh, and all get the new token", async () => {
    const vault = createMemoryVault({ connections: [{ connection: mailConnection, tokens: goodTokens({ expiresAt: T0 - 1 }) }] });
    const { provider, state, hold } = fakeProvider();
    const release = hold();
    const runtime = createConnectorRuntime({ vault, providers: [provider], clock: () => T0 });
    const opening = Array.from({ length: 20 }, () => runtime.open(request()));
    await new Promise((resolve) => setTimeout(resolve, 10));
    release();
    const handles = await Promise.all(opening);
    const clients = await Promise.all(handles.map((h) => h.client<FakeClient>()));
    expect(state.refreshes).toBe(1);
    expect(new Set(clients.map((c) => c.grant.accessToken))).toEqual(new Set(["access-refreshed-1"]));
  });

  it("one caller's cancellation does not cancel the shared refresh", async () => {
    const vault = createMemoryVault({ connections: [{ connection: mailConnection, tokens: goodTokens({ expiresAt: T0 - 1 }) }] });
    const { provider, state, hold } = fakeProvider();
    const release = hold();
    const runtime = createConnectorRuntime({ vault, providers: [provider], clock: () => T0 });
    const controller = new AbortController();
    const first = runtime.open(request({ signal: controller.signal }));
    const second = runtime.open(request());
    await new Promise((resolve) => setTimeout(resolve, 10));
    controller.abort();
    expect((await failure(first)).code).toBe("cancelled");
    release();
    expect((await (await second).client<FakeClient>()).grant.accessToken).toBe("access-refreshed-1");
    expect(state.refreshes).toBe(1);
  });

  it("persists the new token set before it is used, and never uses a token it could not persist", async () => {
    const events: string[] = [];
    const inner = createMemoryVault({ connections: [{ connection: mailConnection, tokens: goodTokens({ expiresAt: T0 - 1 }) }] });
    let failWrites = true;
    const vault: TokenVault = {
      ...inner,
      location: inner.location,
      list: () => inner.list(),
      readTokens: (id) => inner.readTokens(id),
      writeTokens: async (id, tokens) => {
        events.push(`persist:${tokens.accessToken}`);
        if (failWrites) throw new ToolError("config_invalid", "vault memory could not be written");
        return inner.writeTokens(id, tokens);
      },
    };
    const { provider } = fakeProvider({ events });
    const runtime = createConnectorRuntime({ vault, providers: [provider], clock: () => T0 });
    expect((await failure(runtime.open(request()))).code).toBe("config_invalid");
    expect(events).toEqual(["refresh", "persist:access-refreshed-1"]);
    failWrites = false;
    events.length = 0;
    await (await runtime.open(request())).client();
    expect(events).toEqual(["refresh", "persist:access-refreshed-2", "client:access-refreshed-2"]);
  });

  it("keeps the stored refresh token when the refresh response omits it; takes a rotated one when given", async () => {
    let now = T0;
    const vault = createMemoryVault({ connections: [{ connection: mailConnection, tokens: goodTokens({ expiresAt: T0 - 1 }) }] });
    const { provider, state } = fakeProvider({
      answer: (_rt, n) =>
        n === 1
          ? { accessToken: "access-no-rotation", expiresInSeconds: 120 }
          : { accessToken: "access-rotated", refreshToken: "refresh-rotated-2", expiresInSeconds: 3600, scopes: ["mail.read", "mail.send"] },
    });
    const runtime = createConnectorRuntime({ vault, providers: [provider], clock: () => now });
    await runtime.open(request());
    expect(await vault.readTokens("mail-acme")).toEqual({ ...goodTokens(), accessToken: "access-no-rotation", expiresAt: T0 + 120_000 });
    now = T0 + 70_000;
    await runtime.open(request());
    expect(state.refreshTokensSeen).toEqual(["refresh-original-1", "refresh-original-1"]);
    expect((await vault.readTokens("mail-acme"))?.refreshToken).toBe("refresh-rotated-2");
  });

  it("a refresh that narrows the granted scopes is caught after the refresh (scope_missing)", async () => {
    const vault = createMemoryVault({ connections: [{ connection: mailConnection, tokens: goodTokens({ expiresAt: T0 - 1 }) }] });
    const { provider } = fakeProvider({ answer: () => ({ accessToken: "access-narrow-01", expiresInSeconds: 3600, scopes: ["mail.send"] }) });
    const runtime = createConnectorRuntime({ vault, providers: [provider], clock: () => T0 });
    const error = await failure(runtime.open(request()));
    expect(error.code).toBe("scope_missing");
    expect((await vault.list())[0]!.scopes).toEqual(["mail.send"]);
  });

  it("persists across a restart: a new runtime over the same file vault uses the refreshed token without refreshing", async () => {
    const root = mkdtempSync(join(tmpdir(), "toolgate-runtime-"));
    try {
      mkdirSync(join(root, "keys"), { mode: 0o700 });
      writeFileSync(join(root, "keys", "vault.key"), generateVaultKey(), { mode: 0o600 });
      const open = () => createFileVault({ path: join(root, "data", "tokens.vault"), key: { file: join(root, "keys", "vault.key") } });
      await open().put(mailConnection, goodTokens({ expiresAt: T0 - 1 }));

      const first = fakeProvider();
      await createConnectorRuntime({ vault: open(), providers: [first.provider], clock: () => T0 }).open(request());
      expect(first.state.refreshes).toBe(1);

      const second = fakeProvider();
      const handle = await createConnectorRuntime({ vault: open(), providers: [second.provider], clock: () => T0 + 1000 }).open(request());
      expect((await handle.client<FakeClient>()).grant.accessToken).toBe("access-refreshed-1");
      expect(second.state.refreshes).toBe(0);
      expect((await open().readTokens("mail-acme"))?.refreshToken).toBe("refresh-rotated-1");
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});

describe("connector runtime: what tools receive", () => {
  it("a handle with the adapter's client, never a token string; every secret registered", async () => {
    const vault = createMemoryVault({ connections: [{ connection: mailConnection, tokens: goodTokens() }] });
    const { provider, state } = fakeProvider();
    const runtime = createConnectorRuntime({ vault, providers: [provider], clock: () => T0 });
    const secrets: string[] = [];
    const handle = await runtime.open(request({}, secrets));
    expect(handle).toMatchObject({ provider: "mail", connectionId: "mail-acme", scopes: ["mail.read"] });
    expect(Object.isFrozen(handle)).toBe(true);
    const redactor = createRedactor(secrets);
    expect(redactor.contains(JSON.stringify(handle))).toBe(false);
    expect(Object.values(handle).some((v) => typeof v === "string" && /access|refresh/.test(v))).toBe(false);
    const client = await handle.client<FakeClient>();
    expect(await handle.client()).toBe(client);
    expect(state.clients).toHaveLength(1);
    expect(secrets).toEqual(expect.arrayContaining([CLIENT_SECRET, "access-original-1", "refresh-original-1"]));
  });

  it("chooses the most specific connection, then the default; refuses a tie", async () => {
    const tokens = goodTokens();
    const vault = createMemoryVault({
      connections: [
        { connection: { id: "shared", provider: "mail", isDefault: true }, tokens },
        { connection: { id: "spare", provider: "mail" }, tokens },
        { connection: { id: "acme", provider: "mail", tenant: "acme" }, tokens },
        { connection: { id: "acme-alice", provider: "mail", tenant: "acme", principal: "alice" }, tokens },
        { connection: { id: "bob-anywhere", provider: "mail", principal: "bob" }, tokens },
        { connection: { id: "globex-1", provider: "mail", tenant: "globex" }, tokens },
        { connection: { id: "globex-2", provider: "mail", tenant: "globex" }, tokens },
      ],
    });
    const runtime = createConnectorRuntime({ vault, providers: [fakeProvider().provider], clock: () => T0 });
    const pick = async (principal: string, tenant: string) => (await runtime.open(request({ principal, tenant }))).connectionId;
    expect(await pick("alice", "acme")).toBe("acme-alice");
    expect(await pick("carol", "acme")).toBe("acme");
    expect(await pick("bob", "acme")).toBe("bob-anywhere");
    expect(await pick("carol", "initech")).toBe("shared");
    const tie = await failure(runtime.open(request({ principal: "carol", tenant: "globex" })));
    expect(tie.code).toBe("connector_unavailable");
    expect(tie.message).toMatch(/globex-1 and globex-2 both serve/);
  });

  it("a vault refuses a second default for a provider", async () => {
    const vault = createMemoryVault();
    await vault.put({ id: "a", provider: "mail", isDefault: true }, goodTokens());
    await expect(vault.put({ id: "b", provider: "mail", isDefault: true }, goodTokens())).rejects.toThrow(/already has a default connection \(a\)/);
    await vault.put({ id: "c", provider: "notion", isDefault: true }, goodTokens());
  });

  it("refuses a malformed configuration at start-up", () => {
    const vault = createMemoryVault();
    const { provider } = fakeProvider();
    expect(() => createConnectorRuntime({ vault, providers: [provider, provider] })).toThrow(/two connector providers are named mail/);
    expect(() => createConnectorRuntime({ vault, providers: [provider], leewayMs: -1 })).toThrow(ToolError);
  });
});
