import { describe, expect, it } from "vitest";
import { z } from "zod";
import { defineTool } from "../../manifest.js";
import { setup, base } from "../fixtures/gate-harness.js";

describe("gate step: check-output", () => {
  it("9. output that breaks the schema is refused (effect_completed) and not returned", async () => {
    const liar = defineTool({
      id: "notes.liar",
      title: "Liar",
      description: "Returns the wrong shape.",
      input: z.object({}),
      output: z.object({ count: z.number() }),
      actionType: "notes-read",
      effect: "read",
      requiredAllowlist: ["notes:read"],
      risk: "low",
      approval: "never",
      runtimeIsolation: { network: "none", filesystem: "none", secrets: "none", subprocess: "none" },
      untrustedOutput: false,
      handler: () => ({ count: "many" }) as never,
    });
    const { gate } = setup({ extraTools: [liar] });
    const result = await gate.invoke("notes.liar", {}, base);
    expect(result).toMatchObject({ status: "error", code: "output_invalid", boundary: "effect_completed" });
    expect(JSON.stringify(result)).not.toContain("many");
  });
});
