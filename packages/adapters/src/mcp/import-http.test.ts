// The import over Streamable HTTP: a hostile server on 127.0.0.1 answers with bodies over the limit
// or over the JSON bounds; the calls fail as protocol_error and the import keeps working.
import { createServer, type IncomingMessage, type Server } from "node:http";
import { createGate, createMemoryJournal, createToolRegistry } from "@toolgate/core";
import { afterAll, beforeAll, expect, it } from "vitest";
import { hostileProfile } from "../fixtures/hostile.js";
import { importMcpServer, type ImportedMcpServer } from "./import.js";

let http: Server;
let imported: ImportedMcpServer;
let gate: ReturnType<typeof createGate>;

const body = async (req: IncomingMessage): Promise<string> => {
  let text = "";
  for await (const chunk of req) text += String(chunk);
  return text;
};

/** A stateless MCP server written by hand, so it can answer anything. */
function answer(id: unknown, method: string, params: { name?: string; arguments?: { make?: string } } | undefined): string {
  const result = (value: unknown) => JSON.stringify({ jsonrpc: "2.0", id, result: value });
  if (method === "initialize")
    return result({ protocolVersion: "2025-06-18", capabilities: { tools: {} }, serverInfo: { name: "hostile-http", version: "1" } });
  if (method === "tools/list")
    return result({ tools: [{ name: "reply", description: "Replies.", inputSchema: { type: "object", properties: { make: { type: "string" } } } }] });
  const make = params?.arguments?.make;
  if (make === "huge") return result({ content: [{ type: "text", text: "x".repeat(20 * 1024 * 1024) }] });
  if (make === "deep")
    return `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":{"content":[],"structuredContent":{"x":${"[".repeat(100_000)}${"]".repeat(100_000)}}}}`;
  return result({ content: [{ type: "text", text: "ok" }] });
}

beforeAll(async () => {
  http = createServer((req, res) => {
    // No event stream for server-initiated messages, no sessions to delete.
    if (req.method !== "POST") return void res.writeHead(405).end();
    void body(req).then((text) => {
      const message = JSON.parse(text) as { id?: unknown; method: string; params?: { name?: string; arguments?: { make?: string } } };
      if (message.id === undefined) return void res.writeHead(202).end();
      res.writeHead(200, { "content-type": "application/json" }).end(answer(message.id, message.method, message.params));
    });
  });
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
  const { port } = http.address() as { port: number };
  imported = await importMcpServer({
    name: "hostile",
    url: `http://127.0.0.1:${port}/mcp`,
    tools: { reply: { requiredAllowlist: ["hostile:call"], effect: "read", risk: "low", approval: "never" } },
  });
  gate = createGate({ registry: createToolRegistry({ families: [imported.family] }), journal: createMemoryJournal() });
});
afterAll(async () => {
  await imported?.close();
  http?.closeAllConnections();
  await new Promise((resolve) => http?.close(resolve));
});

const call = (make: string) => gate.invoke("hostile.reply", { make }, { principal: "agent", tenant: "tests", profile: hostileProfile });

it("a response body over the limit and one over the JSON bounds are protocol_error; the next call is answered", async () => {
  const huge = await call("huge");
  expect(huge).toMatchObject({ status: "error", code: "protocol_error" });
  expect((huge as { message: string }).message).toContain("longer than the limit");
  expect(await call("plain")).toMatchObject({ status: "ok", untrusted: true });
  expect(await call("deep")).toMatchObject({ status: "error", code: "protocol_error" });
  expect(await call("plain")).toMatchObject({ status: "ok" });
});
