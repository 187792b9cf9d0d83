import { ToolError, type ConnectorOpenRequest } from "@toolgate/core";
import { connectionStatus, createConnectorRuntime, createMemoryVault } from "@toolgate/core/connectors";
import { startNotionEmulator, type NotionEmulator } from "@toolgate/emulators";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createNotionConnector, exchangeNotionCode, NEVER_EXPIRES, NOTION_CAPABILITIES, notionIntegrationTokens, type NotionAccess } from "./index.js";

const CLIENT_ID = "toolgate-client";
const CLIENT_SECRET = "client-secret-0123456789";
const REDIRECT = "http://127.0.0.1:9/callback";

let emulator: NotionEmulator;
beforeEach(async () => {
  emulator = await startNotionEmulator({
    seed: { integrations: [{ id: "public", name: "Public", oauth: { clientId: CLIENT_ID, clientSecret: CLIENT_SECRET } }] },
  });
});
afterEach(() => emulator.close());

function openRequest(secrets: string[]): ConnectorOpenRequest {
  return {
    provider: "notion",
    scopes: ["read_content"],
    principal: "agent-1",
    tenant: "acme",
    toolId: "notion.read_page",
    signal: new AbortController().signal,
    registerSecret: (s) => void secrets.push(s),
  };
}

const exchange = (code: string, clientSecret = CLIENT_SECRET) =>
  exchangeNotionCode({ code, redirectUri: REDIRECT, clientId: CLIENT_ID, clientSecret, capabilities: ["read_content"], baseUrl: emulator.url });

describe("notion connector: refusals first", () => {
  it("refuses plain http off loopback, and half an OAuth client", async () => {
    expect(() => createNotionConnector({ baseUrl: "http://api.example.com" })).toThrow(expect.objectContaining({ code: "config_invalid" }));
    expect(() => createNotionConnector({ clientId: CLIENT_ID })).toThrow(/both clientId and clientSecret/);
    await expect(
      exchangeNotionCode({ code: "x", clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, capabilities: [], baseUrl: "http://api.example.com" }),
    ).rejects.toMatchObject({ code: "config_invalid" });
    expect(() => notionIntegrationTokens({ token: "", capabilities: [] })).toThrow(ToolError);
  });

  it("a code exchange with the wrong client secret is provider_rejected, and its message holds no secret", async () => {
    const code = emulator.authorize("public", { redirectUri: REDIRECT });
    const error = await exchange(code, "wrong-secret-0123456789").catch((e: unknown) => e);
    expect(ToolError.is(error, "provider_rejected")).toBe(true);
    expect(String((error as Error).message)).not.toMatch(/secret-0123456789|wrong-secret/);
  });

  it("a refresh token Notion no longer accepts means the connection must be authorized again", async () => {
    const tokens = await exchange(emulator.authorize("public", { redirectUri: REDIRECT }));
    const vault = createMemoryVault({
      connections: [{ connection: { id: "notion-oauth", provider: "notion" }, tokens: { ...tokens, expiresAt: 0, refreshToken: "nrt_revoked" } }],
    });
    const runtime = createConnectorRuntime({
      vault,
      providers: [createNotionConnector({ baseUrl: emulator.url, clientId: CLIENT_ID, clientSecret: CLIENT_SECRET })],
    });
    await expect(runtime.open(openRequest([]))).rejects.toMatchObject({ code: "connector_reauth_required" });
  });

  it("an integration token is never refreshed: a connector without an OAuth client still serves it", async () => {
    const connector = createNotionConnector({ baseUrl: emulator.url });
    await expect(connector.refresh({ connectionId: "c", refreshToken: "r", scopes: [], signal: new AbortController().signal } as never)).rejects.toMatchObject({
      reason: "invalid_client",
    });
    const tokens = notionIntegrationTokens({ token: "ntn_example_token", capabilities: [...NOTION_CAPABILITIES] });
    expect(tokens.refreshToken).toBeUndefined();
    expect(tokens.expiresAt).toBe(NEVER_EXPIRES);
    // An operator's status prints the expiry as a date: "never" must be one a Date can hold.
    const vault = createMemoryVault({ connections: [{ connection: { id: "team", provider: "notion" }, tokens }] });
    await expect(connectionStatus(vault, "team")).resolves.toMatchObject({ state: "ready", expiresAt: "+275760-09-13T00:00:00.000Z" });
  });
});

describe("notion connector: OAuth through the token runtime", () => {
  it("exchanges a code, refreshes the expired set before use, and hands out a client that reads what was shared", async () => {
    const page = emulator.seedPage({ title: "Team notes", sharedWith: ["public"] });
    const tokens = await exchange(emulator.authorize("public", { redirectUri: REDIRECT }));
    expect(tokens).toMatchObject({ scopes: ["read_content"], expiresAt: NEVER_EXPIRES });
    const vault = createMemoryVault({ connections: [{ connection: { id: "notion-oauth", provider: "notion" }, tokens: { ...tokens, expiresAt: 0 } }] });
    const runtime = createConnectorRuntime({
      vault,
      providers: [createNotionConnector({ baseUrl: emulator.url, clientId: CLIENT_ID, clientSecret: CLIENT_SECRET })],
    });
    const secrets: string[] = [];
    const handle = await runtime.open(openRequest(secrets));
    const access = await handle.client<NotionAccess>();
    expect(access.capabilities).toEqual(["read_content"]);
    const read = await access.client(new AbortController().signal).pages.retrieve({ page_id: page.id });
    expect(read.id).toBe(page.id);
    const stored = await vault.readTokens("notion-oauth");
    expect(stored?.accessToken).not.toBe(tokens.accessToken);
    expect(secrets).toEqual(expect.arrayContaining([CLIENT_SECRET, stored!.accessToken]));
  });
});
