// `toolgate connections connect` end to end: the built binary in its own process, the Google and
// Notion emulators on 127.0.0.1 with their consent pages, and the browser played by HTTP requests
// a browser would make (and by Chromium for the consent page itself, where there is one).
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { startGoogleEmulator, startNotionEmulator, type GoogleEmulator, type NotionEmulator } from "@toolgate/emulators";
import { describeInBrowser, launchBrowser } from "../console/fixtures/harness.js";

const require = createRequire(import.meta.url);
const bin = join(dirname(require.resolve("@toolgate/cli/package.json")), "dist", "bin.js");
const nodeModules = fileURLToPath(new URL("../../../node_modules", import.meta.url));

const READ = "https://www.googleapis.com/auth/gmail.readonly";
const SEND = "https://www.googleapis.com/auth/gmail.send";

const CONFIG = `
import { defineProfile } from "@toolgate/core";
import { createConnectorRuntime } from "@toolgate/core/connectors";
import { createGoogleConnector } from "@toolgate/connector-google";
import { createGmailTools } from "@toolgate/tools-gmail";
const env = process.env;
export default {
  profiles: [defineProfile({ name: "reader", allow: ["gmail:read"], maxRisk: "low" })],
  state: ".toolgate",
  vault: { file: ".toolgate/tokens.vault", key: { env: "TOOLGATE_VAULT_KEY" } },
  compose({ vault }) {
    return {
      families: [createGmailTools({ rootUrl: env.G_ROOT, recipientAllowlist: ["@example.test"] })],
      connectors: createConnectorRuntime({ vault, providers: [createGoogleConnector({ clientId: env.G_ID, clientSecret: env.G_SECRET, tokenUrl: env.G_TOKEN })] }),
      oauthClients: [
        { provider: "google", clientId: env.G_ID, clientSecret: env.G_SECRET, authorizeUrl: env.G_AUTH, tokenUrl: env.G_TOKEN },
        { provider: "notion", clientId: env.N_ID, clientSecret: env.N_SECRET, authorizeUrl: env.N_URL + "/v1/oauth/authorize", tokenUrl: env.N_URL + "/v1/oauth/token", scopes: ["read_content"] },
      ],
    };
  },
};
`;

interface Run {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

let google: GoogleEmulator;
let notion: NotionEmulator;
const notionClient = { clientId: "notion-public-1", clientSecret: `secret_${randomBytes(16).toString("hex")}` };
let dir: string;
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  google = await startGoogleEmulator({ gmail: { messages: [{ from: "a@example.test", subject: "hello", body: "hi" }] } });
  notion = await startNotionEmulator({ seed: { integrations: [{ id: "public-app", capabilities: ["read_content"], oauth: notionClient }] } });
  env = {
    PATH: process.env["PATH"] ?? "",
    TOOLGATE_VAULT_KEY: randomBytes(32).toString("base64"),
    G_ROOT: google.url,
    G_ID: google.client.clientId,
    G_SECRET: google.client.clientSecret,
    G_AUTH: google.authorizeUrl,
    G_TOKEN: google.tokenUrl,
    N_URL: notion.url,
    N_ID: notionClient.clientId,
    N_SECRET: notionClient.clientSecret,
  };
});
afterAll(async () => {
  await google.close();
  await notion.close();
});
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "toolgate-connect-"));
  writeFileSync(join(dir, "toolgate.config.mjs"), CONFIG);
  symlinkSync(nodeModules, join(dir, "node_modules"));
  return () => rmSync(dir, { recursive: true, force: true });
});

/** The binary to its end. */
function toolgate(...args: string[]): Promise<Run> {
  return connect(args, async () => undefined);
}

/** Run the binary; once it prints the consent address, `act` plays the browser with it. */
function connect(args: readonly string[], act: (url: URL) => Promise<void>): Promise<Run & { acted: Promise<void> }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [bin, ...args], { cwd: dir, env });
    let stdout = "";
    let stderr = "";
    let acted: Promise<void> = Promise.resolve();
    let started = false;
    child.stdout.on("data", (d: Buffer) => void (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => {
      stderr += d.toString();
      const address = /^ {2}(http:\/\/127\.0\.0\.1:\d+\/\S+)$/m.exec(stderr)?.[1];
      if (address && !started) {
        started = true;
        acted = act(new URL(address));
        acted.catch(() => undefined);
      }
    });
    child.on("error", reject);
    child.on("close", (code) => resolve({ code: code ?? -1, stdout, stderr, acted }));
  });
}

/** What a browser does at the consent page: load it, submit Allow or Deny with the boxes given (default: as ticked), follow the redirect. */
async function consent(url: URL, decision: "allow" | "deny", scopes?: readonly string[]): Promise<{ location: URL; page: string }> {
  const html = await (await fetch(url)).text();
  const id = /name="consent" value="([^"]+)"/.exec(html)![1]!;
  const action = /<form method="post" action="([^"]+)"/.exec(html)![1]!;
  const ticked = scopes ?? [...html.matchAll(/name="scope" value="([^"]+)"/g)].map((m) => m[1]!);
  const form = new URLSearchParams([["consent", id], ["decision", decision], ...ticked.map((s): [string, string] => ["scope", s])]);
  const answer = await fetch(new URL(action, url), { method: "POST", body: form, redirect: "manual" });
  const location = new URL(answer.headers.get("location")!);
  const page = await (await fetch(location)).text();
  return { location, page };
}

