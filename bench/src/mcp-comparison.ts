import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { createMcpServer } from "@toolgate/adapters/mcp";
import { createGate, createMemoryJournal, createToolRegistry, defineFamily, defineProfile, type Gate } from "@toolgate/core";
import { z } from "zod";
import { countWords, countWordsTool } from "./count-words-tool.js";
import { compareMicros } from "./measure.js";

type Contender = () => Promise<void>;

const args = { text: "governed tools for agents that hold a real mailbox" };

/** Calls per second with `concurrency` calls in flight: median of interleaved rounds. */
async function inFlightRates(
  contenders: Record<string, Contender>,
  concurrency: number,
  callsPerRound: number,
  rounds: number,
): Promise<Record<string, number>> {
  const samples: Record<string, number[]> = Object.fromEntries(Object.keys(contenders).map((n) => [n, []]));
  for (let r = 0; r < rounds + 1; r++) {
    for (const [name, fn] of Object.entries(contenders)) {
      let next = 0;
      const start = process.hrtime.bigint();
      const worker = async () => {
        while (next < callsPerRound) {
          next++;
          await fn();
        }
      };
      await Promise.all(Array.from({ length: concurrency }, worker));
      const seconds = Number(process.hrtime.bigint() - start) / 1e9;
      if (r > 0) samples[name]!.push(callsPerRound / seconds); // round 0 warms up
    }
  }
  return Object.fromEntries(Object.entries(samples).map(([n, list]) => [n, list.sort((a, b) => a - b)[Math.floor(list.length / 2)]!]));
}

function mcpSdkServer(): McpServer {
  const server = new McpServer({ name: "bench", version: "1.0.0" });
  server.registerTool("count_words", { description: "Count words.", inputSchema: { text: z.string().max(10_000) } }, ({ text }) => ({
    content: [{ type: "text", text: JSON.stringify(countWords({ text })) }],
  }));
  return server;
}

async function inMemoryClient(server: { connect(t: InMemoryTransport): Promise<void> }): Promise<Client> {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  const client = new Client({ name: "bench", version: "1.0.0" });
  await client.connect(clientSide);
  return client;
}

function expectOk(result: object): void {
  if ("isError" in result && result.isError) throw new Error("bench call failed");
}

/**
 * The same trivial tool through: the MCP SDK (in memory and over stdio), the gate in-process, the
 * gate behind our MCP server (in memory), and a Toolgate tool process over stdio.
 */
export async function benchMcpComparison(): Promise<string[]> {
  const children = fileURLToPath(new URL("./mcp-children/", import.meta.url));
  const profile = defineProfile({ name: "bench", allow: ["bench:read", "bench_process:text-read"], maxRisk: "low" });
  const call = { principal: "bench-agent", tenant: "bench", profile };
  const gate = createGate({
    registry: createToolRegistry({ families: [defineFamily({ name: "bench", tools: [countWordsTool], permissions: ["bench:read"] })] }),
    journal: createMemoryJournal(),
  });

  const mcpMemory = await inMemoryClient(mcpSdkServer());
  const gateMcpMemory = await inMemoryClient(createMcpServer(gate, { profile, principal: "bench-agent", tenant: "bench" }));
  const mcpStdio = new Client({ name: "bench", version: "1.0.0" });
  await mcpStdio.connect(new StdioClientTransport({ command: process.execPath, args: [`${children}mcp-sdk-server.js`], stderr: "inherit" }));

  let processGate: Gate | undefined;
  let stopProcess: (() => Promise<void>) | undefined;
  let processNote = "";
  try {
    const { startToolProcess } = await import("@toolgate/process");
    const handle = await startToolProcess({
      name: "bench_process",
      command: process.execPath,
      args: [`${children}tool-process.js`],
      expectedScopes: { count_words: "text:read" },
      tools: { count_words: { effect: "read", risk: "low" } },
    });
    stopProcess = () => handle.stop();
    processGate = createGate({ registry: createToolRegistry({ families: [handle.family] }), journal: createMemoryJournal() }) as unknown as Gate;
  } catch (cause) {
    processNote = `tool process unavailable: ${(cause as Error).message}`;
  }

  const contenders: Record<string, Contender> = {
    "MCP SDK, in-memory transport": async () => expectOk(await mcpMemory.callTool({ name: "count_words", arguments: args })),
    "MCP SDK, stdio": async () => expectOk(await mcpStdio.callTool({ name: "count_words", arguments: args })),
    "gate.invoke in-process": async () => {
      if ((await gate.invoke("bench.count_words", args, call)).status !== "ok") throw new Error("bench call failed");
    },
    "gate behind serveMcp, in-memory": async () => expectOk(await gateMcpMemory.callTool({ name: "bench.count_words", arguments: args })),
  };
  if (processGate) {
    const pg = processGate;
    contenders["tool process over stdio, gated"] = async () => {
      const r = await pg.invoke("bench_process.count_words", args, call);
      if (r.status !== "ok") throw new Error(`bench call failed: ${r.status} ${"message" in r ? r.message : ""}`);
    };
  }

  try {
    const micros = await compareMicros(contenders, { rounds: 15, batchSize: 200, warmup: 300 });
    const parallel = await inFlightRates(contenders, 64, 2000, 7);
    const seq = (name: string) => 1e6 / micros[name]!;
    const lines = [
      "MCP comparison — same trivial tool; sequential: median of 15 interleaved rounds × 200 calls; 64 in flight: median of 7 rounds × 2000 calls",
      `${"".padEnd(34)} ${"µs/call".padStart(9)} ${"calls/s seq".padStart(12)} ${"calls/s ×64".padStart(12)}`,
      ...Object.keys(contenders).map(
        (n) => `${n.padEnd(34)} ${micros[n]!.toFixed(1).padStart(9)} ${seq(n).toFixed(0).padStart(12)} ${parallel[n]!.toFixed(0).padStart(12)}`,
      ),
      `in-process gate vs MCP in-memory round trip: ×${(micros["MCP SDK, in-memory transport"]! / micros["gate.invoke in-process"]!).toFixed(1)} (target ≥ ×5)`,
    ];
    if (processGate) {
      const p = "tool process over stdio, gated";
      const m = "MCP SDK, stdio";
      lines.push(`tool process vs MCP stdio, sequential: ×${(seq(p) / seq(m)).toFixed(2)} (target ≥ ×1.5)`);
      lines.push(`tool process vs MCP stdio, 64 in flight: ×${(parallel[p]! / parallel[m]!).toFixed(2)} (target ≥ ×2)`);
    } else {
      lines.push(processNote || "tool process: @toolgate/process not available");
    }
    return lines;
  } finally {
    await Promise.allSettled([mcpMemory.close(), gateMcpMemory.close(), mcpStdio.close(), stopProcess?.()]);
  }
}
