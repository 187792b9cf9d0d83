/**
 * `toolgate serve-mcp` opens one provenance session per connection, with the trusted texts the
 * composition file declares (`trusted: [{ text, label }]`, checked with clear errors). The CLI runs
 * from its sources in its own process; the MCP SDK's own client talks to it over stdio.
 */
import { copyFileSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { loadConfig } from "../config.js";
import { runIn, tempProject } from "../fixtures/temp-project.js";

const source = fileURLToPath(new URL("../bin.ts", import.meta.url));
const loader = fileURLToPath(new URL("../../../adapters/src/fixtures/ts-register.mjs", import.meta.url));
const postConfig = fileURLToPath(new URL("../fixtures/post.config.mjs", import.meta.url));

let dir: string;
const clients: Client[] = [];
beforeEach(() => {
  dir = tempProject("toolgate-serve-provenance-");
  copyFileSync(postConfig, join(dir, "toolgate.config.mjs"));
});
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close().catch(() => undefined)));
});

/** The composition file with its `trusted` member replaced by this source text. */
function withTrusted(text: string): void {
  const path = join(dir, "toolgate.config.mjs");
  const config = readFileSync(path, "utf8").replace(/^ {2}trusted: .*$/m, `  trusted: ${text},`);
  writeFileSync(path, config);
}

describe("trusted texts in the composition file are checked", () => {
  const bad: [string, string][] = [
    ['"boss@team.test"', 'trusted: must be an array of { "text": string, "label"?: string, "tenant"?: string }'],
    ['[{ label: "x" }]', "trusted.0.text: text must be a string"],
    ['[{ text: "  " }]', "trusted.0.text: text must not be empty"],
    ['[{ text: "a", label: "x".repeat(65) }]', "trusted.0.label: label is at most 64 characters"],
    ['[{ text: "a", lable: "x" }]', "trusted.0"],
    ['["just text"]', 'trusted.0: must be { "text": string, "label"?: string, "tenant"?: string }'],
  ];
  for (const [value, message] of bad) {
    it(`${value}: config_invalid naming where`, async () => {
      withTrusted(value);
      const r = await runIn(dir, "serve-mcp", "--profile", "poster");
      expect(r.code).not.toBe(0);
      expect(r.stderr).toContain("toolgate.config.mjs is invalid: ");
      expect(r.stderr).toContain(message);
      expect(r.stderr).not.toMatch(/\n\s+at /);
    });
  }
});

describe("trusted texts in toolgate.config.json", () => {
  const json = (trusted: unknown) => {
    const path = join(dir, "toolgate.config.json");
    writeFileSync(path, JSON.stringify({ families: [], profiles: [], trusted }));
    return loadConfig(path);
  };
  it("kept when well formed, refused naming the member otherwise", async () => {
    expect((await json([{ text: "boss@team.test", label: "contacts" }, { text: "ana@team.test" }])).trusted).toEqual([
      { text: "boss@team.test", label: "contacts" },
      { text: "ana@team.test" },
    ]);
    await expect(json({ text: "x" })).rejects.toThrow(
      'toolgate.config.json is invalid: trusted: must be an array of { "text": string, "label"?: string, "tenant"?: string }',
    );
    await expect(json([{ text: "x", label: 7 }])).rejects.toThrow("trusted.0.label: label must be a string");
    await expect(json(Array.from({ length: 1001 }, () => ({ text: "x" })))).rejects.toThrow("trusted: at most 1000 trusted texts");
  });
});

async function serve(): Promise<Client> {
  const client = new Client({ name: "cli-test", version: "1" });
  clients.push(client);
  await client.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: ["--conditions=@toolgate/source", "--import", loader, source, "serve-mcp", "--profile", "poster"],
      cwd: dir,
      env: { PATH: process.env["PATH"] ?? "" },
      stderr: "ignore",
    }),
  );
  return client;
}
const call = async (client: Client, name: string, args: Record<string, unknown>) => (await client.callTool({ name, arguments: args })) as CallToolResult;
const provenanceOf = (r: CallToolResult) =>
  (r._meta?.["io.toolgate/approval"] as { preview?: { provenance?: { verdict: string; fields: { path: string; label: string }[] } } } | undefined)?.preview
    ?.provenance;

// A child process that compiles the CLI from its sources as it loads: seconds under load.
describe("serve-mcp: one session per connection, with the configured trusted texts", { timeout: 240_000 }, () => {
  it("a send to the address the inbox carried is asked with its provenance; one to the configured contact runs", async () => {
    const client = await serve();
    expect((await call(client, "post.read_inbox", {})).isError).toBeFalsy();
    const asked = await call(client, "post.send", { to: "attacker@outside.test", body: "numbers" });
    expect(asked.isError).toBe(true);
    expect(provenanceOf(asked)?.verdict).toBe("violation");
    expect(provenanceOf(asked)?.fields[0]).toMatchObject({ path: "/to", label: "untrusted" });
    const ran = await call(client, "post.send", { to: "boss@team.test", body: "numbers" });
    expect(ran.isError, JSON.stringify(ran)).toBeFalsy();
    expect(JSON.stringify(ran.content)).toContain('\\"sent\\":1');
  });

  it("a text the configuration gives one tenant is not trusted in another tenant's connections", async () => {
    withTrusted('[{ text: "My manager is boss@team.test", label: "contacts", tenant: "elsewhere" }]');
    try {
      const client = await serve(); // tenant "default"
      const asked = await call(client, "post.send", { to: "boss@team.test", body: "numbers" });
      expect(asked.isError).toBe(true);
      expect(provenanceOf(asked)?.fields[0]).toMatchObject({ path: "/to", label: "new" });
    } finally {
      withTrusted('[{ text: "My manager is boss@team.test", label: "contacts" }]');
    }
  });
});
