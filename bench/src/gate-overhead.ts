import { createGate, createMemoryJournal, createToolRegistry, defineFamily, defineProfile } from "@toolgate/core";
import { countWords, countWordsInput, countWordsTool } from "./count-words-tool.js";
import { expectOk, gatedCall, inMemoryClient, mcpArgs, mcpSdkServer } from "./mcp-servers.js";
import { compareTimes, row } from "./measure.js";
import { target, type TargetSpec } from "./targets.js";

export const gateTargets = {
  overhead: { label: "gate overhead over the bare call", unit: "µs", direction: "at-most", target: 5 },
  vsMcp: { label: "in-process gate vs MCP SDK in-memory round trip", unit: "×", direction: "at-least", target: 3 },
} as const satisfies Record<string, TargetSpec>;

/**
 * A small pure tool: the gate's own cost dominates. Every check is on (a secret to redact, the
 * audit chain); beside it the MCP SDK's in-memory round trip of the same tool.
 */
export async function benchGateOverhead(): Promise<string[]> {
  const registry = createToolRegistry({ families: [defineFamily({ name: "bench", tools: [countWordsTool], permissions: ["bench:read"] })] });
  const profile = defineProfile({ name: "bench", allow: ["bench:read"], maxRisk: "low" });
  const gate = createGate({ registry, journal: createMemoryJournal(), secrets: ["bench-secret-value"] });
  const plain = createGate({ registry, journal: createMemoryJournal() });
  const call = { principal: "bench-agent", tenant: "bench", profile };
  const mcp = await inMemoryClient(mcpSdkServer());

  try {
    const { wall: m, cpu } = await compareTimes({
      bare: () => countWords(mcpArgs),
      zod: () => countWords(countWordsInput.parse(mcpArgs)),
      gate: gatedCall(gate, "bench.count_words", call),
      plain: gatedCall(plain, "bench.count_words", call),
      mcp: async () => expectOk(await mcp.callTool({ name: "count_words", arguments: mcpArgs })),
    });
    const bare = m["bare"]!;
    const gated = m["gate"]!;
    return [
      "gate overhead — small pure tool (median of 300 interleaved rounds × 200 calls)",
      row("bare handler call", bare, undefined, cpu["bare"]),
      row("handler behind zod validation", m["zod"]!, bare, cpu["zod"]),
      row("gate.invoke, memory journal", gated, bare, cpu["gate"]),
      row("  the same with no secret to redact", m["plain"]!, bare, cpu["plain"]),
      row("MCP SDK, in-memory transport round trip", m["mcp"]!, bare, cpu["mcp"]),
      target({ ...gateTargets.overhead, value: gated - bare }),
      target({ ...gateTargets.vsMcp, value: m["mcp"]! / gated }),
      `  the same in CPU time (less moved by a loaded machine): overhead ${(cpu["gate"]! - cpu["bare"]!).toFixed(1)} µs, ×${(cpu["mcp"]! / cpu["gate"]!).toFixed(2)} vs MCP`,
    ];
  } finally {
    await mcp.close();
  }
}
