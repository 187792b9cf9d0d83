/** The environment a verifier command runs with: built from an allowlist, never inherited whole. */
import { ToolError } from "../errors.js";
import type { VerifierEnv } from "./verifier-options.js";

const DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin";
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** `PATH`, the host's values of the names in `pass`, then the values in `set`; nothing else. */
export function buildEnv(spec: VerifierEnv): Record<string, string> {
  const env: Record<string, string> = { PATH: process.env["PATH"] ?? DEFAULT_PATH };
  for (const name of spec.pass ?? []) {
    if (typeof name !== "string" || !ENV_NAME.test(name))
      throw new ToolError("config_invalid", `verifier env.pass holds an invalid name ${JSON.stringify(name)}`);
    const value = process.env[name];
    if (value !== undefined) env[name] = value;
  }
  for (const [name, value] of Object.entries(spec.set ?? {})) {
    if (!ENV_NAME.test(name)) throw new ToolError("config_invalid", `verifier env.set holds an invalid name ${JSON.stringify(name)}`);
    if (typeof value !== "string" || value.includes("\0")) throw new ToolError("config_invalid", `verifier env.set.${name} must be a string without NUL bytes`);
    env[name] = value;
  }
  return env;
}
