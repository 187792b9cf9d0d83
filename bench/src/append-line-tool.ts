import { defineTool, type ToolContext } from "@toolgate/core";
import { z } from "zod";

/**
 * The side-effectful tool the durable benchmarks measure: `<family>.append_line`, a write that
 * cannot be undone, low risk, needs `<family>:write`. A fresh `n` per call gives each call its own
 * derived idempotency key, so every call runs its effect.
 */
export function appendLineTool<const F extends string>(family: F, handler: (args: { line: string; n: number }, ctx: ToolContext) => { length: number }) {
  return defineTool({
    id: `${family}.append_line`,
    title: "Append a line",
    description: "Append a line to a log. Cannot be undone.",
    input: z.object({ line: z.string().max(200), n: z.number().int() }),
    output: z.object({ length: z.number().int() }),
    actionType: "log-write",
    effect: "write",
    requiredAllowlist: [`${family}:write`],
    risk: "low",
    approval: "never",
    idempotent: false,
    retryable: false,
    reversible: false,
    runtimeIsolation: { network: "none", filesystem: "none", secrets: "none", subprocess: "none" },
    untrustedOutput: false,
    target: (args) => `line ${args.n}`,
    handler,
  });
}
