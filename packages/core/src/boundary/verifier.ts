import { spawn, type ChildProcess } from "node:child_process";
import { accessSync, constants } from "node:fs";
import { stat } from "node:fs/promises";
import path from "node:path";
import { performance } from "node:perf_hooks";
import type { Verifier, VerifierRunRequest, VerifierRunResult } from "../context.js";
import { ToolError } from "../errors.js";
import { createRootGuard } from "./resolve-within-root.js";

/** The arguments a declared command may take from a tool. Without it, the command takes none. */
export interface VerifierCommandArgs {
  /**
   * Every argument must match this pattern as a whole. A string is compiled as `^(?:pattern)$`;
   * a RegExp is anchored the same way, and its `g`, `y` and `m` flags are dropped (they would make
   * matching stateful or let a newline split an argument). Without a pattern, any argument that
   * the other rules allow passes.
   */
  readonly pattern?: RegExp | string;
  /**
   * Whether an argument may start with `-`. Default `false`: a tool cannot smuggle an option
   * (`--exec=…`, `-o/elsewhere`) into the command. Programs that read other prefixes as options
   * (`+x`, `@file`) need a `pattern`.
   */
  readonly allowOptions?: boolean;
  /** Most arguments a call may pass; default 64. */
  readonly max?: number;
}

/** One operator-declared command. */
export interface VerifierCommand {
  /**
   * The program and its fixed leading arguments, e.g. `["npm", "test", "--"]`. The program is an
   * absolute path or a name looked up on the child's `PATH`; no shell ever reads any of it.
   * Ending the template with `--` keeps the tool's arguments out of option parsing for programs
   * that honour it.
   */
  readonly argv: readonly [string, ...string[]];
  readonly args?: VerifierCommandArgs;
  /** Under a sandbox: whether the command may write to the root (default read-only). */
  readonly sandbox?: { readonly write?: boolean };
  /** This command's deadline; default the verifier's `timeoutMs`. */
  readonly timeoutMs?: number;
}

/**
 * The child's environment, built from nothing: `PATH` (the host's unless `set` gives one), the
 * host's values of the names in `pass`, then the values in `set`. Nothing else is inherited.
 */
export interface VerifierEnv {
  readonly pass?: readonly string[];
  readonly set?: Readonly<Record<string, string>>;
}

/** Bubblewrap settings; `"bubblewrap"` alone means all defaults. */
export interface BubblewrapSandbox {
  readonly kind: "bubblewrap";
  /** The bwrap program; default found on the host's `PATH`. */
  readonly bwrapPath?: string;
  /**
   * Host paths bound read-only into the sandbox, each only where it exists; default
   * {@link DEFAULT_SANDBOX_READ_ONLY_PATHS} (system programs and libraries, not the host's `/etc`
   * as a whole, nor home directories). Add where a command's tools live elsewhere.
   */
  readonly readOnlyPaths?: readonly string[];
}

export type VerifierSandbox = "none" | "bubblewrap" | BubblewrapSandbox;

/** Options for {@link createVerifier}. */
export interface CreateVerifierOptions {
  /** Absolute path of the directory commands run in (a symbolic link is resolved once). */
  readonly root: string;
  /** The commands a tool may run, by name. */
  readonly commands: Readonly<Record<string, VerifierCommand>>;
  /** Deadline per run; default 120 s. */
  readonly timeoutMs?: number;
  /** Most bytes kept per stream (stdout, stderr); default 256 KiB. */
  readonly maxOutputBytes?: number;
  readonly env?: VerifierEnv;
  /** Default `"none"`. */
  readonly sandbox?: VerifierSandbox;
  /** Between SIGTERM and SIGKILL when a run is stopped; default 2 s. */
  readonly killGraceMs?: number;
}

/** A verifier as {@link createVerifier} returns it. */
export interface CommandVerifier extends Verifier {
  /** The declared command names, for a tool's description or an operator's inventory. */
  readonly commands: readonly string[];
  readonly sandbox: "none" | "bubblewrap";
}

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

