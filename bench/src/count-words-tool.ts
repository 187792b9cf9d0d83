import { defineTool } from "@toolgate/core";
import { z } from "zod";

/** The trivial tool every benchmark measures, so their figures compare the same work. */
export const countWordsInput = z.object({ text: z.string().max(10_000) });

/** The bare body, for the "bare call" and "zod only" baselines and the MCP SDK's servers. */
export const countWords = (args: { text: string }) => ({ words: args.text.split(" ").length });

/** The same body as a Toolgate tool: pure, low risk, needs `bench:read`. */
export const countWordsTool = defineTool({
  id: "bench.count_words",
  title: "Count words",
  description: "Count words.",
  input: countWordsInput,
  output: z.object({ words: z.number().int() }),
  actionType: "compute",
  effect: "none",
  requiredAllowlist: ["bench:read"],
  risk: "low",
  approval: "never",
  runtimeIsolation: { network: "none", filesystem: "none", secrets: "none", subprocess: "none" },
  untrustedOutput: false,
  handler: countWords,
});
