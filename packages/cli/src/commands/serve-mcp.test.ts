/**
 * `toolgate serve-mcp --tools-poll-ms`: how often each session looks for a change in its served
 * tools and sends `notifications/tools/list_changed`. Bad values are usage errors (exit 2); a good
 * one reaches the server (the CLI from its sources in its own process, the MCP SDK's own client
 * over stdio, a kill switch thrown from this process through the shared SQLite journal).
 */
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { runIn, tempProject } from "../fixtures/temp-project.js";

const source = fileURLToPath(new URL("../bin.ts", import.meta.url));
const loader = fileURLToPath(new URL("../../../adapters/src/fixtures/ts-register.mjs", import.meta.url));

let dir: string;
const clients: Client[] = [];
beforeEach(() => {
  dir = tempProject("toolgate-serve-mcp-");
});
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close().catch(() => undefined)));
});

describe("serve-mcp --tools-poll-ms refuses what is not a sane interval", () => {
  const bad = ["abc", "", "-1", "1.5", "1e3", "0x64", " 500", "99", "3600001", "99999999", "5s"];
  for (const value of bad) {
    it(`${JSON.stringify(value)}: exit 2, naming the bounds, over stdio and over HTTP`, async () => {
      for (const transport of [
        ["--profile", "reader"],
        ["--http", "0"],
      ]) {
        const r = await runIn(dir, "serve-mcp", ...transport, "--tools-poll-ms", value);
        expect(r.code, r.stderr).toBe(2);
        expect(r.stderr).toContain("--tools-poll-ms must be 0 (never) or a whole number of ms from 100 to 3600000");
        expect(r.stderr).not.toMatch(/\n\s+at /);
      }
    });
  }
  it("--help shows the flag", async () => {
    const r = await runIn(dir, "serve-mcp", "--help");
    expect(r.stdout + r.stderr).toContain("--tools-poll-ms <ms>");
  });
});

/** `toolgate serve-mcp --profile reader --tools-poll-ms MS` from its sources, with the SDK's client counting list changes. */
async function serve(pollMs: string): Promise<{ client: Client; changes: () => number }> {
  let changes = 0;
  const client = new Client({ name: "cli-test", version: "1" });
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
    changes++;
  });
  clients.push(client);
  await client.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: ["--conditions=@toolgate/source", "--import", loader, source, "serve-mcp", "--profile", "reader", "--tools-poll-ms", pollMs],
      cwd: dir,
      env: { PATH: process.env["PATH"] ?? "" },
      stderr: "ignore",
    }),
  );
  return { client, changes: () => changes };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
async function until(check: () => boolean, ms: number): Promise<void> {
  const end = Date.now() + ms;
  while (!check() && Date.now() < end) await sleep(20);
}

// Each server is a child process that compiles the CLI from its sources as it loads: seconds under load.
describe("serve-mcp --tools-poll-ms reaches each session", { timeout: 240_000 }, () => {
  it("100: a kill switch thrown from another process is announced within a few polls, and the tool leaves the list", async () => {
    const { client, changes } = await serve("100");
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(["notes.count_words"]);
    const on = await runIn(dir, "kill-switch", "on", "notes.count_words", "--reason", "poll test");
    expect(on.code, on.stderr).toBe(0);
    await until(() => changes() > 0, 30_000);
    expect(changes()).toBe(1);
    expect((await client.listTools()).tools).toEqual([]);
  });

  it("0: never looks, so the same change is never announced", async () => {
    const { client, changes } = await serve("0");
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(["notes.count_words"]);
    const on = await runIn(dir, "kill-switch", "on", "notes.count_words", "--reason", "quiet");
    expect(on.code, on.stderr).toBe(0);
    await sleep(1_500);
    expect(changes()).toBe(0);
    expect((await client.listTools()).tools).toEqual([]);
  });
});