const status = async (): Promise<{ id: string; scopes: string[] }[]> => JSON.parse((await toolgate("connections", "status", "--json")).stdout);
const secretsOf = () => [google.client.clientSecret, notionClient.clientSecret];

describe("toolgate connections connect google", () => {
  it("allow: the tokens land in the vault, status shows the scopes, a Gmail call works; other paths on the listener get 404", async () => {
    let page = "";
    let stray = 0;
    const r = await connect(["connections", "connect", "google", "--no-browser", "--default"], async (url) => {
      const redirect = new URL(url.searchParams.get("redirect_uri")!);
      stray = (await fetch(new URL("/favicon.ico", redirect))).status;
      page = (await consent(url, "allow")).page;
    });
    await r.acted;
    expect(r.code, r.stderr).toBe(0);
    expect(stray).toBe(404);
    expect(page).toContain("You can close this window");
    const url = new URL(/^ {2}(http\S+)$/m.exec(r.stderr)![1]!);
    expect(url.searchParams.get("code_challenge_method")).toBe("S256");
    expect(Buffer.from(url.searchParams.get("state")!, "base64url").length).toBeGreaterThanOrEqual(16);
    expect(new URL(url.searchParams.get("redirect_uri")!).hostname).toBe("127.0.0.1");
    expect(r.stdout).toContain(`granted: `);
    expect(r.stdout).toContain(READ);
    expect(r.stderr).not.toContain("warning");
    for (const secret of secretsOf()) expect(r.stdout + r.stderr).not.toContain(secret);
    const [stored] = await status();
    expect(stored!.id).toBe("google");
    expect(stored!.scopes).toContain(SEND);
    const call = await toolgate("call", "gmail.list_labels", "--input", "{}", "--profile", "reader");
    expect(call.code, call.stderr).toBe(0);
    expect(call.stdout).toContain("INBOX");
  });

  it("deny: exit 1, a clear message, nothing stored", async () => {
    const r = await connect(["connections", "connect", "google", "--no-browser"], async (url) => {
      expect((await consent(url, "deny")).location.searchParams.get("error")).toBe("access_denied");
    });
    await r.acted;
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("access was denied");
    expect(await status()).toEqual([]);
  });

  it("a forged redirect (another state) is refused: exit 1, nothing stored; the real answer cannot land afterwards", async () => {
    let late = "";
    const r = await connect(["connections", "connect", "google", "--no-browser"], async (url) => {
      const page = await (await fetch(url)).text();
      expect(page).toContain("Allow");
      const forged = new URL(url.searchParams.get("redirect_uri")!);
      forged.searchParams.set("code", "4/attacker-code");
      forged.searchParams.set("state", randomBytes(32).toString("base64url"));
      expect(await (await fetch(forged)).text()).toContain("refused");
      late = await consent(url, "allow").then(
        () => "landed",
        () => "refused",
      );
    });
    await r.acted;
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("state does not match");
    expect(late).toBe("refused");
    expect(await status()).toEqual([]);
  });

  it("a narrower grant is stored, with a warning naming the scopes not granted and the tools that will be refused", async () => {
    const r = await connect(["connections", "connect", "google", "--no-browser", "--scopes", `${READ} ${SEND}`], async (url) => {
      await consent(url, "allow", [READ]);
    });
    await r.acted;
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain(`warning: google granted fewer scopes than asked; not granted: ${SEND}`);
    expect(r.stderr).toContain("gmail.send_message");
    const [stored] = await status();
    expect(stored!.scopes).toEqual([READ]);
  });

  it("a code stolen from the redirect is useless without the verifier, and spends it: the CLI's exchange is refused, nothing stored", async () => {
    const r = await connect(["connections", "connect", "google", "--no-browser"], async (url) => {
      const html = await (await fetch(url)).text();
      const form = new URLSearchParams({ consent: /name="consent" value="([^"]+)"/.exec(html)![1]!, decision: "allow", scope: READ });
      const location = new URL((await fetch(google.authorizeUrl, { method: "POST", body: form, redirect: "manual" })).headers.get("location")!);
      const stolen = await fetch(google.tokenUrl, {
        method: "POST",
        body: new URLSearchParams({
          grant_type: "authorization_code",
          code: location.searchParams.get("code")!,
          redirect_uri: url.searchParams.get("redirect_uri")!,
          code_verifier: randomBytes(32).toString("base64url"),
          client_id: google.client.clientId,
          client_secret: google.client.clientSecret,
        }),
      });
      expect(stolen.status).toBe(400);
      await fetch(location); // the real redirect, too late
    });
    await r.acted;
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("refused the code: 400 (invalid_grant)");
    expect(await status()).toEqual([]);
  });

  it("the emulator refuses a non-loopback redirect URI in the CLI's address; a replayed redirect cannot reach the closed listener; --port is kept", async () => {
    let replay = "";
    const port = String(40000 + Math.floor(Math.random() * 20000));
    const r = await connect(["connections", "connect", "google", "--no-browser", "--port", port], async (url) => {
      expect(new URL(url.searchParams.get("redirect_uri")!).port).toBe(port);
      const evil = new URL(url);
      evil.searchParams.set("redirect_uri", "http://attacker.example/callback");
      const refused = await fetch(evil, { redirect: "manual" });
      expect(refused.status).toBe(400);
      expect(refused.headers.get("location")).toBeNull();
      const { location } = await consent(url, "allow");
      await new Promise((done) => setTimeout(done, 300));
      replay = await fetch(location).then(
        () => "answered",
        () => "refused",
      );
    });
    await r.acted;
    expect(r.code, r.stderr).toBe(0);
    expect(replay).toBe("refused");
  });

  it("no answer: exit 1 after --timeout, nothing stored; bad arguments exit 2", async () => {
    const r = await toolgate("connections", "connect", "google", "--no-browser", "--timeout", "1");
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("no answer from the browser within 1 s");
    expect(await status()).toEqual([]);
    expect((await toolgate("connections", "connect", "dropbox")).code).toBe(2);
    expect((await toolgate("connections", "connect", "google", "--timeout", "0")).code).toBe(2);
    expect((await toolgate("connections", "connect", "google", "--timeout", "soon")).code).toBe(2);
    expect((await toolgate("connections", "connect", "google", "--port", "70000")).code).toBe(2);
    const taken = await toolgate("connections", "connect", "google", "--no-browser", "--timeout", "1", "--port", String(google.port));
    expect(taken.code).toBe(1);
    expect(taken.stderr).toContain(`cannot listen on 127.0.0.1:${google.port} (EADDRINUSE)`);
  });
});

