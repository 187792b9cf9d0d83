import { OAuth2Client } from "google-auth-library";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { startGoogleEmulator, type GoogleEmulator } from "./google-emulator.js";
import { connect, SCOPE, statusOf } from "./fixtures/test-clients.js";

describe("google emulator: OAuth and access checks", () => {
  let now = Date.UTC(2025, 2, 10, 12);
  let emulator: GoogleEmulator;
  beforeEach(async () => {
    now = Date.UTC(2025, 2, 10, 12);
    emulator = await startGoogleEmulator({ clock: () => now, gmail: { messages: [{ from: "a@example.test", subject: "hello", body: "hi" }] } });
  });
  afterEach(() => emulator.close());

  it("binds only 127.0.0.1", () => {
    expect(emulator.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);
  });

  it("refuses an API call without a token, with an unknown token, or with an expired one (401)", async () => {
    const { mail } = await connect(emulator, [SCOPE.gmailReadonly]);
    const bare = new OAuth2Client();
    bare.setCredentials({ access_token: "ya29.not-issued-here" });
    const { gmail } = await import("@googleapis/gmail");
    const forged = gmail({ version: "v1", auth: bare, rootUrl: emulator.url, retry: false });
    await expect(forged.users.labels.list({ userId: "me" })).rejects.toSatisfy((e) => statusOf(e) === 401);
    now += 3601_000;
    await expect(mail.users.labels.list({ userId: "me" })).rejects.toSatisfy((e) => statusOf(e) === 401);
    // A client allowed to refresh on failure gets a new token from the refresh grant and succeeds.
    const { oauth } = await connect(emulator, [SCOPE.gmailReadonly]);
    const refreshing = new OAuth2Client({
      clientId: emulator.client.clientId,
      clientSecret: emulator.client.clientSecret,
      endpoints: { oauth2TokenUrl: emulator.tokenUrl },
      forceRefreshOnFailure: true,
    });
    refreshing.setCredentials(oauth.credentials);
    now += 3601_000;
    const before = emulator.oauthStats.refreshes;
    const res = await gmail({ version: "v1", auth: refreshing, rootUrl: emulator.url, retry: false }).users.labels.list({ userId: "me" });
    expect(res.status).toBe(200);
    expect(emulator.oauthStats.refreshes).toBe(before + 1);
  });

  it("answers 403 insufficientPermissions when the token lacks every scope the method accepts", async () => {
    const { mail } = await connect(emulator, [SCOPE.gmailReadonly]);
    const raw = Buffer.from("To: b@example.test\r\nSubject: x\r\n\r\nbody").toString("base64url");
    const error: unknown = await mail.users.messages.send({ userId: "me", requestBody: { raw } }).catch((e: unknown) => e);
    expect(statusOf(error)).toBe(403);
    expect(JSON.stringify((error as { response?: { data?: unknown } }).response?.data)).toContain("insufficientPermissions");
    expect(emulator.gmail.sent).toHaveLength(0);
  });

  it("accepts any scope Google accepts for the method (send: gmail.send, compose, modify, mail.google.com)", async () => {
    for (const scope of [SCOPE.gmailSend, SCOPE.gmailCompose, SCOPE.gmailModify, "https://mail.google.com/"]) {
      const { mail } = await connect(emulator, [scope]);
      const raw = Buffer.from(`To: b@example.test\r\nSubject: ${scope}\r\n\r\nbody`).toString("base64url");
      const res = await mail.users.messages.send({ userId: "me", requestBody: { raw } });
      expect(res.status).toBe(200);
    }
    expect(emulator.gmail.sent).toHaveLength(4);
  });

  it("exchanges a code once, refreshes, and revokes the whole grant", async () => {
    const oauth = new OAuth2Client({
      clientId: emulator.client.clientId,
      clientSecret: emulator.client.clientSecret,
      endpoints: { oauth2TokenUrl: emulator.tokenUrl, oauth2RevokeUrl: emulator.revokeUrl },
    });
    const { code } = emulator.authorize({ scopes: [SCOPE.gmailReadonly, SCOPE.calendarReadonly] });
    const { tokens } = await oauth.getToken(code);
    expect(tokens.scope?.split(" ").sort()).toEqual([SCOPE.calendarReadonly, SCOPE.gmailReadonly].sort());
    expect(tokens.refresh_token).toBeTruthy();
    await expect(oauth.getToken(code)).rejects.toSatisfy((e) => statusOf(e) === 400);
    oauth.setCredentials({ refresh_token: tokens.refresh_token ?? null });
    const refreshed = await oauth.refreshAccessToken();
    expect(refreshed.credentials.access_token).not.toBe(tokens.access_token);
    expect(emulator.oauthStats.refreshes).toBe(1);
    await oauth.revokeToken(tokens.refresh_token!);
    await expect(
      new OAuth2Client({ clientId: emulator.client.clientId, clientSecret: emulator.client.clientSecret, endpoints: { oauth2TokenUrl: emulator.tokenUrl } })
        .refreshAccessToken()
        .catch((e: unknown) => {
          throw e;
        }),
    ).rejects.toThrow();
    const again = new OAuth2Client({
      clientId: emulator.client.clientId,
      clientSecret: emulator.client.clientSecret,
      endpoints: { oauth2TokenUrl: emulator.tokenUrl },
    });
    again.setCredentials({ refresh_token: tokens.refresh_token ?? null });
    const refused: unknown = await again.refreshAccessToken().catch((e: unknown) => e);
    expect(statusOf(refused)).toBe(400);
    expect(JSON.stringify((refused as { response?: { data?: unknown } }).response?.data)).toContain("invalid_grant");
  });

  it("refuses a wrong client secret (invalid_client)", async () => {
    const oauth = new OAuth2Client({ clientId: emulator.client.clientId, clientSecret: "wrong-secret", endpoints: { oauth2TokenUrl: emulator.tokenUrl } });
    const error: unknown = await oauth.getToken(emulator.authorize({ scopes: [SCOPE.gmailReadonly] }).code).catch((e: unknown) => e);
    expect(statusOf(error)).toBe(401);
  });

  it("injects 429 with Retry-After, 5xx, and a drop after the effect", async () => {
    const { mail } = await connect(emulator, [SCOPE.gmailSend]);
    const raw = Buffer.from("To: b@example.test\r\nSubject: x\r\n\r\nbody").toString("base64url");
    emulator.inject({ kind: "rate_limit", retryAfterSeconds: 7, methods: ["gmail.users.messages.send"] });
    const limited: unknown = await mail.users.messages.send({ userId: "me", requestBody: { raw } }).catch((e: unknown) => e);
    expect(statusOf(limited)).toBe(429);
    expect((limited as { response?: { headers?: Headers } }).response?.headers?.get("retry-after")).toBe("7");
    emulator.inject({ kind: "server_error", status: 500 });
    await expect(mail.users.messages.send({ userId: "me", requestBody: { raw } })).rejects.toSatisfy((e) => statusOf(e) === 500);
    expect(emulator.gmail.sent).toHaveLength(0);
    emulator.inject({ kind: "drop_after_effect", methods: ["gmail.users.messages.send"] });
    const dropped: unknown = await mail.users.messages.send({ userId: "me", requestBody: { raw } }).catch((e: unknown) => e);
    expect(statusOf(dropped)).toBeUndefined();
    expect(emulator.gmail.sent).toHaveLength(1);
    expect(emulator.requests.at(-1)?.status).toBe("dropped");
  });
});
