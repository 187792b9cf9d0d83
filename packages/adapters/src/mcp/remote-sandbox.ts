/**
 * How an imported stdio MCP server is started: in core's one sandbox profile by default
 * (`sandbox: "auto"`) — bubblewrap with every capability dropped, its own namespaces, no network
 * and no host Unix socket unless named, a seccomp filter, limits, and a read-only empty root that
 * holds only the system paths, the server's working directory, its own program and scripts and the
 * paths the operator adds (the gate's state masked in them) — or, where bwrap is missing,
 * unsandboxed with a warning and an isolation that says so.
 */
import { accessSync, constants, realpathSync, statSync } from "node:fs";
import path from "node:path";
import { ToolError, type RuntimeIsolation } from "@toolgate/core";
import {
  DEFAULT_SANDBOX_READ_ONLY_PATHS,
  findBwrap,
  pathIsUnder,
  sandboxIsolation,
  sandboxLaunch,
  sandboxLimits,
  sandboxWorks,
  type SandboxLimitName,
  type SandboxLimits,
  type SandboxSpec,
} from "@toolgate/core/boundary";
import type { ImportMcpServerOptions } from "./import-options.js";

/** `auto` (default): bubblewrap where bwrap is found, otherwise none with a warning. `bubblewrap`: required. */
export type McpSandboxOption =
  | "auto"
  | "bubblewrap"
  | "none"
  | {
      readonly kind: "auto" | "bubblewrap";
      /** Let the server reach the network; default false. */
      readonly network?: boolean;
      /** More host paths the server may read (its install directory, its modules); absolute. */
      readonly readOnlyPaths?: readonly string[];
      /** Host Unix sockets the server may connect to (each must exist); without any, it may open none. */
      readonly unixSockets?: readonly string[];
      /** Limits over the sandbox's defaults (memory, processes, open files, CPU, file size, /tmp, output). */
      readonly limits?: Partial<SandboxLimits>;
      /** Where bwrap is; default the first on PATH, then /usr/bin and /bin. */
      readonly bwrapPath?: string;
    };

/** One start of the server: what to spawn, with what, and the end of the run. */
export interface ServerStart {
  /** argv[0] is the program. */
  readonly argv: readonly string[];
  /** Written to descriptors 3, 4, … (pipes) as the server starts: the sandbox's seccomp program and the server's environment. */
  readonly descriptors: readonly Buffer[];
  /** The environment to spawn with: under the sandbox, not the server's (that reaches only the server). */
  readonly env: Readonly<Record<string, string>>;
  /** Once the server exited: the limits it hit (and its sandbox's cgroup removed). */
  finish(exit: { readonly code: number | null; readonly signal: NodeJS.Signals | null }): SandboxLimitName[];
}

/** How the server is started, each time, and what the inventory may claim about it. */
export interface StdioLaunch {
  /** The server's whole environment. */
  readonly env: Readonly<Record<string, string>>;
  readonly isolation: RuntimeIsolation;
  /** Set when the server runs with less isolation than the default promises. */
  readonly warning: string | undefined;
  /** The sandbox's limits, or undefined without a sandbox. */
  readonly limits: SandboxLimits | undefined;
  /** A fresh start (a new sandbox, with its own cgroup): called for every start of the server. */
  start(): ServerStart;
}

/** The server's environment: only the inherited names (default PATH), then the operator's own. */
function serverEnv(options: ImportMcpServerOptions): Record<string, string> {
  const env: Record<string, string> = {};
  for (const key of options.inheritEnv ?? ["PATH"]) {
    const value = process.env[key];
    if (value !== undefined) env[key] = value;
  }
  return Object.assign(env, options.env ?? {});
}

