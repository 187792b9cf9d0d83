/**
 * The bubblewrap sandbox: finding bwrap once when the verifier is made, and the argv that runs a
 * command under it (no network, its own process, IPC and host-name namespaces, private `/tmp`,
 * `/proc` and `/dev`, system paths and, unless the command may write, the root read-only).
 */
import { accessSync, constants, lstatSync } from "node:fs";
import path from "node:path";
import { ToolError } from "../errors.js";
import type { BubblewrapSandbox, VerifierSandbox } from "./verifier-options.js";
import { isDirectory, protectedPaths } from "./protected-paths.js";

/** Host paths a bubblewrap sandbox sees read-only by default. */
export const DEFAULT_SANDBOX_READ_ONLY_PATHS: readonly string[] = [
  "/usr",
  "/bin",
  "/sbin",
  "/lib",
  "/lib32",
  "/lib64",
  "/libx32",
  "/etc/alternatives",
  "/etc/ld.so.cache",
  "/etc/ld.so.conf",
  "/etc/ld.so.conf.d",
  "/etc/ssl",
  "/etc/ca-certificates",
  "/etc/passwd",
  "/etc/group",
  "/etc/nsswitch.conf",
  "/etc/localtime",
  "/etc/hosts",
];

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

/**
 * The bubblewrap arguments that hide every protected path (and `hidden`) inside the paths a sandbox
 * binds: a directory behind an empty tmpfs, a file behind /dev/null. Pass them after the binds.
 * Every sandbox that binds host paths (the verifier's, tool processes', imported MCP servers')
 * uses this one list, so the gate's state is out of reach wherever it is configured.
 */
export function bubblewrapMasks(bound: readonly string[], hidden: readonly string[] = []): string[] {
  return masked(bound, [...protectedPaths(), ...hidden]).flatMap((p) => (isDirectory(p) ? ["--tmpfs", p] : ["--ro-bind", "/dev/null", p]));
}

const under = (p: string, dir: string) => p === dir || p.startsWith(dir.endsWith(path.sep) ? dir : dir + path.sep);

/** The paths to hide: existing, not links (their targets are listed in real form), under a bound path, parents before (and instead of) children. */
function masked(bound: readonly string[], candidates: readonly string[]): string[] {
  const chosen: string[] = [];
  for (const p of [...new Set(candidates.map((c) => path.resolve(c)))].sort((a, b) => a.length - b.length)) {
    if (!bound.some((b) => under(p, b)) || chosen.some((c) => under(p, c))) continue;
    try {
      if (lstatSync(p).isSymbolicLink()) continue;
    } catch {
      continue;
    }
    chosen.push(p);
  }
  return chosen;
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
