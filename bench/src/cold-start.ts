import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { delimiter, join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { createGate, createMemoryJournal, createToolRegistry, defineProfile } from "@toolgate/core";
import { startToolProcess } from "@toolgate/process";
import { childrenDir, expectGateOk, expectOk, mcpArgs } from "./mcp-servers.js";
import { target, type TargetSpec } from "./targets.js";

const STARTS = 7;

export const coldStartTargets = {
  ours: { label: "cold start, gated tool process", unit: "ms", direction: "at-most", target: 150 },
} as const satisfies Record<string, TargetSpec>;

const median = (list: number[]): number => [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)]!;
/** A figure with no target, aligned with the target lines. */
const beside = (label: string, ms: number): string => `${label.padEnd(58)} ${`${ms.toFixed(0)} ms`.padStart(14)}`;
const since = (start: bigint): number => Number(process.hrtime.bigint() - start) / 1e6;

/** Milliseconds from spawning a gated tool process to its handshake's end and to its first result through the gate. */
async function toolProcessStart(sandbox: "auto" | "none"): Promise<{ ready: number; total: number }> {
  const start = process.hrtime.bigint();
  const handle = await startToolProcess({
    name: "bench_process",
    command: process.execPath,
    args: [`${childrenDir}tool-process.js`],
    expectedScopes: { count_words: "text:read" },
    tools: { count_words: { effect: "none", risk: "low" } },
    sandbox,
    onLog: () => undefined,
  });
  const ready = since(start);
  try {
    const gate = createGate({ registry: createToolRegistry({ families: [handle.family] }), journal: createMemoryJournal() });
    const profile = defineProfile({ name: "bench", allow: handle.family.permissions, maxRisk: "low" });
    expectGateOk(await gate.invoke("bench_process.count_words", mcpArgs, { principal: "bench-agent", tenant: "bench", profile }));
    return { ready, total: since(start) };
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

/** Milliseconds from spawning a bare node child to its first byte on stdout: the floor under both. */
function bareNodeStart(): Promise<number> {
  const start = process.hrtime.bigint();
  const child = spawn(process.execPath, ["-e", "process.stdout.write('x')"], { stdio: ["ignore", "pipe", "inherit"] });
  return new Promise((resolve, reject) => {
    child.once("error", reject);
    child.stdout.once("data", () => resolve(since(start)));
  });
}

/** Cold start: spawn to first result, ours and the MCP SDK's, started alternately. */
export async function benchColdStart(): Promise<string[]> {
  const ours: number[] = [];
  const theirs: number[] = [];
  const handshakes: number[] = [];
  const unsandboxed: number[] = [];
  const bare: number[] = [];
  await toolProcessStart("auto"); // one of each first, not counted: the files are read into the page cache
  await mcpStdioStart();
  for (let i = 0; i < STARTS; i++) {
    const { ready, total } = await toolProcessStart("auto");
    handshakes.push(ready);
    ours.push(total);
    theirs.push(await mcpStdioStart());
    unsandboxed.push((await toolProcessStart("none")).total);
    bare.push(await bareNodeStart());
  }
  const bwrap = (process.env["PATH"] ?? "").split(delimiter).some((dir) => dir !== "" && existsSync(join(dir, "bwrap")));
  const ms = (list: number[]) => list.map((v) => v.toFixed(0)).join(" ");
  return [
    `cold start — spawn to first result, median of ${STARTS} starts each, alternating (our default sandbox: ${bwrap ? "bubblewrap" : "none, bwrap is not on PATH"})`,
    `  gated tool process, ms: ${ms(ours)}`,
    `  MCP SDK stdio, ms:      ${ms(theirs)}`,
    `  ours, no sandbox, ms:   ${ms(unsandboxed)}`,
    `  bare node, ms:          ${ms(bare)}`,
    target({ ...coldStartTargets.ours, value: median(ours) }),
    beside("cold start, MCP SDK stdio (beside it, no target)", median(theirs)),
    beside("  of which spawn to handshake done (ours, sandboxed)", median(handshakes)),
    beside("cold start, ours with sandbox none (for information)", median(unsandboxed)),
    beside("a bare node child, spawn to first output (the floor)", median(bare)),
  ];
}
