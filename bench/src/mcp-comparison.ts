import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { createMcpServer } from "@toolgate/adapters/mcp";
import { createGate, createMemoryJournal, createToolRegistry, defineFamily, defineProfile, type AnyGate } from "@toolgate/core";
import { countWordsTool } from "./count-words-tool.js";
import { childrenDir, expectOk, gatedCall, inMemoryClient, mcpArgs, mcpSdkServer } from "./mcp-servers.js";
import { compareMicros } from "./measure.js";
import { target, type TargetSpec } from "./targets.js";

type Contender = () => Promise<void>;

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

export const mcpTargets = {
  sequential: { label: "tool process vs MCP SDK stdio, sequential", unit: "×", direction: "at-least", target: 1.5 },
  inFlight: { label: "tool process vs MCP SDK stdio, 64 in flight", unit: "×", direction: "at-least", target: 1.2 },
} as const satisfies Record<string, TargetSpec>;

const PROCESS = "tool process over stdio, gated";
const PROCESS_READ = "  the same, tool declared effect read";
const MCP_STDIO = "MCP SDK, stdio";

/**
 * The same trivial tool through: the MCP SDK (in memory and over stdio), the gate in-process, the
 * gate behind our MCP server (in memory), and a Toolgate tool process over stdio. The tool is pure,
 * so every gated row declares it effect "none"; the tool process's read variant (intent before the
 * read, then its settlement) is printed for information.
 */
export async function benchMcpComparison(): Promise<string[]> {
  const profile = defineProfile({ name: "bench", allow: ["bench:read", "bench_process:text-read"], maxRisk: "low" });
  const call = { principal: "bench-agent", tenant: "bench", profile };
  const gate = createGate({
    registry: createToolRegistry({ families: [defineFamily({ name: "bench", tools: [countWordsTool], permissions: ["bench:read"] })] }),
    journal: createMemoryJournal(),
  });

  const mcpMemory = await inMemoryClient(mcpSdkServer());
  const gateMcpMemory = await inMemoryClient(createMcpServer(gate, { profile, principal: "bench-agent", tenant: "bench" }));
  const mcpStdio = new Client({ name: "bench", version: "1.0.0" });
  await mcpStdio.connect(new StdioClientTransport({ command: process.execPath, args: [`${childrenDir}mcp-sdk-server.js`], stderr: "inherit" }));

  let processGate: AnyGate | undefined;
  let stopProcess: (() => Promise<void>) | undefined;
  let processNote = "";
  try {
    const { startToolProcess } = await import("@toolgate/process");
    const handle = await startToolProcess({
      name: "bench_process",
      command: process.execPath,
      args: [`${childrenDir}tool-process.js`],
      expectedScopes: { count_words: "text:read", count_words_read: "text:read" },
      tools: { count_words: { effect: "none", risk: "low" }, count_words_read: { effect: "read", risk: "low" } },
    });
    stopProcess = () => handle.stop();
    processGate = createGate({ registry: createToolRegistry({ families: [handle.family] }), journal: createMemoryJournal() });
  } catch (cause) {
    processNote = `tool process unavailable: ${(cause as Error).message}`;
  }

  const contenders: Record<string, Contender> = {
    "MCP SDK, in-memory transport": async () => expectOk(await mcpMemory.callTool({ name: "count_words", arguments: mcpArgs })),
    [MCP_STDIO]: async () => expectOk(await mcpStdio.callTool({ name: "count_words", arguments: mcpArgs })),
    "gate.invoke in-process": gatedCall(gate, "bench.count_words", call),
    "gate behind serveMcp, in-memory": async () => expectOk(await gateMcpMemory.callTool({ name: "bench.count_words", arguments: mcpArgs })),
  };
  if (processGate) {
    contenders[PROCESS] = gatedCall(processGate, "bench_process.count_words", call);
    contenders[PROCESS_READ] = gatedCall(processGate, "bench_process.count_words_read", call);
  }

  try {
    const micros = await compareMicros(contenders, { rounds: 15, batchSize: 200, warmup: 1000 });
    const parallel = await inFlightRates(contenders, 64, 2000, 7);
    const seq = (name: string) => 1e6 / micros[name]!;
    const ratio = (rates: (name: string) => number, name: string) => (processGate ? rates(name) / rates(MCP_STDIO) : NaN);
    const lines = [
      "MCP comparison — same trivial tool; sequential: median of 15 interleaved rounds × 200 calls; 64 in flight: median of 7 rounds × 2000 calls",
      `${"".padEnd(38)} ${"µs/call".padStart(9)} ${"calls/s seq".padStart(12)} ${"calls/s ×64".padStart(12)}`,
      ...Object.keys(contenders).map(
        (n) => `${n.padEnd(38)} ${micros[n]!.toFixed(1).padStart(9)} ${seq(n).toFixed(0).padStart(12)} ${parallel[n]!.toFixed(0).padStart(12)}`,
      ),
    ];
    if (!processGate) lines.push(processNote || "tool process: @toolgate/process not available");
    lines.push(
      target({ ...mcpTargets.sequential, value: ratio(seq, PROCESS) }),
      target({ ...mcpTargets.inFlight, value: ratio((n) => parallel[n]!, PROCESS) }),
      `for information, effect "read" (intent and settlement per call) vs MCP SDK stdio: ×${ratio(seq, PROCESS_READ).toFixed(2)} sequential, ×${ratio((n) => parallel[n]!, PROCESS_READ).toFixed(2)} with 64 in flight`,
    );
    return lines;
  } finally {
    await Promise.allSettled([mcpMemory.close(), gateMcpMemory.close(), mcpStdio.close(), stopProcess?.()]);
  }
}
