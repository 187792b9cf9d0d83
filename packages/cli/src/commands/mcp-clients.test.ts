/**
 * `toolgate mcp-clients` and `toolgate serve-mcp` as an operator uses them: the server in its own
 * process (the CLI run from its sources), the operator's commands in this one, sharing the temp
 * project's SQLite journal; the MCP SDK's own client over real HTTP on 127.0.0.1 and over stdio.
 */
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema, type CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { runIn, tempProject } from "../fixtures/temp-project.js";

const source = fileURLToPath(new URL("../bin.ts", import.meta.url));
// The adapters' loader runs TypeScript sources in a child process (workspace packages resolve to theirs).
const loader = fileURLToPath(new URL("../../../adapters/src/fixtures/ts-register.mjs", import.meta.url));
const nodeArgs = ["--conditions=@toolgate/source", "--import", loader, source];
const env = { PATH: process.env["PATH"] ?? "" };

let dir: string;
const children: ChildProcessWithoutNullStreams[] = [];
const clients: Client[] = [];
beforeEach(() => {
  dir = tempProject("toolgate-mcp-clients-");
});
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close().catch(() => undefined)));
  for (const child of children.splice(0)) child.kill();
});

/** `toolgate serve-mcp --http 0` in its own process; resolves with the URL it prints. */
function serveHttp(): Promise<URL> {
  const child = spawn(process.execPath, [...nodeArgs, "serve-mcp", "--http", "0"], { cwd: dir, env });
  children.push(child);
  return new Promise((resolve, reject) => {
    let stderr = "";
    child.stderr.on("data", (d: Buffer) => {
      stderr += d.toString();
      const url = /at (http:\/\/127\.0\.0\.1:\d+\/mcp)/.exec(stderr)?.[1];
      if (url) resolve(new URL(url));
    });
    child.on("close", (code) => reject(new Error(`serve-mcp ended (${code}): ${stderr}`)));
  });
}

const tokenOf = (stdout: string) => /^token (tgc_[A-Za-z0-9_-]+)$/m.exec(stdout)?.[1] ?? "";
const approvalOf = (r: CallToolResult) => r._meta?.["io.toolgate/approval"] as { requestId: string } | undefined;

async function connect(transport: StreamableHTTPClientTransport | StdioClientTransport, answer?: () => { action: "accept"; content: { approve: boolean } }) {
  const client = new Client({ name: "cli-test", version: "1" }, { capabilities: answer ? { elicitation: { form: {} } } : {} });
  if (answer) client.setRequestHandler(ElicitRequestSchema, answer);
  clients.push(client);
  await client.connect(transport);
  return client;
}

describe("toolgate mcp-clients", () => {
  it("add prints the token once; list and remove never show it; bad flags are usage errors", async () => {
    const added = await runIn(dir, "mcp-clients", "add", "desk", "--profile", "writer", "--principal", "desk-agent", "--tenant", "acme");
    expect(added.code, added.stderr).toBe(0);
    const token = tokenOf(added.stdout);
    expect(token).toMatch(/^tgc_[A-Za-z0-9_-]{43}$/);
    expect(added.stdout).toContain("profile writer, principal desk-agent, tenant acme");
    const listed = await runIn(dir, "mcp-clients", "list");
    expect(listed.stdout).toMatch(/desk\s+mcc_[0-9a-f]+\s+writer\s+desk-agent\s+acme\s+off\s+active/);
    const json = await runIn(dir, "mcp-clients", "list", "--json");
    expect(JSON.parse(json.stdout)).toMatchObject([{ name: "desk", profile: "writer", principal: "desk-agent", tenant: "acme", elicitation: false }]);
    for (const out of [listed.stdout, json.stdout, json.stderr]) {
      expect(out).not.toContain(token);
      expect(out).not.toMatch(/tokenHash|[0-9a-f]{64}/);
    }
    expect((await runIn(dir, "mcp-clients", "add", "desk", "--profile", "writer")).code).toBe(1);
    const unknownProfile = await runIn(dir, "mcp-clients", "add", "other", "--profile", "nope");
    expect(unknownProfile.code).toBe(2);
    expect(unknownProfile.stderr).toContain("known: reader, writer");
    expect((await runIn(dir, "mcp-clients", "add", "other")).code).toBe(2); // --profile is required
    expect((await runIn(dir, "mcp-clients", "remove", "desk")).code).toBe(0);
    expect((await runIn(dir, "mcp-clients", "remove", "desk")).code).toBe(1);
    expect((await runIn(dir, "mcp-clients", "list")).stdout).toContain("no MCP clients");
  });
});

