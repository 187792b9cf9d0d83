import { processTool, serveToolProcess } from "@toolgate/process/sdk";
import { z } from "zod";

// The trivial tool process the round-trip bench talks to.
await serveToolProcess({
  name: "bench",
  tools: [
    processTool({
      name: "echo",
      description: "Return the text.",
      input: z.object({ text: z.string() }),
      requiredScope: "bench:echo",
      handler: ({ text }) => ({ text }),
    }),
  ],
});
