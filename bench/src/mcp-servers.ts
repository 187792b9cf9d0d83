import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { AnyGate, CallOptions } from "@toolgate/core";
import { z } from "zod";
import { countWords } from "./count-words-tool.js";

/** The arguments every MCP comparison sends. */
export const mcpArgs = { text: "governed tools for agents that hold a real mailbox" };

/** The folder of the child programs: the MCP SDK's stdio server and our tool process. */
export const childrenDir = fileURLToPath(new URL("./mcp-children/", import.meta.url));

/** The MCP SDK's own server with the benchmark's trivial tool. */
export function mcpSdkServer(): McpServer {
  const server = new McpServer({ name: "bench", version: "1.0.0" });
  server.registerTool("count_words", { description: "Count words.", inputSchema: { text: z.string().max(10_000) } }, ({ text }) => ({
    content: [{ type: "text", text: JSON.stringify(countWords({ text })) }],
  }));
  return server;
}

/** An MCP SDK client connected to `server` through the SDK's in-memory transport. */
export async function inMemoryClient(server: { connect(t: InMemoryTransport): Promise<void> }): Promise<Client> {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  const client = new Client({ name: "bench", version: "1.0.0" });
  await client.connect(clientSide);
  return client;
}

export function expectOk(result: object): void {
  if ("isError" in result && result.isError) throw new Error("bench call failed");
}

/** Throws, naming the status and message, unless a gated call ended ok. */
export function expectGateOk(result: { readonly status: string }): void {
  if (result.status !== "ok") throw new Error(`bench call failed: ${result.status} ${"message" in result ? String(result.message) : ""}`);
}

/** A gated call of the trivial tool that must end ok. */
export function gatedCall(gate: AnyGate, id: string, call: CallOptions): () => Promise<void> {
  return async () => expectGateOk(await gate.invoke(id, mcpArgs, call));
}
