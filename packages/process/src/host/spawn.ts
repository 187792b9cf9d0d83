import type { ChildProcessWithoutNullStreams } from "node:child_process";
import { accessSync, constants, existsSync, realpathSync, statSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { basename, delimiter, dirname, isAbsolute, join, resolve } from "node:path";
import { ToolError } from "@toolgate/core";
import {
  DEFAULT_SANDBOX_READ_ONLY_PATHS,
  findBwrap,
  pathIsUnder,
  sandboxLaunch,
  type SandboxFacts,
  type SandboxLimitName,
  type SandboxLimits,
} from "@toolgate/core/boundary";

/**
 * A wrapper the spawn goes through. `auto` (the default): bubblewrap when `bwrap` is on PATH, and
 * otherwise no sandbox, with a start-up warning and an inventory that says so. `none`: no sandbox,
 * chosen explicitly. `bubblewrap`: core's one sandbox profile (every capability dropped, its own
 * namespaces, an empty read-only root with only the binds the tool needs, a seccomp filter, limits);
 * `bwrapPath` names the program where it is not on PATH. `custom`: your own argv prefix (the command
 * and its args are appended); the host cannot tell what it enforces, and the inventory says so.
 */
export type SandboxOption =
  "auto" | "none" | "bubblewrap" | { readonly kind: "bubblewrap"; readonly bwrapPath?: string } | { readonly kind: "custom"; readonly argv: readonly string[] };

/** The sandbox a process actually runs in, once `auto` is decided; `none` when there is none. */
export type SandboxKind = "bubblewrap" | "custom" | "none";

/** What `auto` (or an explicit choice) came to, and why, for the inventory and the start-up warning. */
export interface ResolvedSandbox {
  /** The option to spawn with: `undefined` for no wrapper. */
  readonly option: Exclude<SandboxOption, "auto" | "none"> | undefined;
  readonly kind: SandboxKind;
  /** True when the operator did not choose: `auto`, or no `sandbox` option at all. */
  readonly automatic: boolean;
  /** Set when `auto` found no bubblewrap: the process runs unsandboxed, and the operator is told. */
  readonly warning: string | undefined;
  /** The bwrap program, for `bubblewrap`. */
  readonly bwrap?: string | undefined;
}

/** Why `sandbox: "firejail"` is refused (it was a choice before). */
export const FIREJAIL_REMOVED =
  'sandbox "firejail" was removed: firejail is a setuid-root wrapper, and it was never tested against the escapes the bubblewrap profile is tested against (capabilities, the host\'s /proc, Unix sockets, daemons, limits); use "bubblewrap", or { kind: "custom", argv } at your own risk';

/**
 * Decide `auto` (or no option) on `searchPath`; an explicit `bubblewrap` whose program is missing,
 * `firejail` and anything unknown are refused here (`config_invalid`), before anything is spawned.
 */
export function resolveSandbox(
  sandbox: SandboxOption | undefined,
  searchPath: string | undefined = process.env["PATH"],
  who = "tool process",
): ResolvedSandbox {
  if (sandbox === "none") return { option: undefined, kind: "none", automatic: false, warning: undefined };
  if (sandbox === undefined || sandbox === "auto") {
    // On the operator's PATH only: where it is not, the operator is told so, by that name.
    const bwrap = findExecutable("bwrap", searchPath);
    if (bwrap !== undefined) return { option: "bubblewrap", kind: "bubblewrap", automatic: true, warning: undefined, bwrap };
    return {
      option: undefined,
      kind: "none",
      automatic: true,
      warning:
        'sandbox "auto": bwrap (bubblewrap) was not found on PATH, so this tool process runs unsandboxed, with your user\'s network and files; install bubblewrap, or set sandbox: "none" to make that choice explicit',
    };
  }
  const kind: unknown =
    typeof sandbox === "string" ? sandbox : typeof sandbox === "object" && sandbox !== null ? (sandbox as { kind?: unknown }).kind : undefined;
  if (kind === "firejail") throw new ToolError("config_invalid", FIREJAIL_REMOVED);
  if (kind === "bubblewrap") {
    const extra = typeof sandbox === "object" ? Object.keys(sandbox).filter((k) => k !== "kind" && k !== "bwrapPath") : [];
    if (extra.includes("args")) {
      throw new ToolError(
        "config_invalid",
        "sandbox.args was removed: wrapper arguments could undo the profile; name what the tool needs with readOnlyPaths, writablePaths, unixSockets and network",
      );
    }
    if (extra.length > 0) throw new ToolError("config_invalid", `sandbox: unknown field ${JSON.stringify(extra[0])} for bubblewrap (use bwrapPath)`);
    const configured = typeof sandbox === "object" ? (sandbox as { bwrapPath?: string }).bwrapPath : undefined;
    const bwrap = findBwrap(who, configured, searchPath ?? "");
    return { option: sandbox as ResolvedSandbox["option"], kind: "bubblewrap", automatic: false, warning: undefined, bwrap };
  }
  if (kind === "custom" && typeof sandbox === "object") return { option: sandbox, kind: "custom", automatic: false, warning: undefined };
  throw new ToolError("config_invalid", `unknown sandbox ${JSON.stringify(kind ?? sandbox)}: use "auto", "none", "bubblewrap" or { kind: "custom", argv }`);
}

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

/** What the sandbox of one tool process binds and enforces, besides the program itself. */
export interface SandboxRequest {
  /** Who to name in a configuration error. */
  readonly who: string;
  readonly command: string;
  readonly args: readonly string[];
  /** The operator's `cwd`, when given. */
  readonly cwd: string | undefined;
  /** The child's PATH, to find the command on. */
  readonly searchPath: string | undefined;
  readonly readOnlyPaths: readonly string[];
  readonly writablePaths: readonly string[];
  readonly unixSockets: readonly string[];
  readonly network: boolean;
  readonly limits: SandboxLimits;
  /** The tool's environment (allowlisted). */
  readonly env: Readonly<Record<string, string>>;
}

/** One start of the process: what to spawn, and for a sandbox, what it enforces and how to end it. */
export interface SpawnPlan {
  readonly argv: readonly string[];
  /** What to write to descriptors 3, 4, … (the seccomp program, the tool's environment), under the sandbox. */
  readonly descriptors: readonly Buffer[];
  /** The environment to spawn with, under the sandbox (the tool's own reaches only the tool). */
  readonly env: Readonly<Record<string, string>> | undefined;
  /** The sandbox as built; undefined without bubblewrap. */
  readonly facts: SandboxFacts | undefined;
  /** After the process exited: the limits it hit (and the run's cgroup removed). Once. */
  readonly finish: ((exit: { readonly code: number | null; readonly signal: NodeJS.Signals | null }) => SandboxLimitName[]) | undefined;
}

/** Directories never bound whole for a tool: `/`, the home directory and those above it, the host's temporary directory. */
function sharedDirectory(dir: string): string | undefined {
  const home = homedir();
  if (dir === "/") return "the root directory";
  if (home !== "" && pathIsUnder(home, dir)) return dir === home ? "the home directory" : "a directory above the home directory";
  if (dir === "/tmp" || dir === resolve(tmpdir())) return "the host's temporary directory";
  return undefined;
}

const systemPath = (p: string): boolean => DEFAULT_SANDBOX_READ_ONLY_PATHS.some((s) => pathIsUnder(p, s));

/**
 * The program's own files outside the system paths: for a program in a `bin` directory (an
 * interpreter install such as /opt/x/bin/node, a virtual environment) the install's prefix, else
 * the file alone; for a link, the same for where it leads.
 */
function programFiles(file: string): string[] {
  const out: string[] = [];
  let real = file;
  try {
    real = realpathSync(file);
  } catch {
    // bubblewrap will say it cannot run it
  }
  for (const p of new Set([file, real])) {
    if (systemPath(p)) continue;
    const dir = dirname(p);
    const prefix = dirname(dir);
    out.push((basename(dir) === "bin" || basename(dir) === "sbin") && sharedDirectory(prefix) === undefined ? prefix : p);
  }
  return out;
}

/** Each argument that names an existing file: its directory (the file alone in a shared directory), and where a link leads. */
function argumentFiles(args: readonly string[], cwd: string): string[] {
  const out: string[] = [];
  for (const arg of args) {
    if (arg === "" || arg.includes("\0")) continue;
    const file = isAbsolute(arg) ? arg : resolve(cwd, arg);
    try {
      if (!statSync(file).isFile()) continue;
    } catch {
      continue;
    }
    let real = file;
    try {
      real = realpathSync(file);
    } catch {
      // named as given
    }
    for (const p of new Set([resolve(file), real])) {
      if (systemPath(p)) continue;
      out.push(sharedDirectory(dirname(p)) === undefined ? dirname(p) : p);
    }
  }
  return out;
}

/** `paths` without those inside another of them (or inside a writable path: that bind covers them). */
function outermost(paths: readonly string[], writable: readonly string[]): string[] {
  const unique = [...new Set(paths.map((p) => resolve(p)))];
  return unique.filter((p) => !unique.some((q) => q !== p && pathIsUnder(p, q)) && !writable.some((w) => pathIsUnder(p, resolve(w))));
}

/**
 * What to spawn for one start. Under bubblewrap: core's profile, binding read-only the system
 * paths, the program's own files, the files its arguments name, its working directory and the
 * operator's `readOnlyPaths`; writable only `writablePaths`; the named Unix sockets; nothing else of
 * the host. Taken again at each start, so the gate's state protected since the last one is hidden too.
 */
export function spawnPlan(request: SandboxRequest, sandbox: ResolvedSandbox): SpawnPlan {
  const { command, args } = request;
  if (sandbox.option === undefined) return { argv: [command, ...args], descriptors: [], env: undefined, facts: undefined, finish: undefined };
  if (sandbox.kind === "custom") {
    const [program, ...prefix] = (sandbox.option as { argv: readonly string[] }).argv ?? [];
    if (typeof program !== "string" || program === "") throw new ToolError("config_invalid", "sandbox.argv needs at least the wrapper program");
    const found = findExecutable(program);
    if (!found) throw new ToolError("config_invalid", `sandbox wrapper ${JSON.stringify(program)} was not found or is not executable`);
    return { argv: [found, ...prefix, command, ...args], descriptors: [], env: undefined, facts: undefined, finish: undefined };
  }
  const hostCwd = request.cwd === undefined ? process.cwd() : resolve(request.cwd);
  const writable = request.writablePaths;
  const readOnly: string[] = [];
  let cwd = hostCwd;
  const shared = sharedDirectory(hostCwd);
  if (shared !== undefined) {
    // Bound, it would show the tool everything in it (other users' files, the host's sockets, keys).
    if (request.cwd !== undefined) {
      throw new ToolError(
        "config_invalid",
        `${request.who}: cwd ${hostCwd} is ${shared}; the sandbox binds a tool's working directory, and this one holds far more than the tool's files: set cwd to the tool's own directory`,
      );
    }
    // Not chosen by the operator: the tool starts in its private /tmp instead.
    cwd = "/tmp";
  } else {
    readOnly.push(hostCwd);
  }
  const found = findExecutable(command.includes("/") ? resolve(hostCwd, command) : command, request.searchPath);
  // Found on the host's terms (its PATH), run by absolute path: the sandbox's PATH may hold none of it.
  const program = found === undefined ? command : resolve(hostCwd, found);
  if (found !== undefined) readOnly.push(...programFiles(program));
  readOnly.push(...argumentFiles(args, hostCwd));
  for (const p of request.readOnlyPaths) {
    if (typeof p !== "string" || !isAbsolute(p)) throw new ToolError("config_invalid", `${request.who}: readOnlyPaths must be absolute paths`);
    if (!existsSync(p)) throw new ToolError("config_invalid", `${request.who}: readOnlyPaths: ${p} does not exist`);
    readOnly.push(p);
  }
  const launch = sandboxLaunch(
    {
      bwrap: sandbox.bwrap ?? findBwrap(request.who),
      readOnly: [...DEFAULT_SANDBOX_READ_ONLY_PATHS, ...outermost(readOnly, writable)],
      writable,
      cwd,
      network: request.network,
      unixSockets: request.unixSockets,
      limits: request.limits,
      env: request.env,
    },
    [program, ...args],
    request.who,
  );
  return { argv: launch.argv, descriptors: launch.descriptors, env: launch.env, facts: launch.facts, finish: (exit) => launch.finish(exit) };
}

/** After a child exits, how long its pipes may stay open (held by a process it left behind) before they are closed. */
const PIPES_AFTER_EXIT_MS = 250;

/**
 * Close a child's pipes shortly after it exits: a process it left behind in a session of its own
 * may hold them open for as long as it lives, and whoever waits for the child's `close` would wait
 * for that process. The close runs after the event loop's next poll, so what the child wrote before
 * it exited is read first.
 */
export function closePipesAfterExit(child: ChildProcessWithoutNullStreams): void {
  child.once("exit", () => {
    setTimeout(() => {
      setImmediate(() => closePipes(child));
    }, PIPES_AFTER_EXIT_MS).unref();
  });
}

/** Close a child's pipes now (a process it left behind may hold their other ends for as long as it lives). */
export function closePipes(child: ChildProcessWithoutNullStreams): void {
  for (const stream of [child.stdin, child.stdout, child.stderr]) stream.destroy();
}
