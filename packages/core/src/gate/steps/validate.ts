/** Step 4: the input passes the tool's schema; a refusal carries the issues and JSON Schema a model can retry with. */
import type { z } from "zod";
import { ToolError } from "../../errors.js";
import type { AnyToolManifest } from "../../manifest.js";
import type { Redactor } from "../../redactor.js";
import type { Frozen, Validated, Writable } from "../call-state.js";
import { errorText, refuse } from "../outcomes.js";
import type { ErrorResult } from "../results.js";
import type { Step } from "../pipeline.js";

export const validate: Step<Frozen, Validated> = {
  name: "validate",
  run(c, env) {
    const checked = parseInput(c.manifest, c.parsed, env.redactor);
    if ("error" in checked) return refuse(env, c, "error", checked.error, { issues: checked.issues, inputSchema: c.tool.descriptor.inputSchema });
    const next = c as Writable<Validated>;
    next.parsed = checked.data;
    next.validated = true;
    return next;
  },
};

export function parseInput(
  manifest: AnyToolManifest,
  value: unknown,
  redactor: Redactor,
): { data: unknown } | { error: ToolError; issues: ErrorResult["issues"] } {
  let parsed: z.ZodSafeParseResult<unknown>;
  try {
    parsed = manifest.input.safeParse(value);
  } catch (cause) {
    return {
      error: new ToolError("invalid_input", `input for ${manifest.id} could not be validated: ${redactor.redactText(errorText(cause))}`, { cause }),
      issues: [],
    };
  }
  if (parsed.success) return { data: parsed.data };
  const issues = parsed.error.issues.map((i: z.core.$ZodIssue) => ({ path: i.path.map(String).join(".") || "(root)", message: i.message, code: i.code }));
  return {
    error: new ToolError("invalid_input", `input for ${manifest.id} is invalid: ${issues.map((i) => `${i.path}: ${i.message}`).join("; ")}`),
    issues,
  };
}
