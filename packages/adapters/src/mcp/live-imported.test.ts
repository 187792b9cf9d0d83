// The served tools follow an imported server's approvals: a tool whose approval is revoked, or whose
// definition drifted from the approved one, leaves tools/list and the client is told; re-approval
// brings it back and is told too. A real imported MCP server (a child process over stdio) behind
// the gate, served over Streamable HTTP on 127.0.0.1 to the SDK's own client.
import { realpathSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ToolListChangedNotificationSchema, type CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { createGate, createMemoryJournal, createToolRegistry, defineProfile, type Gate } from "@toolgate/core";
import { afterEach, describe, expect, it } from "vitest";
import { bearer } from "../fixtures/mcp-auth.js";
import { createNotesGate } from "../fixtures/notes-family.js";
import { importMcpServer, REVOKED_APPROVAL, type ImportedMcpServer, type ImportMcpServerOptions } from "./import.js";
import { MCP_META, serveMcp } from "./server.js";

const remote = fileURLToPath(new URL("../fixtures/remote-mcp-server.mjs", import.meta.url));
// The fixture loads the SDK from the repository's node_modules, wherever a link to it leads (a
// scratch copy of the tree links each package to the real one).
const repo = fileURLToPath(new URL("../../../..", import.meta.url));
const modules = dirname(realpathSync(join(repo, "node_modules", "@modelcontextprotocol")));
const sandbox = { kind: "auto", readOnlyPaths: [repo, modules] } as const;
const profile = defineProfile({ name: "remote", allow: ["remote:echo", "remote:env"], maxRisk: "low" });
const tools: ImportMcpServerOptions["tools"] = {
  echo: { requiredAllowlist: ["remote:echo"], effect: "read", risk: "low", approval: "never" },
  call_count: { requiredAllowlist: ["remote:env"], effect: "read", risk: "low", approval: "never" },
  poison: { requiredAllowlist: ["remote:env"], effect: "read", risk: "low", approval: "never" },
};
const POLL_MS = 40;

const closing: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closing.splice(0).reverse()) await close().catch(() => undefined);
});

async function imports(extra: Partial<ImportMcpServerOptions> = {}): Promise<{ imported: ImportedMcpServer; gate: Gate }> {
  const imported = await importMcpServer({ name: "remote", command: process.execPath, args: [remote], tools, sandbox, ...extra });
  closing.push(() => imported.close());
  const gate = createGate({ registry: createToolRegistry({ families: [imported.family] }), journal: createMemoryJournal() }) as unknown as Gate;
  return { imported, gate };
}

/** The gate served with the import's approvals followed; the SDK's client counting list changes. */
async function serve(gate: Gate, imported: ImportedMcpServer) {
  const { token } = await gate.authority.clients.add("desk", { profile: "remote", principal: "agent", tenant: "tests" }, gate.authority.owner());
  const server = await serveMcp(gate, { profiles: [profile], imported: [imported], toolsPollMs: POLL_MS, transport: { type: "http" } });
  closing.push(() => server.close());
  const client = new Client({ name: "test-client", version: "1" });
  let changes = 0;
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
    changes++;
  });
  await client.connect(new StreamableHTTPClientTransport(server.url!, bearer(token)));
  closing.push(() => client.close());
  const names = async () => (await client.listTools()).tools.map((t) => t.name).sort();
  const callTool = async (name: string, args: Record<string, unknown> = {}) => (await client.callTool({ name, arguments: args })) as CallToolResult;
  return { client, names, callTool, changes: () => changes };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
async function until(check: () => boolean, ms = 5_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check() && Date.now() < end) await sleep(10);
}
const codeOf = (r: CallToolResult) => (r._meta?.[MCP_META.error] as { code?: string } | undefined)?.code;
/** How many calls reached the remote server, asked through the gate itself (its output unfenced). */
async function remoteCalls(gate: Gate): Promise<number> {
  const r = await gate.invoke("remote.call_count", {}, { principal: "agent", tenant: "tests", profile });
  if (r.status !== "ok") throw new Error(r.status);
  return Number((r.output as { content: { text: string }[] }).content[0]!.text);
}

