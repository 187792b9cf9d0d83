// The MCP SDK's own server with the benchmark's trivial tool, over stdio.
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { z } from "zod";

const server = new McpServer({ name: "bench", version: "1.0.0" });
server.registerTool("count_words", { description: "Count words.", inputSchema: { text: z.string().max(10_000) } }, ({ text }) => ({
  content: [{ type: "text", text: JSON.stringify({ words: text.split(" ").length }) }],
}));
await server.connect(new StdioServerTransport());
