/**
 * The bubblewrap sandbox: finding bwrap once when the verifier is made, and the argv that runs a
 * command under it (no network, its own process, IPC and host-name namespaces, private `/tmp`,
 * `/proc` and `/dev`, system paths and, unless the command may write, the root read-only).
 */
import { accessSync, constants } from "node:fs";
import path from "node:path";
import { ToolError } from "../errors.js";
import type { BubblewrapSandbox, VerifierSandbox } from "./verifier-options.js";
import { bubblewrapMasks, DEFAULT_SANDBOX_READ_ONLY_PATHS } from "./sandbox/profile.js";

/** A sandbox ready to use: the bwrap program found and the read-only paths checked. */
export interface PreparedSandbox {
  readonly bwrap: string;
  readonly readOnlyPaths: readonly string[];
  readonly hide: BubblewrapSandbox["hide"];
}

/** The sandbox as configured; undefined for `"none"`. `config_invalid` when bwrap is missing. */
export function prepareSandbox(spec: VerifierSandbox, env: Record<string, string>, realRoot: string): PreparedSandbox | undefined {
  if (spec === "none") return undefined;
  const settings: BubblewrapSandbox | undefined =
    spec === "bubblewrap" ? { kind: "bubblewrap" } : typeof spec === "object" && spec !== null && spec.kind === "bubblewrap" ? spec : undefined;
  if (settings === undefined) throw new ToolError("config_invalid", `verifier sandbox must be "none" or "bubblewrap"`);
  if (realRoot === path.parse(realRoot).root) throw new ToolError("config_invalid", "a sandboxed verifier cannot use the filesystem root as its root");
  const readOnlyPaths = settings.readOnlyPaths ?? DEFAULT_SANDBOX_READ_ONLY_PATHS;
  for (const p of readOnlyPaths) {
    if (typeof p !== "string" || !path.isAbsolute(p) || p.includes("\0")) throw new ToolError("config_invalid", "sandbox readOnlyPaths must be absolute paths");
  }
  let bwrap = settings.bwrapPath ?? findOnPath("bwrap", `${process.env["PATH"] ?? ""}${path.delimiter}${env["PATH"] ?? ""}${path.delimiter}/usr/bin:/bin`);
  if (bwrap !== undefined && !isExecutable(bwrap)) bwrap = undefined;
  if (bwrap === undefined) {
    throw new ToolError(
      "config_invalid",
      'verifier sandbox "bubblewrap" needs the bwrap program, which is not installed or not executable (install the bubblewrap package)',
    );
  }
  if (settings.hide !== undefined && typeof settings.hide !== "function") throw new ToolError("config_invalid", "sandbox hide must be a function");
  return { bwrap, readOnlyPaths, hide: settings.hide };
}

/**
 * The argv that runs `argv` in `cwd` under the sandbox, with the root writable only when `write`.
 * Every protected path (see `protectPath`) and every path in `hidden` that exists under what the
 * sandbox binds is hidden: a directory behind an empty tmpfs, a file behind `/dev/null`.
 */
export function sandboxedArgv(
  sandbox: PreparedSandbox,
  realRoot: string,
  cwd: string,
  write: boolean,
  argv: readonly string[],
  hidden: readonly string[] = [],
): string[] {
  const args = [sandbox.bwrap, "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try", "--die-with-parent"];
  // The private /tmp first, so a read-only path that lives under /tmp is bound over it, not hidden by it.
  args.push("--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp");
  for (const p of sandbox.readOnlyPaths) args.push("--ro-bind-try", p, p);
  args.push(write ? "--bind" : "--ro-bind", realRoot, realRoot);
  args.push(...bubblewrapMasks([realRoot, ...sandbox.readOnlyPaths], hidden));
  return [...args, "--chdir", cwd, "--", ...argv];
}

function findOnPath(program: string, searchPath: string): string | undefined {
  for (const dir of searchPath.split(path.delimiter)) {
    if (!path.isAbsolute(dir)) continue;
    const candidate = path.join(dir, program);
    if (isExecutable(candidate)) return candidate;
  }
  return undefined;
}

function isExecutable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}
