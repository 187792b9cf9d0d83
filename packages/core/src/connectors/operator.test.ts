import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ToolError } from "../errors.js";
import { createMemoryVault } from "./memory-vault.js";
import { addConnectionFromFile, connectionStatus, listConnections, parseTokenJson, removeConnection, setDefaultConnection } from "./operator.js";

const T0 = 1_800_000_000_000;
let dir: string;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "toolgate-operator-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function tokenFile(name: string, body: unknown): string {
  const path = join(dir, name);
  writeFileSync(path, typeof body === "string" ? body : JSON.stringify(body), { mode: 0o600 });
  return path;
}

describe("operator API: refusals first", () => {
  it("refuses token files that are not JSON, lack tokens or scopes — naming fields, never values", async () => {
    const vault = createMemoryVault();
    const connection = { id: "g1", provider: "google" };
    const cases: [unknown, RegExp][] = [
      ["{ not json secret-value-123", /is not JSON/],
      [{ token_type: "Bearer", scope: "a" }, /neither an access token nor a refresh token/],
      [{ access_token: "secret-value-123", expires_in: 3600 }, /does not say which scopes/],
      [{ access_token: 12345678, scope: "a" }, /access_token: /],
      [{ access_token: "secret-value-123", scope: "a", expiry_date: "soon" }, /expiry_date/],
    ];
    for (const [body, pattern] of cases) {
      const error = await addConnectionFromFile({ vault, file: tokenFile("t.json", body), connection }).catch((e: unknown) => e);
      expect(ToolError.is(error, "config_invalid")).toBe(true);
      expect((error as Error).message).toMatch(pattern);
      expect((error as Error).message).not.toContain("secret-value-123");
      expect((error as Error).message).not.toContain("12345678");
    }
    await expect(addConnectionFromFile({ vault, file: join(dir, "missing.json"), connection })).rejects.toThrow(/cannot be read \(ENOENT\)/);
    await expect(
      addConnectionFromFile({
        vault,
        file: tokenFile("bad-id.json", { access_token: "x-secret-1", scope: "a" }),
        connection: { id: "../etc", provider: "google" },
      }),
    ).rejects.toThrow(/id: /);
    expect(await vault.list()).toEqual([]);
  });

  it("refuses an expiry no date can hold (a hostile token answer's expires_in), so nothing is stored that status cannot show", async () => {
    const vault = createMemoryVault();
    const connection = { id: "g2", provider: "google" };
    for (const expiry of [{ expires_in: 1e13 }, { expires_in: -1e13 }, { expires_in: "99999999999999" }, { expiresAt: 9e15 }, { expires_at: 1e300 }]) {
      const error = await addConnectionFromFile({
        vault,
        file: tokenFile("far.json", { access_token: "secret-value-9", scope: "a", ...expiry }),
        connection,
      }).catch((e: unknown) => e);
      expect(ToolError.is(error, "config_invalid"), JSON.stringify(expiry)).toBe(true);
      expect((error as Error).message).toMatch(/unreadable expiry/);
    }
    expect(await vault.list()).toEqual([]);
    // The last instant a date can hold is still one (a token that never expires).
    expect(parseTokenJson(JSON.stringify({ access_token: "secret-value-9", scope: "a", expiresAt: 8_640_000_000_000_000 }), { now: T0 }).expiresAt).toBe(
      8_640_000_000_000_000,
    );
  });

  it("scopes given by the operator may only narrow what the file says", () => {
    expect(() => parseTokenJson(JSON.stringify({ access_token: "secret-value-1", scope: "a b" }), { now: T0, scopes: ["a", "c"] })).toThrow(/not granted c/);
    expect(parseTokenJson(JSON.stringify({ access_token: "secret-value-1", scope: "a b" }), { now: T0, scopes: ["a"] }).scopes).toEqual(["a"]);
  });
});

