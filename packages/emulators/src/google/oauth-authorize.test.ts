import { createHash, randomBytes } from "node:crypto";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { startGoogleEmulator, type GoogleEmulator } from "./google-emulator.js";

const READ = "https://www.googleapis.com/auth/gmail.readonly";
const SEND = "https://www.googleapis.com/auth/gmail.send";

describe("google emulator: the authorization endpoint (code flow, PKCE S256, loopback redirects)", () => {
  let now = Date.UTC(2025, 2, 10, 12);
  let emulator: GoogleEmulator;
  const verifier = randomBytes(32).toString("base64url");
  const challenge = createHash("sha256").update(verifier).digest("base64url");
  const redirectUri = "http://127.0.0.1:49152/callback";

  beforeEach(async () => {
    now = Date.UTC(2025, 2, 10, 12);
    emulator = await startGoogleEmulator({ clock: () => now });
  });
  afterEach(() => emulator.close());

  const authorizeUrl = (over: Record<string, string | null> = {}): string => {
    const url = new URL(emulator.authorizeUrl);
    const params: Record<string, string | null> = {
      client_id: emulator.client.clientId,
      redirect_uri: redirectUri,
      response_type: "code",
      scope: `${READ} ${SEND}`,
      state: "st-1",
      code_challenge: challenge,
      code_challenge_method: "S256",
      ...over,
    };
    for (const [k, v] of Object.entries(params)) if (v !== null) url.searchParams.set(k, v);
    return url.href;
  };
  /** What a browser does: load the page, submit its form with the boxes still ticked (or those given). */
  const consent = async (decision: "allow" | "deny", scopes?: readonly string[], url = authorizeUrl()): Promise<URL> => {
    const page = await fetch(url);
    expect(page.status).toBe(200);
    const html = await page.text();
    const id = /name="consent" value="([^"]+)"/.exec(html)![1]!;
    const ticked = scopes ?? [...html.matchAll(/name="scope" value="([^"]+)" checked/g)].map((m) => m[1]!);
    const form = new URLSearchParams([["consent", id], ["decision", decision], ...ticked.map((s) => ["scope", s] as [string, string])]);
    const answer = await fetch(new URL("/o/oauth2/v2/auth", emulator.url), { method: "POST", body: form, redirect: "manual" });
    expect(answer.status).toBe(302);
    return new URL(answer.headers.get("location")!);
  };
  const exchange = (code: string, over: Record<string, string | null> = {}) => {
    const fields: Record<string, string | null> = {
      grant_type: "authorization_code",
      code,
      redirect_uri: redirectUri,
      code_verifier: verifier,
      client_id: emulator.client.clientId,
      client_secret: emulator.client.clientSecret,
      ...over,
    };
    const body = new URLSearchParams(Object.entries(fields).filter((e): e is [string, string] => e[1] !== null));
    return fetch(emulator.tokenUrl, { method: "POST", body }).then(async (r) => ({ status: r.status, body: (await r.json()) as Record<string, string> }));
  };

  it("refuses a redirect URI that is not a registered loopback http URI, with an error page and no redirect", async () => {
    const bad = [
      "http://localhost:49152/callback",
      "https://127.0.0.1:49152/callback",
      "http://127.0.0.2:49152/callback",
      "http://10.0.0.1:49152/callback",
      "http://attacker.example/callback",
      "http://127.0.0.1.attacker.example/callback",
      "http://user@127.0.0.1:49152/callback",
      "http://127.0.0.1:49152/other",
      "http://127.0.0.1:49152/callback?next=x",
      "http://127.0.0.1:49152/callback#x",
      "",
    ];
    for (const uri of bad) {
      const r = await fetch(authorizeUrl({ redirect_uri: uri }), { redirect: "manual" });
      expect(r.status, uri).toBe(400);
      expect(r.headers.get("location")).toBeNull();
      expect(await r.text()).toContain("redirect_uri_mismatch");
    }
    // Any port, and [::1], are accepted (RFC 8252 §7.3).
    for (const uri of ["http://127.0.0.1:1/callback", "http://[::1]:65000/callback"]) {
      expect((await fetch(authorizeUrl({ redirect_uri: uri }), { redirect: "manual" })).status, uri).toBe(200);
    }
  });

  it("refuses an unknown client with an error page, no redirect", async () => {
    const r = await fetch(authorizeUrl({ client_id: "nobody.apps.emulator.test" }), { redirect: "manual" });
    expect(r.status).toBe(401);
    expect(r.headers.get("location")).toBeNull();
  });

  it("refuses PKCE plain, a missing or malformed challenge, another response type and an empty scope, by redirect with the state", async () => {
    const cases: [Record<string, string | null>, string][] = [
      [{ code_challenge_method: "plain", code_challenge: verifier }, "invalid_request"],
      [{ code_challenge_method: null }, "invalid_request"],
      [{ code_challenge: null }, "invalid_request"],
      [{ code_challenge: "short" }, "invalid_request"],
      [{ response_type: "token" }, "unsupported_response_type"],
      [{ scope: "" }, "invalid_scope"],
    ];
    for (const [over, error] of cases) {
      const r = await fetch(authorizeUrl(over), { redirect: "manual" });
      expect(r.status, JSON.stringify(over)).toBe(302);
      const location = new URL(r.headers.get("location")!);
      expect(location.searchParams.get("error")).toBe(error);
      expect(location.searchParams.get("state")).toBe("st-1");
      expect(location.searchParams.get("code")).toBeNull();
    }
  });

  it("serves a consent page listing the scopes, each ticked, with Allow and Deny; scope text is escaped", async () => {
    const r = await fetch(authorizeUrl({ scope: `${READ} <b>x</b>` }), { redirect: "manual" });
    const html = await r.text();
    expect(r.headers.get("content-type")).toMatch(/^text\/html/);
    expect(r.headers.get("x-frame-options")).toBe("DENY");
    expect(html).toContain(`value="${READ}" checked`);
    expect(html).toContain('value="allow"');
    expect(html).toContain('value="deny"');
    expect(html).not.toContain("<b>x");
  });

  it("deny redirects with error=access_denied and the state, and issues no code", async () => {
    const back = await consent("deny");
    expect(back.origin + back.pathname).toBe(redirectUri);
    expect(back.searchParams.get("error")).toBe("access_denied");
    expect(back.searchParams.get("state")).toBe("st-1");
    expect(back.searchParams.get("code")).toBeNull();
  });

  it("allow redirects with a code and the state; the exchange with the verifier returns tokens for the scopes granted", async () => {
    const back = await consent("allow");
    expect(back.searchParams.get("state")).toBe("st-1");
    const answer = await exchange(back.searchParams.get("code")!);
    expect(answer.status).toBe(200);
    expect(answer.body["scope"]!.split(" ").sort()).toEqual([READ, SEND].sort());
    expect(answer.body["refresh_token"]).toBeTruthy();
  });

  it("a narrower consent (one box unticked) yields a code and tokens for that scope only", async () => {
    const back = await consent("allow", [READ]);
    expect(back.searchParams.get("scope")).toBe(READ);
    const answer = await exchange(back.searchParams.get("code")!);
    expect(answer.body["scope"]).toBe(READ);
    // A scope never asked for cannot be smuggled into the form.
    const smuggled = await consent("allow", [READ, "https://mail.google.com/"]);
    expect((await exchange(smuggled.searchParams.get("code")!)).body["scope"]).toBe(READ);
  });

  it("a consent page answers once", async () => {
    const page = await (await fetch(authorizeUrl())).text();
    const id = /name="consent" value="([^"]+)"/.exec(page)![1]!;
    const post = () =>
      fetch(new URL("/o/oauth2/v2/auth", emulator.url), {
        method: "POST",
        body: new URLSearchParams({ consent: id, decision: "allow", scope: READ }),
        redirect: "manual",
      });
    expect((await post()).status).toBe(302);
    expect((await post()).status).toBe(400);
  });

  it("refuses a replayed code, even after a refused first use", async () => {
    const code = (await consent("allow")).searchParams.get("code")!;
    expect((await exchange(code)).status).toBe(200);
    const replay = await exchange(code);
    expect(replay.status).toBe(400);
    expect(replay.body["error"]).toBe("invalid_grant");
    const second = (await consent("allow")).searchParams.get("code")!;
    expect((await exchange(second, { code_verifier: "x".repeat(43) })).status).toBe(400);
    expect((await exchange(second)).status).toBe(400);
  });

  it("refuses a wrong, missing or malformed code_verifier", async () => {
    for (const code_verifier of [randomBytes(32).toString("base64url"), null, "", challenge, `${verifier}!`, verifier.slice(0, 42)]) {
      const code = (await consent("allow")).searchParams.get("code")!;
      const r = await exchange(code, { code_verifier });
      expect(r.status, String(code_verifier)).toBe(400);
      expect(r.body["error"]).toBe("invalid_grant");
      expect(r.body["access_token"]).toBeUndefined();
    }
  });

  it("binds a code to its client, its redirect URI and its lifetime", async () => {
    const other = emulator.registerClient();
    const a = (await consent("allow")).searchParams.get("code")!;
    expect((await exchange(a, { client_id: other.clientId, client_secret: other.clientSecret })).status).toBe(400);
    const b = (await consent("allow")).searchParams.get("code")!;
    expect((await exchange(b, { redirect_uri: "http://127.0.0.1:49153/callback" })).status).toBe(400);
    expect((await exchange(b, { redirect_uri: null })).status).toBe(400);
    const c = (await consent("allow")).searchParams.get("code")!;
    now += 61_000;
    expect((await exchange(c)).status).toBe(400);
    expect(emulator.oauthStats.codeExchanges).toBe(0);
  });

  it("refuses a redirect URI registered for another client only", async () => {
    const narrow = emulator.registerClient({ redirectUris: ["http://127.0.0.1/only-here"] });
    const r = await fetch(authorizeUrl({ client_id: narrow.clientId }), { redirect: "manual" });
    expect(r.status).toBe(400);
    expect((await fetch(authorizeUrl({ client_id: narrow.clientId, redirect_uri: "http://127.0.0.1:5/only-here" }))).status).toBe(200);
    expect(() => emulator.registerClient({ redirectUris: ["https://example.test/cb"] })).toThrow(/loopback/);
  });
});