/** What a truncated stream ends with; `N` is how many bytes were dropped. */
export const TRUNCATION_MARKER = "\n[toolgate: output truncated, N more bytes not shown]\n";

const DEFAULT_TIMEOUT_MS = 120_000;
const DEFAULT_MAX_OUTPUT_BYTES = 256 * 1024;
const DEFAULT_KILL_GRACE_MS = 2_000;
const DEFAULT_MAX_ARGS = 64;
const MAX_ARG_LENGTH = 4096;
const DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin";
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

interface PreparedCommand {
  readonly argv: readonly string[];
  readonly pattern: RegExp | undefined;
  readonly allowOptions: boolean;
  readonly maxArgs: number;
  readonly write: boolean;
  readonly timeoutMs: number;
}

/**
 * Create the verifier: the only way a tool runs a host command.
 *
 * A tool names a command the operator declared and passes arguments; the verifier checks them
 * against the declaration **before anything is spawned** and refuses with `command_denied` an
 * unknown command, too many arguments, an argument that is not a string, holds a NUL byte, starts
 * with `-` where options are not allowed, or does not match the declared pattern.
 *
 * A run then:
 * - spawns the argv directly (never a shell), in `cwd` resolved inside the root by
 *   {@link resolveWithinRoot} (`path_escape` otherwise), with stdin at end-of-file and the
 *   environment built only as {@link VerifierEnv} says;
 * - leads its own process group; at the deadline or on abort the whole group gets SIGTERM, then
 *   SIGKILL after `killGraceMs`; when the command exits, whatever it left in its group is killed.
 *   (A process that leaves the group with `setsid` escapes this; under bubblewrap it cannot, the
 *   sandbox has its own process namespace that dies with the run.)
 * - keeps at most `maxOutputBytes` per stream, ending a cut stream with {@link TRUNCATION_MARKER};
 * - with `sandbox: "bubblewrap"`, runs under bwrap with no network (a fresh network namespace
 *   holding only a loopback of its own), its own process, IPC and host-name namespaces, a private
 *   `/tmp`, `/proc` and `/dev`, the system paths read-only, the root read-only unless the command
 *   declares `sandbox: { write: true }`, and the sandbox killed if the host process dies.
 *
 * @returns a verifier whose `run` resolves to the outcome (exit code, signal, output, truncation,
 *   duration, whether the deadline hit) whatever the command's exit status.
 * @throws ToolError `config_invalid` for a bad root, command, pattern, limit or environment name,
 *   or when the bubblewrap sandbox is asked for and bwrap is not installed.
 * @throws (from `run`) ToolError `command_denied`, `path_escape`, `not_found` (missing cwd),
 *   `cancelled` (the signal aborted; the process group is gone when it rejects), or
 *   `config_invalid` (the declared program could not be started).
 */
export function createVerifier(options: CreateVerifierOptions): CommandVerifier {
  const guard = createRootGuard(options.root);
  const timeoutMs = positiveInteger(options.timeoutMs ?? DEFAULT_TIMEOUT_MS, "timeoutMs");
  const maxOutputBytes = positiveInteger(options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES, "maxOutputBytes");
  const killGraceMs = positiveInteger(options.killGraceMs ?? DEFAULT_KILL_GRACE_MS, "killGraceMs");
  const env = buildEnv(options.env ?? {});
  const sandbox = prepareSandbox(options.sandbox ?? "none", env, guard.root);
  const commands = prepareCommands(options.commands, timeoutMs);

  const run = async (request: VerifierRunRequest): Promise<VerifierRunResult> => {
    const { signal } = request;
    if (signal?.aborted) throw new ToolError("cancelled", "the run was cancelled before it started");
    const name: unknown = request.command;
    const command = typeof name === "string" ? commands.get(name) : undefined;
    if (command === undefined) {
      throw new ToolError("command_denied", `no command ${typeof name === "string" ? JSON.stringify(name.slice(0, 64)) : ""} is declared (declared: ${[...commands.keys()].join(", ") || "none"})`, {
        details: { reason: "unknown_command" },
      });
    }
    const args = checkArgs(name as string, command, request.args);
    const cwd = await guard.resolve(request.cwd ?? ".");
    if (!(await stat(cwd)).isDirectory()) throw new ToolError("command_denied", `cwd ${JSON.stringify(request.cwd)} is not a directory`, { details: { reason: "cwd" } });
    if (signal?.aborted) throw new ToolError("cancelled", "the run was cancelled before it started");

    const argv = sandbox === undefined ? [...command.argv, ...args] : [sandbox.bwrap, ...bwrapArgs(sandbox, guard.root, cwd, command.write), "--", ...command.argv, ...args];
    return execute(argv, { cwd, env, timeoutMs: command.timeoutMs, maxOutputBytes, killGraceMs, signal, label: name as string, sandboxed: sandbox !== undefined });
  };

  return { root: guard.root, commands: [...commands.keys()], sandbox: sandbox === undefined ? "none" : "bubblewrap", run };
}