export function stdioLaunch(options: ImportMcpServerOptions): StdioLaunch {
  const { name } = options;
  const command = options.command!;
  const args = options.args ?? [];
  const option = options.sandbox ?? "auto";
  const env = serverEnv(options);
  const spec = typeof option === "string" ? { kind: option } : option;
  const where = path.resolve(options.cwd ?? process.cwd());
  const what = `MCP server over stdio: ${command}`;
  const unsandboxed = (why: string): StdioLaunch => ({
    env,
    isolation: sandboxIsolation(undefined, what, "process", why),
    warning: why === "sandbox: none" ? undefined : `MCP server ${name} runs without a sandbox: ${why}`,
    limits: undefined,
    start: () => ({ argv: [command, ...args], descriptors: [], env, finish: () => [] }),
  });
  if (spec === null || typeof spec !== "object" || !["auto", "bubblewrap", "none"].includes(spec.kind)) {
    throw new ToolError(
      "config_invalid",
      `MCP server ${name}: sandbox must be "auto", "bubblewrap", "none" or { kind, network, readOnlyPaths, unixSockets, limits, bwrapPath }`,
    );
  }
  if (spec.kind === "none") return unsandboxed("sandbox: none");
  const settings = spec as Exclude<McpSandboxOption, string>;
  const who = `MCP server ${name}`;
  if (settings.bwrapPath !== undefined && (typeof settings.bwrapPath !== "string" || !path.isAbsolute(settings.bwrapPath))) {
    throw new ToolError("config_invalid", `${who}: bwrapPath must be an absolute path`);
  }
  let bwrap: string | undefined;
  try {
    bwrap = findBwrap(who, settings.bwrapPath);
  } catch {
    bwrap = undefined;
  }
  // Installed is not enough: the kernel may refuse the namespaces (then the sandbox fails at once).
  if (bwrap !== undefined && !sandboxWorks(bwrap)) bwrap = undefined;
  if (bwrap === undefined) {
    if (spec.kind === "bubblewrap")
      throw new ToolError("config_invalid", `${who}: sandbox "bubblewrap" needs the bwrap program, which was not found or cannot make a sandbox here`);
    return unsandboxed("bubblewrap (bwrap) was not found or cannot make a sandbox here");
  }
  const extra = settings.readOnlyPaths ?? [];
  for (const p of extra) {
    if (typeof p !== "string" || !path.isAbsolute(p) || p.includes("\0")) throw new ToolError("config_invalid", `${who}: readOnlyPaths must be absolute paths`);
  }
  const sockets = settings.unixSockets ?? [];
  if (!Array.isArray(sockets)) throw new ToolError("config_invalid", `${who}: unixSockets must be a list of absolute paths`);
  const limits = sandboxLimits(settings.limits, who);
  const program = resolveCommand(command, where, env["PATH"] ?? process.env["PATH"] ?? "");
  const own = [where, ...ownFiles(program, args, where)];
  // A server started in "/" (or with a script there) would see the whole host.
  if (own.includes(path.parse(where).root)) {
    throw new ToolError("config_invalid", `${who}: its working directory or a script is at the root of the host; set cwd to the server's own directory`);
  }
  const sandbox: SandboxSpec = {
    bwrap,
    readOnly: [...DEFAULT_SANDBOX_READ_ONLY_PATHS, ...extra, ...own],
    cwd: where,
    network: settings.network === true,
    unixSockets: sockets,
    limits,
    env,
  };
  const argv = [program, ...args];
  // Built once now, so a bad setting (a protected path, a missing socket) fails the import, and the
  // inventory's words come from the sandbox as built; each start builds its own (a cgroup per run).
  const trial = sandboxLaunch(sandbox, argv, who);
  trial.finish({ code: null, signal: null });
  return {
    env,
    isolation: sandboxIsolation(trial.facts, what, "process"),
    warning: undefined,
    limits,
    start: () => sandboxLaunch(sandbox, argv, who),
  };
}

const SYSTEM = DEFAULT_SANDBOX_READ_ONLY_PATHS;
const isSystem = (p: string) => SYSTEM.some((dir) => pathIsUnder(p, dir));

/** The command as an absolute path (found on the server's PATH), or as given when it is nowhere: the sandbox then fails to start it. */
function resolveCommand(command: string, cwd: string, searchPath: string): string {
  const runnable = (file: string) => {
    try {
      accessSync(file, constants.X_OK);
      return statSync(file).isFile();
    } catch {
      return false;
    }
  };
  if (command.includes("/")) return path.resolve(cwd, command);
  for (const dir of searchPath.split(path.delimiter)) {
    if (!path.isAbsolute(dir)) continue;
    const file = path.join(dir, command);
    if (runnable(file)) return file;
  }
  return command;
}

/**
 * What of the server's own the sandbox must show it besides the system paths: its program (and the
 * file a link points to) and the directory of each argument that names a file (its script, as the
 * interpreter resolves it through links too). Directories an argument names are not added: the
 * operator lists those in `readOnlyPaths`.
 */
function ownFiles(program: string, args: readonly string[], cwd: string): string[] {
  const withTarget = (p: string): string[] => {
    try {
      return [p, realpathSync(p)];
    } catch {
      return [p];
    }
  };
  const out: string[] = path.isAbsolute(program) ? withTarget(program) : [];
  for (const arg of args) {
    if (arg === "" || arg.includes("\0")) continue;
    const file = path.resolve(cwd, arg);
    try {
      if (!statSync(file).isFile()) continue;
    } catch {
      continue;
    }
    out.push(...withTarget(file).map((f) => path.dirname(f)));
  }
  return [...new Set(out)].filter((p) => !isSystem(p));
}
