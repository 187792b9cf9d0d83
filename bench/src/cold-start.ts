import { existsSync } from "node:fs";
import { delimiter, join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { createGate, createMemoryJournal, createToolRegistry, defineProfile } from "@toolgate/core";
import { startToolProcess } from "@toolgate/process";
import { childrenDir, expectOk, mcpArgs } from "./mcp-servers.js";
import { target } from "./targets.js";

const STARTS = 7;

const median = (list: number[]): number => [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)]!;
const since = (start: bigint): number => Number(process.hrtime.bigint() - start) / 1e6;

/** Milliseconds from spawning a gated tool process (default sandbox) to its first result through the gate. */
async function toolProcessStart(): Promise<number> {
  const start = process.hrtime.bigint();
  const handle = await startToolProcess({
    name: "bench_process",
    command: process.execPath,
    args: [`${childrenDir}tool-process.js`],
    expectedScopes: { count_words: "text:read" },
    tools: { count_words: { effect: "none", risk: "low" } },
    onLog: () => undefined,
  });
  try {
    const gate = createGate({ registry: createToolRegistry({ families: [handle.family] }), journal: createMemoryJournal() });
    const profile = defineProfile({ name: "bench", allow: handle.family.permissions, maxRisk: "low" });
    const result = await gate.invoke("bench_process.count_words", mcpArgs, { principal: "bench-agent", tenant: "bench", profile });
    if (result.status !== "ok") throw new Error(`bench call failed: ${result.status}`);
    return since(start);
  } finally {
    await handle.stop();
  }
}

/** Milliseconds from spawning the MCP SDK's stdio server to its first result (initialize, then the call). */
async function mcpStdioStart(): Promise<number> {
  const start = process.hrtime.bigint();
  const client = new Client({ name: "bench", version: "1.0.0" });
  try {
    await client.connect(new StdioClientTransport({ command: process.execPath, args: [`${childrenDir}mcp-sdk-server.js`], stderr: "inherit" }));
    expectOk(await client.callTool({ name: "count_words", arguments: mcpArgs }));
    return since(start);
  } finally {
    await client.close();
  }
}

/** Cold start: spawn to first result, ours and the MCP SDK's, started alternately. */
export async function benchColdStart(): Promise<string[]> {
  const ours: number[] = [];
  const theirs: number[] = [];
  await toolProcessStart(); // one of each first, not counted: the files are read into the page cache
  await mcpStdioStart();
  for (let i = 0; i < STARTS; i++) {
    ours.push(await toolProcessStart());
    theirs.push(await mcpStdioStart());
  }
  const bwrap = (process.env["PATH"] ?? "").split(delimiter).some((dir) => dir !== "" && existsSync(join(dir, "bwrap")));
  const ms = (list: number[]) => list.map((v) => v.toFixed(0)).join(" ");
  return [
    `cold start — spawn to first result, median of ${STARTS} starts each, alternating (our sandbox: ${bwrap ? "bubblewrap" : "none, bwrap is not on PATH"})`,
    `  gated tool process, ms: ${ms(ours)}`,
    `  MCP SDK stdio, ms:      ${ms(theirs)}`,
    target({ label: "cold start, gated tool process", value: median(ours), unit: "ms", direction: "at-most", target: 150 }),
    `${"cold start, MCP SDK stdio (beside it, no target)".padEnd(58)} ${`${median(theirs).toFixed(0)} ms`.padStart(14)}`,
  ];
}
