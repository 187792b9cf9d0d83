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

  it("9b. the refusal's message quotes what the schema saw, redacted: a secret as an unknown key is not in the result or the journal", async () => {
    const secret = "sk-live-outputkey-5f2a9c";
    const leaky = defineTool({
      id: "notes.leaky_keys",
      title: "Leaky keys",
      description: "Returns an object with a key its strict schema does not know.",
      input: z.object({}),
      output: z.strictObject({ ok: z.boolean() }),
      actionType: "notes-read",
      effect: "read",
      requiredAllowlist: ["notes:read"],
      risk: "low",
      approval: "never",
      runtimeIsolation: { network: "none", filesystem: "none", secrets: "none", subprocess: "none" },
      untrustedOutput: false,
      handler: () => ({ ok: true, [secret]: 1 }) as never,
    });
    const { gate, journal } = setup({ extraTools: [leaky], secrets: [secret] });
    const result = await gate.invoke("notes.leaky_keys", {}, base);
    expect(result).toMatchObject({ status: "error", code: "output_invalid" });
    expect(result.status === "error" && result.message).toMatch(/Unrecognized key.*\[REDACTED\]/);
    expect(JSON.stringify(result)).not.toContain(secret);
    expect(JSON.stringify(await journal.readAudit())).not.toContain(secret);
    expect(JSON.stringify(await journal.listOutbox())).not.toContain(secret);
  });
});
