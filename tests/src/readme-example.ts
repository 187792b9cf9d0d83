import { createGate, createMemoryJournal, createToolRegistry, defineFamily, defineProfile, defineTool } from "@toolgate/core";
import { z } from "zod";

const countWords = defineTool({
  id: "text.count_words",
  title: "Count words",
  description: "Count the words in a text.",
  input: z.object({ text: z.string() }),
  output: z.object({ words: z.number() }),
  actionType: "compute",
  effect: "none",
  requiredAllowlist: ["text:read"],
  risk: "low",
  approval: "never",
  untrustedOutput: false,
  runtimeIsolation: { network: "none", filesystem: "none", secrets: "none", subprocess: "none" },
  handler: ({ text }) => ({ words: text.split(/\s+/).filter(Boolean).length }),
});
const registry = createToolRegistry({ families: [defineFamily({ name: "text", tools: [countWords], permissions: ["text:read"] })] });
const profile = defineProfile({ name: "reader", allow: ["text:read"], maxRisk: "low" });
const gate = createGate({ registry, journal: createMemoryJournal() });

export const result = await gate.invoke("text.count_words", { text: "governed tools for agents" }, { principal: "agent-1", tenant: "acme", profile });
if (result.status === "ok") console.log(result.output.words); // 4
