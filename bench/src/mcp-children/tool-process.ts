// A Toolgate tool process with the benchmark's trivial tool, over stdio: `count_words`, and the same
// body as `count_words_read`, which the host governs as a read (for the informational row).
import { processTool, serveToolProcess } from "@toolgate/process/sdk";
import { z } from "zod";

const tools = ["count_words", "count_words_read"].map((name) =>
  processTool({
    name,
    description: "Count words.",
    input: z.object({ text: z.string().max(10_000) }),
    requiredScope: "text:read",
    handler: ({ text }) => ({ words: text.split(" ").length }),
  }),
);
await serveToolProcess({ name: "bench_process", tools });