// ---------- configuration ----------

function positiveInteger(value: unknown, name: string): number {
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value <= 0) throw new ToolError("config_invalid", `verifier ${name} must be a positive integer`);
  return value;
}

function buildEnv(spec: VerifierEnv): Record<string, string> {
  const env: Record<string, string> = { PATH: process.env["PATH"] ?? DEFAULT_PATH };
  for (const name of spec.pass ?? []) {
    if (typeof name !== "string" || !ENV_NAME.test(name)) throw new ToolError("config_invalid", `verifier env.pass holds an invalid name ${JSON.stringify(name)}`);
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

function compilePattern(pattern: RegExp | string, command: string): RegExp {
  const source = typeof pattern === "string" ? pattern : pattern.source;
  const flags = typeof pattern === "string" ? "" : [...pattern.flags].filter((f) => "isuv".includes(f)).join("");
  try {
    return new RegExp(`^(?:${source})$`, flags);
  } catch (cause) {
    throw new ToolError("config_invalid", `command ${command}: args.pattern is not a valid regular expression`, { cause });
  }
}

function prepareCommands(declared: Readonly<Record<string, VerifierCommand>>, timeoutMs: number): Map<string, PreparedCommand> {
  if (typeof declared !== "object" || declared === null) throw new ToolError("config_invalid", "verifier commands must be an object");
  const commands = new Map<string, PreparedCommand>();
  for (const [name, entry] of Object.entries(declared)) {
    const bad = (why: string) => new ToolError("config_invalid", `verifier command ${JSON.stringify(name)}: ${why}`);
    if (name.length === 0) throw bad("the name is empty");
    const argv: unknown = entry?.argv;
    if (!Array.isArray(argv) || argv.length === 0) throw bad("argv must be a non-empty array");
    for (const part of argv) if (typeof part !== "string" || part.length === 0 || part.includes("\0")) throw bad("argv must hold non-empty strings without NUL bytes");
    if ((argv[0] as string).startsWith("-")) throw bad("the program must not start with `-`");
    const spec = entry.args;
    const maxArgs = spec === undefined ? 0 : spec.max === undefined ? DEFAULT_MAX_ARGS : spec.max;
    if (!Number.isSafeInteger(maxArgs) || maxArgs < 0) throw bad("args.max must be a non-negative integer");
    commands.set(name, {
      argv: [...(argv as string[])],
      pattern: spec?.pattern === undefined ? undefined : compilePattern(spec.pattern, name),
      allowOptions: spec?.allowOptions === true,
      maxArgs,
      write: entry.sandbox?.write === true,
      timeoutMs: entry.timeoutMs === undefined ? timeoutMs : positiveInteger(entry.timeoutMs, `command ${name} timeoutMs`),
    });
  }
  return commands;
}

interface PreparedSandbox {
  readonly bwrap: string;
  readonly readOnlyPaths: readonly string[];
}

function findOnPath(program: string, searchPath: string): string | undefined {
  for (const dir of searchPath.split(path.delimiter)) {
    if (!path.isAbsolute(dir)) continue;
    const candidate = path.join(dir, program);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}

function prepareSandbox(spec: VerifierSandbox, env: Record<string, string>, realRoot: string): PreparedSandbox | undefined {
  if (spec === "none") return undefined;
  const settings: BubblewrapSandbox | undefined = spec === "bubblewrap" ? { kind: "bubblewrap" } : typeof spec === "object" && spec !== null && spec.kind === "bubblewrap" ? spec : undefined;
  if (settings === undefined) throw new ToolError("config_invalid", `verifier sandbox must be "none" or "bubblewrap"`);
  if (realRoot === path.parse(realRoot).root) throw new ToolError("config_invalid", "a sandboxed verifier cannot use the filesystem root as its root");
  const readOnlyPaths = settings.readOnlyPaths ?? DEFAULT_SANDBOX_READ_ONLY_PATHS;
  for (const p of readOnlyPaths) {
    if (typeof p !== "string" || !path.isAbsolute(p) || p.includes("\0")) throw new ToolError("config_invalid", "sandbox readOnlyPaths must be absolute paths");
  }
  let bwrap = settings.bwrapPath ?? findOnPath("bwrap", `${process.env["PATH"] ?? ""}${path.delimiter}${env["PATH"] ?? ""}${path.delimiter}/usr/bin:/bin`);
  if (bwrap !== undefined) {
    try {
      accessSync(bwrap, constants.X_OK);
    } catch {
      bwrap = undefined;
    }
  }
  if (bwrap === undefined) {
    throw new ToolError("config_invalid", 'verifier sandbox "bubblewrap" needs the bwrap program, which is not installed or not executable (install the bubblewrap package)');
  }
  return { bwrap, readOnlyPaths };
}

function bwrapArgs(sandbox: PreparedSandbox, realRoot: string, cwd: string, write: boolean): string[] {
  const args = ["--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try", "--die-with-parent"];
  for (const p of sandbox.readOnlyPaths) args.push("--ro-bind-try", p, p);
  args.push("--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp");
  args.push(write ? "--bind" : "--ro-bind", realRoot, realRoot, "--chdir", cwd);
  return args;
}

// ---------- a run ----------

function checkArgs(name: string, command: PreparedCommand, given: unknown): string[] {
  const deny = (why: string, reason: string, index?: number) =>
    new ToolError("command_denied", `command ${name}: ${why}`, { details: { reason, ...(index === undefined ? {} : { index }) } });
  if (given === undefined) return [];
  if (!Array.isArray(given)) throw deny("args must be an array of strings", "args_not_array");
  if (given.length > command.maxArgs) {
    throw deny(command.maxArgs === 0 ? "takes no arguments" : `takes at most ${command.maxArgs} arguments, got ${given.length}`, "too_many_args");
  }
  return given.map((arg: unknown, index) => {
    if (typeof arg !== "string") throw deny(`argument ${index} is not a string`, "arg_not_string", index);
    if (arg.includes("\0")) throw deny(`argument ${index} contains a NUL byte`, "nul_byte", index);
    if (arg.length > MAX_ARG_LENGTH) throw deny(`argument ${index} is longer than ${MAX_ARG_LENGTH} characters`, "arg_too_long", index);
    if (!command.allowOptions && arg.startsWith("-")) throw deny(`argument ${index} starts with "-" and this command takes no options`, "option_forbidden", index);
    if (command.pattern !== undefined && !command.pattern.test(arg)) throw deny(`argument ${index} does not match the declared pattern`, "pattern_mismatch", index);
    return arg;
  });
}

interface ExecuteOptions {
  readonly cwd: string;
  readonly env: Record<string, string>;
  readonly timeoutMs: number;
  readonly maxOutputBytes: number;
  readonly killGraceMs: number;
  readonly signal: AbortSignal | undefined;
  readonly label: string;
  readonly sandboxed: boolean;
}

class Capture {
  private readonly chunks: Buffer[] = [];
  private kept = 0;
  dropped = 0;
  constructor(private readonly max: number) {}

  push(chunk: Buffer): void {
    const room = this.max - this.kept;
    if (room >= chunk.length) {
      this.chunks.push(chunk);
      this.kept += chunk.length;
    } else {
      if (room > 0) this.chunks.push(chunk.subarray(0, room));
      this.kept += Math.max(room, 0);
      this.dropped += chunk.length - Math.max(room, 0);
    }
  }

  text(): string {
    let bytes = Buffer.concat(this.chunks);
    if (this.dropped > 0) bytes = bytes.subarray(0, completeUtf8Length(bytes));
    const text = bytes.toString("utf8");
    return this.dropped > 0 ? text + TRUNCATION_MARKER.replace("N", String(this.dropped + (this.kept - bytes.length))) : text;
  }
}

/** Length of `bytes` without a UTF-8 sequence cut off at its end. */
function completeUtf8Length(bytes: Buffer): number {
  let i = bytes.length - 1;
  let continuation = 0;
  while (i >= 0 && continuation < 3 && (bytes[i]! & 0xc0) === 0x80) {
    i--;
    continuation++;
  }
  if (i < 0) return bytes.length;
  const lead = bytes[i]!;
  const need = lead >= 0xf0 ? 3 : lead >= 0xe0 ? 2 : lead >= 0xc0 ? 1 : 0;
  return need > continuation ? i : bytes.length;
}

function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    // the group is already gone
  }
}

function execute(argv: readonly string[], options: ExecuteOptions): Promise<VerifierRunResult> {
  const [program, ...rest] = argv as [string, ...string[]];
  const started = performance.now();
  return new Promise<VerifierRunResult>((resolve, reject) => {
    let child: ChildProcess;
    try {
      child = spawn(program, rest, {
        cwd: options.cwd,
        env: options.env,
        stdio: ["ignore", "pipe", "pipe"],
        detached: true,
        shell: false,
        windowsHide: true,
      });
    } catch (cause) {
      reject(new ToolError("config_invalid", `command ${options.label} could not be started`, { cause }));
      return;
    }
    const stdout = new Capture(options.maxOutputBytes);
    const stderr = new Capture(options.maxOutputBytes);
    child.stdout?.on("data", (chunk: Buffer) => stdout.push(chunk));
    child.stderr?.on("data", (chunk: Buffer) => stderr.push(chunk));

    let timedOut = false;
    let aborted = false;
    let graceTimer: NodeJS.Timeout | undefined;
    let settled = false;
    let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;

    const stop = () => {
      if (graceTimer !== undefined) return;
      killGroup(child, "SIGTERM");
      graceTimer = setTimeout(() => killGroup(child, "SIGKILL"), options.killGraceMs);
    };
    const deadline = setTimeout(() => {
      timedOut = true;
      stop();
    }, options.timeoutMs);
    const onAbort = () => {
      aborted = true;
      stop();
    };
    options.signal?.addEventListener("abort", onAbort, { once: true });

    const finish = (error?: unknown) => {
      if (settled) return;
      settled = true;
      clearTimeout(deadline);
      if (graceTimer !== undefined) clearTimeout(graceTimer);
      options.signal?.removeEventListener("abort", onAbort);
      const durationMs = performance.now() - started;
      if (error !== undefined) {
        const code = (error as { code?: unknown }).code;
        const what = options.sandboxed ? "the bubblewrap sandbox" : `the program of command ${options.label}`;
        reject(new ToolError("config_invalid", `${what} could not be started (${typeof code === "string" ? code : "error"})`, { cause: error }));
        return;
      }
      if (aborted) {
        reject(new ToolError("cancelled", `command ${options.label} was cancelled; its processes were stopped`, { details: { durationMs } }));
        return;
      }
      resolve({
        exitCode: exit?.code ?? null,
        signal: exit?.signal ?? null,
        stdout: stdout.text(),
        stderr: stderr.text(),
        truncated: stdout.dropped > 0 || stderr.dropped > 0,
        durationMs,
        timedOut,
      });
    };

    child.once("error", (error) => {
      // Spawning failed (no such program, not executable); nothing is running.
      if (child.pid === undefined) finish(error);
    });
    child.once("exit", (code, signal) => {
      exit = { code, signal };
      // The leader is gone: whatever it left in its group goes too.
      killGroup(child, "SIGKILL");
    });
    child.once("close", () => finish());
  });
}
