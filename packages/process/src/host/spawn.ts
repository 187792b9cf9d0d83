import type { ChildProcessWithoutNullStreams } from "node:child_process";
import { accessSync, constants, statSync } from "node:fs";
import { delimiter, join } from "node:path";
import { ToolError } from "@toolgate/core";
import { bubblewrapMasks, protectedPaths } from "@toolgate/core/boundary";

/**
 * A wrapper the spawn goes through. `auto` (the default): bubblewrap when `bwrap` is on PATH, and
 * otherwise no sandbox, with a start-up warning and an inventory that says so. `none`: no sandbox,
 * chosen explicitly. `bubblewrap`: read-only root, no network, private /dev, /proc and pid
 * namespace, dies with the host (and everything the tool started with it). `firejail`: no network, no profile. `custom`: your own argv prefix (the command and its
 * args are appended). `args` adds wrapper arguments before the command.
 */
export type SandboxOption =
  | "auto"
  | "none"
  | "bubblewrap"
  | "firejail"
  | { readonly kind: "bubblewrap" | "firejail"; readonly args?: readonly string[] }
  | { readonly kind: "custom"; readonly argv: readonly string[] };

/** The sandbox a process actually runs in, once `auto` is decided; `none` when there is none. */
export type SandboxKind = "bubblewrap" | "firejail" | "custom" | "none";

/** What `auto` (or an explicit choice) came to, and why, for the inventory and the start-up warning. */
export interface ResolvedSandbox {
  /** The option to spawn with: `undefined` for no wrapper. */
  readonly option: Exclude<SandboxOption, "auto" | "none"> | undefined;
  readonly kind: SandboxKind;
  /** True when the operator did not choose: `auto`, or no `sandbox` option at all. */
  readonly automatic: boolean;
  /** Set when `auto` found no bubblewrap: the process runs unsandboxed, and the operator is told. */
  readonly warning: string | undefined;
}

