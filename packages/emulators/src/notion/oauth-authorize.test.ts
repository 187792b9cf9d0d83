import { createHash, randomBytes } from "node:crypto";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { startNotionEmulator, type NotionEmulator } from "./server.js";

const client = { clientId: "notion-client-1", clientSecret: `secret_${randomBytes(12).toString("hex")}` };

describe("notion emulator: the authorization endpoint (code flow, PKCE S256, loopback redirects)", () => {
  let now = Date.UTC(2025, 2, 10, 12);
  let emulator: NotionEmulator;
  const verifier = randomBytes(32).toString("base64url");
  const challenge = createHash("sha256").update(verifier).digest("base64url");
  const redirectUri = "http://[::1]:40001/callback";

  beforeEach(async () => {
    now = Date.UTC(2025, 2, 10, 12);
    emulator = await startNotionEmulator({
      clock: () => now,
      seed: { integrations: [{ id: "public-app", capabilities: ["read_content", "insert_content"], oauth: client }] },
    });
  });
  afterEach(() => emulator.close());

  const authorizeUrl = (over: Record<string, string | null> = {}): string => {
    const url = new URL(emulator.authorizeUrl);
    const params: Record<string, string | null> = {
      client_id: client.clientId,
      redirect_uri: redirectUri,
      response_type: "code",
      owner: "user",
      state: "st-n",
      code_challenge: challenge,
      code_challenge_method: "S256",
      ...over,
    };
    for (const [k, v] of Object.entries(params)) if (v !== null) url.searchParams.set(k, v);
    return url.href;
  };
  const consent = async (decision: "allow" | "deny"): Promise<URL> => {
    const html = await (await fetch(authorizeUrl())).text();
    const form = new URLSearchParams({ consent: /name="consent" value="([^"]+)"/.exec(html)![1]!, decision });
    for (const m of html.matchAll(/name="scope" value="([^"]+)"/g)) form.append("scope", m[1]!);
    const answer = await fetch(emulator.authorizeUrl, { method: "POST", body: form, redirect: "manual" });
    expect(answer.status).toBe(302);
    return new URL(answer.headers.get("location")!);
  };
  const exchange = async (code: string, over: Record<string, unknown> = {}) => {
    const r = await fetch(`${emulator.url}/v1/oauth/token`, {
      method: "POST",
      headers: { authorization: `Basic ${Buffer.from(`${client.clientId}:${client.clientSecret}`).toString("base64")}`, "content-type": "application/json" },
      body: JSON.stringify({ grant_type: "authorization_code", code, redirect_uri: redirectUri, code_verifier: verifier, ...over }),
    });
    return { status: r.status, body: (await r.json()) as Record<string, unknown> };
  };

  it("refuses a non-loopback or unregistered redirect URI and an unknown client with an error page, no redirect", async () => {
    for (const uri of ["http://localhost:40001/callback", "https://[::1]:40001/callback", "http://example.test/callback", "http://[::1]:40001/x"]) {
      const r = await fetch(authorizeUrl({ redirect_uri: uri }), { redirect: "manual" });
      expect(r.status, uri).toBe(400);
      expect(r.headers.get("location")).toBeNull();
    }
    expect((await fetch(authorizeUrl({ client_id: "nobody" }), { redirect: "manual" })).status).toBe(401);
  });

  it("refuses PKCE plain and a missing challenge by redirect with the state", async () => {
    for (const over of [{ code_challenge_method: "plain", code_challenge: verifier }, { code_challenge: null }]) {
      const r = await fetch(authorizeUrl(over), { redirect: "manual" });
      const location = new URL(r.headers.get("location")!);
      expect(location.searchParams.get("error")).toBe("invalid_request");
      expect(location.searchParams.get("state")).toBe("st-n");
    }
  });

  it("lists the integration's capabilities; deny redirects with access_denied", async () => {
    const html = await (await fetch(authorizeUrl())).text();
    expect(html).toContain("read_content");
    expect(html).toContain("insert_content");
    const back = await consent("deny");
    expect(back.searchParams.get("error")).toBe("access_denied");
    expect(back.searchParams.get("code")).toBeNull();
  });

  it("allow: the code, with the verifier and Basic client auth, gives a token that works; a replay is refused", async () => {
    const back = await consent("allow");
    expect(back.searchParams.get("state")).toBe("st-n");
    const code = back.searchParams.get("code")!;
    const answer = await exchange(code);
    expect(answer.status).toBe(200);
    const me = await fetch(`${emulator.url}/v1/users/me`, {
      headers: { authorization: `Bearer ${String(answer.body["access_token"])}`, "notion-version": "2025-09-03" },
    });
    expect(me.status).toBe(200);
    expect((await exchange(code)).status).toBe(400);
  });

  it("refuses a wrong or missing verifier, a wrong redirect URI (the code is spent either way) and an expired code", async () => {
    for (const over of [{ code_verifier: randomBytes(32).toString("base64url") }, { code_verifier: undefined }, { redirect_uri: "http://[::1]:1/callback" }]) {
      const code = (await consent("allow")).searchParams.get("code")!;
      const refused = await exchange(code, over);
      expect(refused.status, JSON.stringify(over)).toBe(400);
      expect(refused.body["access_token"]).toBeUndefined();
      expect((await exchange(code)).status).toBe(400);
    }
    const late = (await consent("allow")).searchParams.get("code")!;
    now += 61_000;
    expect((await exchange(late)).status).toBe(400);
  });
});