// Each server is a child process that compiles the CLI from its sources as it loads: seconds under load.
describe("toolgate serve-mcp", { timeout: 240_000 }, () => {
  it("over HTTP every client needs its token; flags that would give all clients one identity are refused", async () => {
    for (const flags of [
      ["--profile", "writer"],
      ["--client", "desk"],
      ["--principal", "p"],
      ["--tenant", "t"],
    ]) {
      const r = await runIn(dir, "serve-mcp", "--http", "0", ...flags);
      expect(r.code, flags.join(" ")).toBe(2);
    }
    expect((await runIn(dir, "serve-mcp")).code).toBe(2); // stdio needs --profile or --client
    const url = await serveHttp();
    const anonymous = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: "{}",
    });
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get("www-authenticate")).toBe(`Bearer resource_metadata="${url.origin}/.well-known/oauth-protected-resource/mcp"`);
    await expect(connect(new StreamableHTTPClientTransport(url))).rejects.toThrow();
  });

  it("a client added while the server runs connects with its token; its approval-needing call runs after toolgate approvals approve, once", async () => {
    const url = await serveHttp();
    const added = await runIn(dir, "mcp-clients", "add", "agent", "--profile", "writer", "--principal", "agent-1");
    expect(added.code, added.stderr).toBe(0);
    const client = await connect(new StreamableHTTPClientTransport(url, { requestInit: { headers: { authorization: `Bearer ${tokenOf(added.stdout)}` } } }));
    expect((await client.listTools()).tools.map((t) => t.name).sort()).toEqual(["notes.count_words", "notes.save_note"]);
    const input = { name: "n", text: "hello" };
    const first = (await client.callTool({ name: "notes.save_note", arguments: input })) as CallToolResult;
    const id = approvalOf(first)?.requestId ?? "";
    expect(id).toMatch(/^apr_/);
    expect(approvalOf((await client.callTool({ name: "notes.save_note", arguments: input })) as CallToolResult)?.requestId).toBe(id);
    const approved = await runIn(dir, "approvals", "approve", id);
    expect(approved.code, approved.stderr).toBe(0);
    const ran = (await client.callTool({ name: "notes.save_note", arguments: input })) as CallToolResult;
    expect(ran.isError, JSON.stringify(ran)).toBeFalsy();
    expect(ran.structuredContent).toEqual({ saved: "n" });
    const shown = JSON.parse((await runIn(dir, "approvals", "show", id, "--json")).stdout) as Record<string, unknown>;
    expect(shown).toMatchObject({ status: "consumed", principal: "agent-1", decidedBy: "owner" });
    // Removed: the running server refuses its next request.
    expect((await runIn(dir, "mcp-clients", "remove", "agent")).code).toBe(0);
    await expect(client.listTools()).rejects.toThrow();
  });

  it("over stdio, --client NAME with elicitation on: the person at the client approves in band, recorded as mcp:<clientId>", async () => {
    const added = await runIn(dir, "mcp-clients", "add", "desk", "--profile", "writer", "--elicitation");
    expect(added.code, added.stderr).toBe(0);
    const clientId = /\((mcc_[0-9a-f]+)\)/.exec(added.stdout)?.[1];
    const client = await connect(
      new StdioClientTransport({ command: process.execPath, args: [...nodeArgs, "serve-mcp", "--client", "desk"], cwd: dir, env }),
      () => ({
        action: "accept",
        content: { approve: true },
      }),
    );
    const ran = (await client.callTool({ name: "notes.save_note", arguments: { name: "n", text: "from the desk" } })) as CallToolResult;
    expect(ran.isError, JSON.stringify(ran)).toBeFalsy();
    const [request] = JSON.parse((await runIn(dir, "approvals", "list", "--status", "all", "--json")).stdout) as Record<string, unknown>[];
    expect(request).toMatchObject({ status: "consumed", principal: "mcp:desk", decidedBy: `mcp:${clientId}`, decidedVia: "elicitation" });
  });

  it("over stdio without an operator-enabled client, an auto-accepting client is never asked and nothing runs", async () => {
    expect((await runIn(dir, "mcp-clients", "add", "bot", "--profile", "writer")).code).toBe(0);
    for (const args of [
      ["--profile", "writer"],
      ["--client", "bot"],
    ]) {
      let asked = 0;
      const client = await connect(
        new StdioClientTransport({ command: process.execPath, args: [...nodeArgs, "serve-mcp", ...args], cwd: dir, env }),
        () => (asked++, { action: "accept", content: { approve: true } }),
      );
      const result = (await client.callTool({ name: "notes.save_note", arguments: { name: "n", text: "self-approved" } })) as CallToolResult;
      expect(approvalOf(result)?.requestId, args.join(" ")).toMatch(/^apr_/);
      expect(asked).toBe(0);
    }
    const all = JSON.parse((await runIn(dir, "approvals", "list", "--status", "all", "--json")).stdout) as { status: string }[];
    expect(all.every((r) => r.status === "pending")).toBe(true);
  });
});
