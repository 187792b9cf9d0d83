import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  ErrorCode,
  LoggingLevelSchema,
  LoggingMessageNotificationSchema,
  McpError,
  ToolListChangedNotificationSchema,
  type CallToolResult,
  type LoggingMessageNotification,
} from "@modelcontextprotocol/sdk/types.js";
import type { Gate } from "@toolgate/core";
import { afterEach, describe, expect, it } from "vitest";
import { bearer } from "../fixtures/mcp-auth.js";
import { createNotesGate, profiles } from "../fixtures/notes-family.js";
import { MCP_META, serveMcp } from "./server.js";

const POLL_MS = 40;
const closing: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(closing.splice(0).map((close) => close()));
});

interface Session {
  gate: Gate;
  client: Client;
  changes: number;
  messages: LoggingMessageNotification["params"][];
}

/** The SDK's own client over Streamable HTTP on 127.0.0.1, counting what the server sends unasked. */
async function open(toolsPollMs = POLL_MS): Promise<Session> {
  const gate = createNotesGate().gate as unknown as Gate;
  const { token } = await gate.authority.clients.add("desk", { profile: "writer", principal: "mcp-agent", tenant: "tests" }, gate.authority.owner());
  const server = await serveMcp(gate, { profiles, toolsPollMs, transport: { type: "http" } });
  const client = new Client({ name: "test-client", version: "1.0.0" });
  const session: Session = { gate, client, changes: 0, messages: [] };
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
    session.changes++;
  });
  client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
    session.messages.push(n.params);
  });
  await client.connect(new StreamableHTTPClientTransport(server.url!, bearer(token)));
  closing.push(async () => {
    await client.close();
    await server.close();
  });
  return session;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
async function until(check: () => boolean, ms = 5_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check() && Date.now() < end) await sleep(10);
}
const names = async (client: Client) => (await client.listTools()).tools.map((t) => t.name);

describe("logging (logging/setLevel)", () => {
  it("the server declares logging and tools.listChanged", async () => {
    const { client } = await open();
    expect(client.getServerCapabilities()).toMatchObject({ logging: {}, tools: { listChanged: true } });
  });

  it("accepts each of the eight levels", async () => {
    const { client } = await open();
    for (const level of LoggingLevelSchema.options) await expect(client.setLoggingLevel(level)).resolves.toEqual({});
  });

  it.each([["verbose"], ["WARNING"], [""], [3], [null], [{ level: "debug" }]])("refuses the level %j with invalid params", async (level) => {
    const { client } = await open();
    // Sent raw: the SDK client's own types would not let a bad level through.
    const refused = await client
      .request({ method: "logging/setLevel", params: { level } as never }, LoggingMessageNotificationSchema.shape.params)
      .catch((e) => e);
    expect(refused).toBeInstanceOf(McpError);
    expect((refused as McpError).code).toBe(ErrorCode.InvalidParams);
  });

  it("refuses a setLevel without params with invalid params", async () => {
    const { client } = await open();
    const refused = await client.request({ method: "logging/setLevel" } as never, LoggingMessageNotificationSchema.shape.params).catch((e) => e);
    expect((refused as McpError).code).toBe(ErrorCode.InvalidParams);
  });

  it("a refused call is logged at warning, only while the level lets warnings through, and names no input", async () => {
    const session = await open(0);
    const refusedCall = async () => (await session.client.callTool({ name: "notes.stats", arguments: { secret: "hunter2-value" } })) as CallToolResult;

    await session.client.setLoggingLevel("error");
    expect((await refusedCall()).isError).toBe(true);
    await sleep(100);
    expect(session.messages).toEqual([]);

    await session.client.setLoggingLevel("warning");
    const refused = await refusedCall();
    await until(() => session.messages.length > 0);
    const code = (refused._meta?.[MCP_META.error] as { code: string }).code;
    expect(session.messages).toEqual([{ level: "warning", logger: "toolgate", data: { event: "call_refused", toolId: "notes.stats", status: "error", code } }]);
    expect(JSON.stringify(session.messages)).not.toContain("hunter2");
  });
});

describe("notifications/tools/list_changed", () => {
  it("a kill switch thrown hides the tool and is announced; the tool called anyway is refused by the gate; lifting it announces again", async () => {
    const session = await open();
    const { gate, client } = session;
    expect(await names(client)).toContain("notes.stats");
    await sleep(POLL_MS * 3);
    expect(session.changes).toBe(0);

    await gate.authority.switches.disable("tool:notes.stats", "incident 7", gate.authority.owner());
    await until(() => session.changes === 1);
    expect(session.changes).toBe(1);
    expect(await names(client)).not.toContain("notes.stats");
    const refused = (await client.callTool({ name: "notes.stats", arguments: {} })) as CallToolResult;
    expect((refused._meta?.[MCP_META.error] as { code: string }).code).toBe("tool_disabled");

    // Nothing changed since: nothing more is sent.
    await sleep(POLL_MS * 4);
    expect(session.changes).toBe(1);

    await gate.authority.switches.enable("tool:notes.stats", gate.authority.owner());
    await until(() => session.changes === 2);
    expect(session.changes).toBe(2);
    expect(await names(client)).toContain("notes.stats");
  });

  it("a family switch hides every tool of the family", async () => {
    const session = await open();
    const before = await names(session.client);
    expect(before.length).toBeGreaterThan(0);
    await session.gate.authority.switches.disable("family:notes", "all off", session.gate.authority.owner());
    await until(() => session.changes === 1);
    expect(session.changes).toBe(1);
    expect(await names(session.client)).toEqual([]);
  });

  it("toolsPollMs 0 never looks, so never announces", async () => {
    const session = await open(0);
    await session.gate.authority.switches.disable("tool:notes.stats", "quiet", session.gate.authority.owner());
    await sleep(300);
    expect(session.changes).toBe(0);
    expect(await names(session.client)).not.toContain("notes.stats");
  });
});