describe("toolgate connections connect: the composition's OAuth clients", () => {
  it("no client for the provider, or one with a plain-http remote endpoint or an empty secret: exit 3, no secret echoed, nothing listened for", async () => {
    const variants: [string, string][] = [
      ['{ provider: "google",', '{ provider: "elsewhere",'],
      ["authorizeUrl: env.G_AUTH, tokenUrl: env.G_TOKEN", 'authorizeUrl: "http://accounts.example/auth", tokenUrl: env.G_TOKEN'],
      ["clientSecret: env.G_SECRET, authorizeUrl", 'clientSecret: "", authorizeUrl'],
    ];
    for (const [from, to] of variants) {
      writeFileSync(join(dir, "toolgate.config.mjs"), CONFIG.replace(from, to));
      const r = await toolgate("connections", "connect", "google", "--no-browser", "--timeout", "1");
      expect(r.code, `${to}: ${r.stderr}`).toBe(3);
      expect(r.stderr).toMatch(/OAuth client/);
      expect(r.stderr).not.toContain("Open this address");
      for (const secret of secretsOf()) expect(r.stderr).not.toContain(secret);
    }
  });
});

describe("toolgate connections connect notion", () => {
  it("allow stores the connection with the integration's capabilities; deny stores nothing", async () => {
    const denied = await connect(["connections", "connect", "notion", "--no-browser", "--id", "team"], async (url) => void (await consent(url, "deny")));
    await denied.acted;
    expect(denied.code).toBe(1);
    const r = await connect(["connections", "connect", "notion", "--no-browser", "--id", "team"], async (url) => void (await consent(url, "allow")));
    await r.acted;
    expect(r.code, r.stderr).toBe(0);
    const [stored] = await status();
    expect(stored).toMatchObject({ id: "team", provider: "notion", scopes: ["read_content"], state: "ready" });
    for (const secret of secretsOf()) expect(r.stdout + r.stderr).not.toContain(secret);
    expect(readFileSync(join(dir, ".toolgate", "tokens.vault"), "utf8")).not.toContain("ntn_oauth_");
  });
});

describeInBrowser("toolgate connections connect google, consent in Chromium", () => {
  it("unticking a scope on the real page grants less; the listener's page says it can be closed", async () => {
    const browser = await launchBrowser();
    try {
      let closing = "";
      const r = await connect(["connections", "connect", "google", "--no-browser"], async (url) => {
        const page = await browser.newPage();
        await page.goto(url.href);
        await page.getByLabel(SEND).uncheck();
        await page.getByRole("button", { name: "Allow" }).click();
        await page.waitForURL(/127\.0\.0\.1:\d+\/callback/);
        closing = (await page.textContent("body")) ?? "";
      });
      await r.acted;
      expect(r.code, r.stderr).toBe(0);
      expect(closing).toContain("You can close this window");
      expect(r.stderr).toContain(`not granted: ${SEND}`);
      expect((await status())[0]!.scopes).not.toContain(SEND);
    } finally {
      await browser.close();
    }
  });
});
