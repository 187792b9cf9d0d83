// A Toolgate tool process with the benchmark's trivial tool, over stdio.
import { processTool, serveToolProcess } from "@toolgate/process/sdk";
import { z } from "zod";

const countWords = processTool({
  name: "count_words",
  description: "Count words.",
  input: z.object({ text: z.string().max(10_000) }),
  requiredScope: "text:read",
  handler: ({ text }) => ({ words: text.split(" ").length }),
});
await serveToolProcess({ name: "bench_process", tools: [countWords] });