/** Decide `auto` (or no option) on `searchPath`; explicit choices are kept as they are (a missing wrapper is refused later, by name). */
export function resolveSandbox(sandbox: SandboxOption | undefined, searchPath: string | undefined = process.env["PATH"]): ResolvedSandbox {
  if (sandbox === "none") return { option: undefined, kind: "none", automatic: false, warning: undefined };
  if (sandbox === undefined || sandbox === "auto") {
    if (findExecutable(WRAPPERS.bubblewrap.program, searchPath)) return { option: "bubblewrap", kind: "bubblewrap", automatic: true, warning: undefined };
    return {
      option: undefined,
      kind: "none",
      automatic: true,
      warning:
        'sandbox "auto": bwrap (bubblewrap) was not found on PATH, so this tool process runs unsandboxed, with your user\'s network and files; install bubblewrap, or set sandbox: "none" to make that choice explicit',
    };
  }
  const kind = typeof sandbox === "string" ? sandbox : sandbox.kind;
  return { option: sandbox, kind: kind as SandboxKind, automatic: false, warning: undefined };
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

const WRAPPERS = {
  bubblewrap: {
    program: "bwrap",
    // Read-only view of the host, no network, fresh /dev and /proc, a new session (no terminal
    // injection), and the sandbox dies with its parent. Its own pid namespace: the new session
    // takes the tool out of the host's process group, so killing the group would not reach what
    // the tool started; when the namespace's first process dies, the kernel kills everything in it.
    args: ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-net", "--unshare-pid", "--new-session", "--die-with-parent"],
  },
  // --protocol: no Unix sockets (a host socket on the filesystem is a way out of any network namespace).
  firejail: { program: "firejail", args: ["--quiet", "--noprofile", "--net=none", "--protocol=inet,inet6,netlink"] },
} as const;

/** The descriptor the child is handed its seccomp program on (bubblewrap reads it before the tool starts). */
export const SECCOMP_FD = 3;

/**
 * The seccomp program bubblewrap loads for a tool process: socket(AF_UNIX) fails with EACCES. A
 * read-only bind of the host still lets a process connect to a Unix socket on it (a database's, an
 * agent's, a container daemon's), whatever its network namespace. Also refused: io_uring (which
 * can open sockets without the socket call), x32 system calls and those of another architecture
 * (the 32-bit socketcall). Undefined on an architecture without a program here (then only the
 * network namespace and the masks apply).
 */
export function unixSocketFilter(arch: string = process.arch): Buffer | undefined {
  const native = arch === "x64" ? { audit: 0xc000003e, socket: 41 } : arch === "arm64" ? { audit: 0xc00000b7, socket: 198 } : undefined;
  if (!native) return undefined;
  const LD_ABS = 0x20;
  const JEQ = 0x15;
  const JGE = 0x35;
  const RET = 0x06;
  const program: [number, number, number, number][] = [
    [LD_ABS, 0, 0, 4], // the architecture
    [JEQ, 1, 0, native.audit],
    [RET, 0, 0, 0x00050001], // another architecture's call: EPERM
    [LD_ABS, 0, 0, 0], // the call's number
    [JGE, 5, 0, 0x40000000], // x32: refused
    [JEQ, 4, 0, 425], // io_uring_setup: refused
    [JEQ, 0, 2, native.socket],
    [LD_ABS, 0, 0, 16], // socket's first argument, the family
    [JEQ, 1, 0, 1], // AF_UNIX: refused
    [RET, 0, 0, 0x7fff0000], // allowed
    [RET, 0, 0, 0x0005000d], // EACCES
  ];
  const out = Buffer.alloc(program.length * 8);
  program.forEach(([code, jt, jf, k], i) => {
    out.writeUInt16LE(code, i * 8);
    out.writeUInt8(jt, i * 8 + 2);
    out.writeUInt8(jf, i * 8 + 3);
    out.writeUInt32LE(k >>> 0, i * 8 + 4);
  });
  return out;
}

/** The seccomp program to hand the child on `SECCOMP_FD`, when its sandbox loads one. */
export function sandboxSeccomp(sandbox: ResolvedSandbox["option"]): Buffer | undefined {
  const kind = sandbox === undefined ? undefined : typeof sandbox === "string" ? sandbox : sandbox.kind;
  return kind === "bubblewrap" ? unixSocketFilter() : undefined;
}

/** The argv to spawn: the wrapper's prefix (resolved, or a clear error naming it), then the command. */
export function wrappedArgv(command: string, args: readonly string[], sandbox: ResolvedSandbox["option"], cwd: string | undefined): string[] {
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
  if (!known) {
    throw new ToolError(
      "config_invalid",
      `unknown sandbox ${JSON.stringify(spec.kind)}: use "auto", "none", "bubblewrap", "firejail" or { kind: "custom", argv }`,
    );
  }
  const found = findExecutable(known.program);
  if (!found) throw new ToolError("config_invalid", `sandbox ${spec.kind} needs ${known.program}, which was not found on PATH`);
  const extra = (spec as { args?: readonly string[] }).args ?? [];
  const chdir = spec.kind === "bubblewrap" && cwd !== undefined ? ["--chdir", cwd] : [];
  // The host is bound read-only, so the gate's own state (protected paths: journal, keys, vault,
  // grants) is masked in it, as it stands at each start.
  const masks = spec.kind === "bubblewrap" ? bubblewrapMasks(["/"]) : spec.kind === "firejail" ? protectedPaths().map((p) => `--blacklist=${p}`) : [];
  const seccomp = sandboxSeccomp(sandbox) ? ["--add-seccomp-fd", String(SECCOMP_FD)] : [];
  return [found, ...known.args, ...seccomp, ...masks, ...chdir, ...extra, command, ...args];
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
      setImmediate(() => {
        for (const stream of [child.stdin, child.stdout, child.stderr]) stream.destroy();
      });
    }, PIPES_AFTER_EXIT_MS).unref();
  });
}
