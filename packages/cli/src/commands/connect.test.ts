// The token endpoint's answer is hostile input: a real HTTP server on 127.0.0.1 plays a token
// endpoint that answers what it likes, and connect's exchange must refuse it without echoing it.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CliFailure } from "../output.js";
import { exchange } from "./connect.js";
import { renderConnections } from "./connections.js";
import type { ResolvedOAuthClient } from "./connect-setup.js";

let answer: { status: number; body: string; chunked?: boolean } = { status: 200, body: "{}" };
let server: Server;
let client: ResolvedOAuthClient;
const SECRET = "client-secret-never-shown-0123";

beforeAll(async () => {
  server = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      res.writeHead(answer.status, { "content-type": "application/json" });
      if (!answer.chunked) return res.end(answer.body);
      // No content-length: the size shows only as the answer is read.
      res.on("error", () => undefined);
      for (let i = 0; i < answer.body.length; i += 16 * 1024) res.write(answer.body.slice(i, i + 16 * 1024));
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/token`;
  client = { provider: "google", clientId: "cid", clientSecret: SECRET, authorizeUrl: url, tokenUrl: url, clientAuth: "post", scopes: undefined };
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

const exchangeWith = async (body: string, status = 200, chunked = false): Promise<unknown> => {
  answer = { status, body, chunked };
  return exchange(client, "the-code", "http://127.0.0.1:1/callback", "v".repeat(43), ["a.read"]).catch((e: unknown) => e);
};

describe("connect's exchange: a hostile token answer", () => {
  it.each([
    ["a scope with terminal control characters", { access_token: "at-1", expires_in: 3600, scope: "a.read \u001b[2J\u001b]0;owned\u0007" }],
    ["a scope with a bidi override", { access_token: "at-1", expires_in: 3600, scope: "a.read evil\u202egnp.exe" }],
    ["a scope list longer than any grant", { access_token: "at-1", expires_in: 3600, scope: Array.from({ length: 500 }, (_, i) => `s${i}`).join(" ") }],
    ["a scope token longer than any scope", { access_token: "at-1", expires_in: 3600, scope: `a.read ${"x".repeat(5000)}` }],
  ])("%s is refused, nothing returned to store, and the message does not echo it", async (_name, body) => {
    const error = await exchangeWith(JSON.stringify(body));
    expect(error).toBeInstanceOf(CliFailure);
    expect((error as Error).message).toMatch(/unreadable scope/);
    expect((error as Error).message).not.toMatch(/[\u001b\u202e]|xxxx|s499/);
  });

  it.each([false, true])("an answer larger than any token response is refused unread, not buffered whole (chunked: %s)", async (chunked) => {
    const error = await exchangeWith(
      JSON.stringify({ access_token: "at-1", expires_in: 3600, scope: "a.read", pad: "x".repeat(2 * 1024 * 1024) }),
      200,
      chunked,
    );
    expect(error).toBeInstanceOf(CliFailure);
    expect((error as Error).message).toMatch(/larger than/);
  });

  it("the connections table shows what a terminal would act on as visible markers (a vault filled before this check)", () => {
    const row = { id: "g\u001b[2J", provider: "google", state: "ready", expiresAt: null, scopes: ["a.read", "x\u202ey"], isDefault: false, updatedAt: "" };
    const shown = renderConnections([row as unknown as Parameters<typeof renderConnections>[0][number]]);
    expect(shown).not.toMatch(/[\u001b\u202e]/);
    expect(shown).toContain("⟨U+001B⟩");
  });

  it("a plain answer still passes, and the client secret appears in no refusal", async () => {
    expect(await exchangeWith(JSON.stringify({ access_token: "at-1", expires_in: 3600, scope: "a.read" }))).toMatchObject({
      accessToken: "at-1",
      scopes: ["a.read"],
    });
    const refused = await exchangeWith(JSON.stringify({ error: "invalid_grant", error_description: SECRET }), 400);
    expect((refused as Error).message).toMatch(/400 \(invalid_grant\)/);
    expect((refused as Error).message).not.toContain(SECRET);
  });
});