describe("an imported server's approvals decide what is served", { timeout: 60_000 }, () => {
  it("revoked: the tool leaves tools/list, the client is told, and a call is refused before the server hears of it; re-approved: back, told again", async () => {
    const { imported, gate } = await imports();
    const s = await serve(gate, imported);
    expect(await s.names()).toEqual(["remote.call_count", "remote.echo", "remote.poison"]);
    await sleep(POLL_MS * 3);
    expect(s.changes()).toBe(0);

    await imported.revoke(["echo"]);
    expect(imported.unapproved()).toEqual(["remote.echo"]);
    expect(imported.digests["echo"]).toBe(REVOKED_APPROVAL);
    await until(() => s.changes() === 1);
    expect(s.changes()).toBe(1);
    expect(await s.names()).toEqual(["remote.call_count", "remote.poison"]);
    const before = await remoteCalls(gate);
    const refused = await s.callTool("remote.echo", { text: "still there?" });
    expect(refused.isError).toBe(true);
    expect(codeOf(refused)).toBe("provider_rejected");
    expect(JSON.stringify(refused.content)).toContain("revoked its approval");
    expect(await remoteCalls(gate)).toBe(before);

    await sleep(POLL_MS * 4);
    expect(s.changes()).toBe(1);

    await imported.reapprove(["echo"]);
    expect(imported.unapproved()).toEqual([]);
    await until(() => s.changes() === 2);
    expect(s.changes()).toBe(2);
    expect(await s.names()).toEqual(["remote.call_count", "remote.echo", "remote.poison"]);
    expect((await s.callTool("remote.echo", { text: "back" })).isError).toBeFalsy();
  });

  it("drifted: once the changed definition is seen, the tool leaves tools/list and the client is told; re-approved: back", async () => {
    const { imported, gate } = await imports();
    const s = await serve(gate, imported);
    expect((await s.callTool("remote.poison")).isError).toBeFalsy(); // the server changes echo's description
    await remoteCalls(gate); // any call lists the server's tools again (driftCheck every-call)
    expect(imported.unapproved()).toEqual(["remote.echo"]);
    await until(() => s.changes() === 1);
    expect(s.changes()).toBe(1);
    expect(await s.names()).toEqual(["remote.call_count", "remote.poison"]);
    expect(codeOf(await s.callTool("remote.echo", { text: "x" }))).toBe("provider_rejected");

    await imported.reapprove();
    await until(() => s.changes() === 2);
    expect(s.changes()).toBe(2);
    expect(await s.names()).toContain("remote.echo");
  });

  it("revoking all, then re-importing with the digests kept: still revoked, still not served", async () => {
    const first = await imports();
    await first.imported.revoke();
    expect([...first.imported.unapproved()].sort()).toEqual(["remote.call_count", "remote.echo", "remote.poison"]);
    const kept = { ...first.imported.digests };
    expect(Object.values(kept)).toEqual([REVOKED_APPROVAL, REVOKED_APPROVAL, REVOKED_APPROVAL]);

    const again = await imports({ approvedDigests: kept });
    expect([...again.imported.unapproved()].sort()).toEqual(["remote.call_count", "remote.echo", "remote.poison"]);
    const s = await serve(again.gate, again.imported);
    expect(await s.names()).toEqual([]);
    expect(codeOf(await s.callTool("remote.echo", { text: "x" }))).toBe("provider_rejected");
  });

  it("a name that is not a registered tool changes nothing, whichever names come with it", async () => {
    const { imported } = await imports();
    for (const names of [["nope"], ["echo", "nope"], ["exfiltrate"], ["echo", 7 as unknown as string]]) {
      await expect(imported.revoke(names)).rejects.toMatchObject({ code: "config_invalid" });
      expect(imported.unapproved()).toEqual([]);
    }
    await imported.revoke(["echo"]);
    for (const names of [["nope"], ["echo", "nope"]]) {
      await expect(imported.reapprove(names)).rejects.toMatchObject({ code: "config_invalid" });
      expect(imported.unapproved()).toEqual(["remote.echo"]);
    }
  });
});

describe("serveMcp refuses options it cannot follow, before it listens", () => {
  it.each([["a handle"], [[{}]], [[null]], [[{ unapproved: "remote.echo" }]]])("imported %j: config_invalid", async (imported) => {
    const gate = createNotesGate().gate as unknown as Gate;
    await expect(serveMcp(gate, { profiles: [profile], imported: imported as never, transport: { type: "http" } })).rejects.toMatchObject({
      code: "config_invalid",
    });
    await expect(serveMcp(gate, { profile, principal: "p", tenant: "t", imported: imported as never, transport: { type: "stdio" } })).rejects.toMatchObject({
      code: "config_invalid",
    });
  });

  it.each([[-1], [1.5], [9], [3_600_001], [Number.NaN], [Infinity], ["100"], [null]])("toolsPollMs %j: config_invalid", async (toolsPollMs) => {
    const gate = createNotesGate().gate as unknown as Gate;
    await expect(serveMcp(gate, { profiles: [profile], toolsPollMs: toolsPollMs as never, transport: { type: "http" } })).rejects.toMatchObject({
      code: "config_invalid",
    });
    await expect(
      serveMcp(gate, { profile, principal: "p", tenant: "t", toolsPollMs: toolsPollMs as never, transport: { type: "stdio" } }),
    ).rejects.toMatchObject({ code: "config_invalid" });
  });
});