describe("operator API: add, list, status", () => {
  it("adds a connection from an OAuth token response and reports its status without secrets", async () => {
    const vault = createMemoryVault({ clock: () => T0 });
    const file = tokenFile("google.json", {
      access_token: "ya29.secret-access",
      refresh_token: "1//secret-refresh",
      expires_in: 3599,
      scope: "https://www.googleapis.com/auth/gmail.readonly https://www.googleapis.com/auth/calendar.events",
      token_type: "Bearer",
      client_secret: "secret-client-value",
    });
    const status = await addConnectionFromFile({
      vault,
      file,
      connection: { id: "google-acme", provider: "google", tenant: "acme", isDefault: true },
      clock: () => T0,
    });
    expect(status).toEqual({
      id: "google-acme",
      provider: "google",
      tenant: "acme",
      isDefault: true,
      scopes: ["https://www.googleapis.com/auth/gmail.readonly", "https://www.googleapis.com/auth/calendar.events"],
      tokenType: "Bearer",
      expiresAt: new Date(T0 + 3_599_000).toISOString(),
      expired: false,
      refreshable: true,
      state: "ready",
      updatedAt: new Date(T0).toISOString(),
    });
    expect(await vault.readTokens("google-acme")).toEqual({
      accessToken: "ya29.secret-access",
      refreshToken: "1//secret-refresh",
      expiresAt: T0 + 3_599_000,
      scopes: status.scopes,
      tokenType: "Bearer",
    });
    const everything = JSON.stringify(await listConnections(vault, { clock: () => T0 }));
    expect(everything).not.toMatch(/secret/);
  });

  it("reports ready, will_refresh and reauth_required on the runtime's leeway", async () => {
    const vault = createMemoryVault({ clock: () => T0 });
    await addConnectionFromFile({
      vault,
      file: tokenFile("a.json", {
        accessToken: "secret-a-123",
        refreshToken: "secret-r-123",
        expiresAt: new Date(T0 + 30_000).toISOString(),
        scopes: ["s"],
        tokenType: "Bearer",
      }),
      connection: { id: "soon", provider: "mail" },
    });
    await addConnectionFromFile({
      vault,
      file: tokenFile("b.json", { access_token: "secret-b-123", expiry_date: T0 - 1, scope: "s" }),
      connection: { id: "dead", provider: "mail", principal: "p" },
    });
    await addConnectionFromFile({
      vault,
      file: tokenFile("c.json", { refresh_token: "secret-r-456", type: "authorized_user", client_id: "x" }),
      connection: { id: "refresh-only", provider: "mail", tenant: "t" },
      scopes: ["s"],
    });
    await addConnectionFromFile({
      vault,
      file: tokenFile("d.json", { access_token: "secret-d-123", expires_in: "7200", scope: "s" }),
      connection: { id: "fine", provider: "notion" },
      clock: () => T0,
    });

    const byId = Object.fromEntries((await listConnections(vault, { clock: () => T0 })).map((s) => [s.id, s]));
    expect(byId["soon"]).toMatchObject({ state: "will_refresh", expired: false, refreshable: true });
    expect(byId["dead"]).toMatchObject({ state: "reauth_required", expired: true, refreshable: false });
    expect(byId["refresh-only"]).toMatchObject({ state: "will_refresh", expired: true, expiresAt: null });
    expect(byId["fine"]).toMatchObject({ state: "ready", expired: false });
    expect((await connectionStatus(vault, "soon", { clock: () => T0, leewayMs: 10_000 })).state).toBe("ready");
    await expect(connectionStatus(vault, "nope")).rejects.toMatchObject({ code: "connector_unavailable" });
  });

  it("moves the default and removes connections", async () => {
    const vault = createMemoryVault();
    const file = tokenFile("t.json", { access_token: "secret-value-1", scope: "s", expires_in: 60 });
    await addConnectionFromFile({ vault, file, connection: { id: "a", provider: "mail", isDefault: true } });
    await addConnectionFromFile({ vault, file, connection: { id: "b", provider: "mail", tenant: "t" } });
    await setDefaultConnection(vault, "b");
    expect((await listConnections(vault)).map((s) => [s.id, s.isDefault, s.tenant ?? null])).toEqual([
      ["a", false, null],
      ["b", true, "t"],
    ]);
    expect(await vault.readTokens("a")).toMatchObject({ accessToken: "secret-value-1" });
    expect(await removeConnection(vault, "a")).toBe(true);
    await expect(setDefaultConnection(vault, "a")).rejects.toMatchObject({ code: "connector_unavailable" });
  });
});
