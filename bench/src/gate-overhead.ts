import { createGate, createMemoryJournal, createToolRegistry, defineFamily, defineProfile } from "@toolgate/core";
import { countWords, countWordsInput, countWordsTool } from "./count-words-tool.js";
import { expectOk, inMemoryClient, mcpArgs, mcpSdkServer } from "./mcp-servers.js";
import { compareMicros, row } from "./measure.js";
import { target } from "./targets.js";

/**
 * A small pure tool: the gate's own cost dominates. Every check is on (a secret to redact, the
 * audit chain); beside it the MCP SDK's in-memory round trip of the same tool.
 */
export async function benchGateOverhead(): Promise<string[]> {
  const registry = createToolRegistry({ families: [defineFamily({ name: "bench", tools: [countWordsTool], permissions: ["bench:read"] })] });
  const profile = defineProfile({ name: "bench", allow: ["bench:read"], maxRisk: "low" });
  const gate = createGate({ registry, journal: createMemoryJournal(), secrets: ["bench-secret-value"] });
  const call = { principal: "bench-agent", tenant: "bench", profile };
  const mcp = await inMemoryClient(mcpSdkServer());

  try {
    const m = await compareMicros({
      bare: () => countWords(mcpArgs),
      zod: () => countWords(countWordsInput.parse(mcpArgs)),
      gate: async () => {
        const result = await gate.invoke("bench.count_words", mcpArgs, call);
        if (result.status !== "ok") throw new Error(`bench call failed: ${result.status}`);
      },
      mcp: async () => expectOk(await mcp.callTool({ name: "count_words", arguments: mcpArgs })),
    });
    const bare = m["bare"]!;
    const gated = m["gate"]!;
    return [
      "gate overhead — small pure tool (median of 300 interleaved rounds × 200 calls)",
      row("bare handler call", bare),
      row("handler behind zod validation", m["zod"]!, bare),
      row("gate.invoke, memory journal", gated, bare),
      row("MCP SDK, in-memory transport round trip", m["mcp"]!, bare),
      target({ label: "gate overhead over the bare call", value: gated - bare, unit: "µs", direction: "at-most", target: 5 }),
      target({ label: "in-process gate vs MCP SDK in-memory round trip", value: m["mcp"]! / gated, unit: "×", direction: "at-least", target: 3 }),
    ];
  } finally {
    await mcp.close();
  }
}
