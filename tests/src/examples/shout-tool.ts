import { processTool, serveToolProcess } from "@toolgate/process/sdk";
import { z } from "zod";

// A tool process in TypeScript: run it with node, and the host governs it like any other family.
const shout = processTool({
  name: "shout",
  description: "Upper-case a text, reporting progress line by line.",
  input: z.object({ text: z.string().max(10_000) }),
  requiredScope: "text:transform",
  handler: async ({ text }, ctx) => {
    const lines = text.split("\n");
    const out: string[] = [];
    for (const [i, line] of lines.entries()) {
      if (ctx.signal.aborted) throw new Error("cancelled");
      out.push(line.toUpperCase());
      ctx.progress(`line ${i + 1} of ${lines.length}`);
    }
    return { text: out.join("\n") };
  },
});

await serveToolProcess({ name: "shouter", tools: [shout] });
