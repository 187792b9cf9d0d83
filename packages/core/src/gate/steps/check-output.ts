/** Step 13: the body's output matches the tool's schema; otherwise `output_invalid` (the effect did happen). */
import type { z } from "zod";
import { ToolError } from "../../errors.js";
import type { OutputChecked, Ran, Writable } from "../call-state.js";
import { jsonBoundsProblem } from "../../boundary/json-bounds.js";
import { settleFailure } from "../outcomes.js";
import type { Step } from "../pipeline.js";

export const checkOutput: Step<Ran, OutputChecked> = {
  name: "check-output",
  run(c, env) {
    const { manifest } = c.tool;
    // Bounded before anything recursive reads it: a value nested 100,000 deep is refused, not a stack overflow.
    const outOfBounds = jsonBoundsProblem(c.raw);
    if (outOfBounds) return settleFailure(env, c, "effect_completed", new ToolError("output_invalid", `${manifest.id} returned output with ${outOfBounds}`));
    let checked: z.ZodSafeParseResult<unknown>;
    try {
      checked = manifest.output.safeParse(c.raw);
    } catch (cause) {
      return settleFailure(env, c, "effect_completed", new ToolError("output_invalid", `${manifest.id}'s output could not be validated`, { cause }));
    }
    if (!checked.success) {
      const issues = checked.error.issues.map((i: z.core.$ZodIssue) => `${i.path.map(String).join(".") || "(root)"}: ${i.message}`);
      return settleFailure(
        env,
        c,
        "effect_completed",
        new ToolError("output_invalid", `${manifest.id} returned output that does not match its schema: ${issues.join("; ")}`),
      );
    }
    const next = c as unknown as Writable<OutputChecked>;
    next.output = checked.data;
    return next;
  },
};
