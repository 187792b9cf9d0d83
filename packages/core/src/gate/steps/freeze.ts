/** Step 2: the input as canonical JSON (RFC 8785), its SHA-256, and a private copy for the body. */
import { canonicalJson, sha256Hex } from "../../canonical-json.js";
import { ToolError } from "../../errors.js";
import type { Frozen, Resolved, Writable } from "../call-state.js";
import type { GateEnv } from "../env.js";
import { refuse } from "../outcomes.js";
import type { Step } from "../pipeline.js";

export const freeze: Step<Resolved, Frozen> = {
  name: "freeze",
  run(c, env) {
    const frozen = freezeInput(env, c.input);
    if (ToolError.is(frozen)) return refuse(env, c, "error", frozen, { inputSchema: c.tool.descriptor.inputSchema });
    const next = c as Writable<Frozen>;
    next.inputHash = frozen.inputHash;
    next.inputJson = frozen.inputJson;
    next.parsed = frozen.parsed;
    return next;
  },
};

export function freezeInput(env: GateEnv, input: unknown): { inputHash: string; inputJson: string; parsed: unknown } | ToolError {
  try {
    const json = canonicalJson(input);
    // A UTF-16 unit is at most 3 UTF-8 bytes: text that short cannot be too large, and its bytes need no count.
    if (json.length > env.maxInputBytes || (json.length * 3 > env.maxInputBytes && Buffer.byteLength(json, "utf8") > env.maxInputBytes)) {
      return new ToolError("invalid_input", `input is larger than ${env.maxInputBytes} bytes`);
    }
    // The body's own copy: the caller keeps no reference into what was authorized.
    return { inputHash: sha256Hex(json), inputJson: json, parsed: JSON.parse(json) as unknown };
  } catch (cause) {
    return new ToolError("invalid_input", `input is not plain JSON: ${(cause as Error).message}`, { cause });
  }
}
