import { createGate, createMemoryJournal, createToolRegistry, defineFamily, defineProfile } from "@toolgate/core";
import { countWords, countWordsInput, countWordsTool } from "./count-words-tool.js";
import { compareMicros, row } from "./measure.js";

/** A small pure tool: the gate's own cost dominates. */
export async function benchGateOverhead(): Promise<string[]> {
  const registry = createToolRegistry({ families: [defineFamily({ name: "bench", tools: [countWordsTool], permissions: ["bench:read"] })] });
  const profile = defineProfile({ name: "bench", allow: ["bench:read"], maxRisk: "low" });
  const gate = createGate({ registry, journal: createMemoryJournal(), secrets: ["bench-secret-value"] });
  const args = { text: "governed tools for agents that hold a real mailbox" };
  const call = { principal: "bench-agent", tenant: "bench", profile };

  const m = await compareMicros({
    bare: () => countWords(args),
    zod: () => countWords(countWordsInput.parse(args)),
    gate: async () => {
      const result = await gate.invoke("bench.count_words", args, call);
      if (result.status !== "ok") throw new Error(`bench call failed: ${result.status}`);
    },
  });
  const bare = m["bare"]!;
  const zodOnly = m["zod"]!;
  const gated = m["gate"]!;
  return [
    "gate overhead — small pure tool (median of 300 interleaved rounds × 200 calls)",
    row("bare handler call", bare),
    row("handler behind zod validation", zodOnly, bare),
    row("gate.invoke, memory journal", gated, bare),
    `gate overhead over the bare call: ${(gated - bare).toFixed(3)} µs (target ≤ 10 µs)`,
  ];
}
