import { accessSync, constants, statSync } from "node:fs";
import { delimiter, join } from "node:path";
import { ToolError } from "@toolgate/core";

/**
 * A wrapper the spawn goes through. `bubblewrap`: read-only root, no network, private /dev and
 * /proc, dies with the host. `firejail`: no network, no profile. `custom`: your own argv prefix
 * (the command and its args are appended). `args` adds wrapper arguments before the command.
 */
export type SandboxOption =
  | "bubblewrap"
  | "firejail"
  | { readonly kind: "bubblewrap" | "firejail"; readonly args?: readonly string[] }
  | { readonly kind: "custom"; readonly argv: readonly string[] };

/** Host variables passed through by default: enough to find programs and decode text, nothing secret. */
export const DEFAULT_PASS_ENV = ["PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ"] as const;

/** The child's environment: only the allowlisted host variables, then the operator's explicit ones. */
export function childEnv(passEnv: readonly string[], env: Readonly<Record<string, string>>, hostEnv: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of passEnv) {
    const value = hostEnv[name];
    if (typeof value === "string") out[name] = value;
  }
  for (const [name, value] of Object.entries(env)) {
    if (typeof value !== "string" || name.includes("=") || name.includes("\0") || value.includes("\0")) {
      throw new ToolError("config_invalid", `env ${JSON.stringify(name)} must be a string without "=" in its name or NUL bytes`);
    }
    out[name] = value;
  }
  return out;
}

/** The absolute path of `command` on `searchPath`, or undefined when there is none that can run. */
export function findExecutable(command: string, searchPath: string | undefined = process.env["PATH"]): string | undefined {
  const runnable = (file: string): boolean => {
    try {
      if (!statSync(file).isFile()) return false;
      accessSync(file, constants.X_OK);
      return true;
    } catch {
      return false;
    }
  };
  if (command.includes("/")) return runnable(command) ? command : undefined;
  for (const dir of (searchPath ?? "").split(delimiter)) {
    if (dir === "") continue;
    const file = join(dir, command);
    if (runnable(file)) return file;
  }
  return undefined;
}

const WRAPPERS = {
  bubblewrap: {
    program: "bwrap",
    // Read-only view of the host, no network, fresh /dev and /proc, a new session (no terminal
    // injection), and the sandbox dies with its parent.
    args: ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-net", "--new-session", "--die-with-parent"],
  },
  firejail: { program: "firejail", args: ["--quiet", "--noprofile", "--net=none"] },
} as const;

/** The argv to spawn: the wrapper's prefix (resolved, or a clear error naming it), then the command. */
export function wrappedArgv(command: string, args: readonly string[], sandbox: SandboxOption | undefined, cwd: string | undefined): string[] {
  if (sandbox === undefined) return [command, ...args];
  const spec = typeof sandbox === "string" ? { kind: sandbox } : sandbox;
  if (spec.kind === "custom") {
    const [program, ...prefix] = (spec as { argv: readonly string[] }).argv;
    if (typeof program !== "string" || program === "") throw new ToolError("config_invalid", "sandbox.argv needs at least the wrapper program");
    const found = findExecutable(program);
    if (!found) throw new ToolError("config_invalid", `sandbox wrapper ${JSON.stringify(program)} was not found or is not executable`);
    return [found, ...prefix, command, ...args];
  }
  const known = WRAPPERS[spec.kind as keyof typeof WRAPPERS];
  if (!known) throw new ToolError("config_invalid", `unknown sandbox ${JSON.stringify(spec.kind)}: use "bubblewrap", "firejail" or { kind: "custom", argv }`);
  const found = findExecutable(known.program);
  if (!found) throw new ToolError("config_invalid", `sandbox ${spec.kind} needs ${known.program}, which was not found on PATH`);
  const extra = (spec as { args?: readonly string[] }).args ?? [];
  const chdir = spec.kind === "bubblewrap" && cwd !== undefined ? ["--chdir", cwd] : [];
  return [found, ...known.args, ...chdir, ...extra, command, ...args];
}
