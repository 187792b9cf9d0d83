/**
 * The one sandbox profile: how the verifier's commands, tool processes and imported MCP servers
 * are run under bubblewrap. Every capability dropped; a user namespace where the kernel allows
 * one (and no further ones inside); its own pid, IPC, UTS, cgroup and network namespaces; a new
 * session; dies with its parent; a fresh `/proc` and `/dev`; a `/tmp` of fixed size; a read-only
 * empty root holding only the binds the program needs (system programs and libraries, its own
 * files, its workspace) with the gate's protected state hidden in them; the seccomp filter; and the
 * limits, set as rlimits before bubblewrap starts and, where the host may make one, a cgroup.
 */
import { spawnSync } from "node:child_process";
import { accessSync, constants, existsSync, lstatSync, readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { ToolError } from "../../errors.js";
import { isDirectory, isProtectedPath, protectedPaths } from "../protected-paths.js";
import { cgroupsAvailable, runCgroup, type RunCgroup } from "./cgroup.js";
import { prlimitArgs, type SandboxLimitName, type SandboxLimits } from "./limits.js";
import { seccompProgram } from "./seccomp.js";

/** Host paths every sandbox sees read-only, each only where it exists: system programs and libraries, not the host's `/etc` as a whole, nor home directories. */
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
  "/etc/ssl/certs",
  "/etc/ssl/openssl.cnf",
  "/etc/ca-certificates",
  "/etc/passwd",
  "/etc/group",
  "/etc/nsswitch.conf",
  "/etc/localtime",
  "/etc/hosts",
];

/** Variables the starting shell exports on its own. */
const SHELL_VARIABLES = ["SHLVL", "PWD", "OLDPWD", "_"];

/** /proc entries bound read-only over the sandbox's own /proc. */
const PROC_READ_ONLY = ["/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs"];
/** /proc entries hidden (kernel memory, key rings, timers and hardware the program has no use for). */
const PROC_HIDDEN = [
  "/proc/kcore",
  "/proc/keys",
  "/proc/key-users",
  "/proc/latency_stats",
  "/proc/timer_list",
  "/proc/sched_debug",
  "/proc/acpi",
  "/proc/scsi",
  "/proc/asound",
];

/** The descriptor the sandbox reads its seccomp program from: spawn with a pipe there and write `seccomp` to it. */
export const SANDBOX_SECCOMP_FD = 3;

/** What a program needs from the host, beyond the profile's fixed parts. */
export interface SandboxSpec {
  /** The bwrap program (see `findBwrap`). */
  readonly bwrap: string;
  /** Host paths bound read-only, each only where it exists (the system paths are not added for you). */
  readonly readOnly: readonly string[];
  /** Host paths bound writable; each must exist. */
  readonly writable?: readonly string[];
  /** Where the program starts; inside a bound path. */
  readonly cwd: string;
  /** Share the host's network (default false: an empty network namespace, loopback only). */
  readonly network?: boolean;
  /** Host Unix sockets the program may connect to: each bound, and only then may it open Unix sockets at all. */
  readonly unixSockets?: readonly string[];
  readonly limits: SandboxLimits;
  /** More host paths to hide (besides the protected ones) where they fall under a bind. */
  readonly hidden?: readonly string[];
}

/** What a sandbox enforces, as built: what the inventory and the docs say about it. */
export interface SandboxFacts {
  readonly kind: "bubblewrap";
  /** A user namespace of its own (without one, the capabilities are still dropped). */
  readonly userNamespace: boolean;
  readonly network: "none" | "host";
  readonly unixSockets: readonly string[];
  readonly readOnly: readonly string[];
  readonly writable: readonly string[];
  /** Whether the seccomp filter is loaded (there is one for x64 and arm64). */
  readonly seccomp: boolean;
  readonly limits: SandboxLimits;
  /** How the process count is bounded: a cgroup (root host), RLIMIT_NPROC (other hosts, counted per user), or not at all. */
  readonly processesBoundBy: "cgroup" | "rlimit" | "none";
}

/** A program ready to spawn in the sandbox. */
export interface SandboxLaunch {
  /** The whole argv: the cgroup step (root host), prlimit, bwrap and its arguments, then the program's. */
  readonly argv: readonly string[];
  /** The seccomp program to write to descriptor `SANDBOX_SECCOMP_FD` (spawn with a pipe there); undefined on an architecture without one. */
  readonly seccomp: Buffer | undefined;
  readonly facts: SandboxFacts;
  /**
   * After the program's first process exited: which limits it hit, read from the exit status (the
   * kernel's SIGXCPU and SIGXFSZ, passed on by bubblewrap as 128 + the signal) and the cgroup's
   * counters; whatever is left in the cgroup is killed. Call it once.
   */
  finish(exit: { readonly code: number | null; readonly signal: NodeJS.Signals | null }): SandboxLimitName[];
}

const SIGXCPU = 24;
const SIGXFSZ = 25;

/** The bwrap program on `searchPath` (then /usr/bin, /bin), or the configured one; `config_invalid` naming `who` when there is none that runs. */
export function findBwrap(who: string, configured?: string, searchPath: string = process.env["PATH"] ?? ""): string {
  if (configured !== undefined && (typeof configured !== "string" || !path.isAbsolute(configured))) {
    throw new ToolError("config_invalid", `${who}: bwrapPath must be an absolute path`);
  }
  const candidates =
    configured !== undefined
      ? [configured]
      : [...searchPath.split(path.delimiter), "/usr/bin", "/bin"].filter((d) => path.isAbsolute(d)).map((d) => path.join(d, "bwrap"));
  const found = candidates.find(isExecutable);
  if (found === undefined) {
    throw new ToolError(
      "config_invalid",
      `${who}: the sandbox needs the bwrap program, which is not installed or not executable (install the bubblewrap package)`,
    );
  }
  return found;
}

/** The bwrap on the host, or undefined (for `auto`). */
export function bwrapOnPath(searchPath: string = process.env["PATH"] ?? ""): string | undefined {
  try {
    return findBwrap("", undefined, searchPath);
  } catch {
    return undefined;
  }
}

const userNamespaceSupport = new Map<string, boolean>();

/** Whether `bwrap` can make a user namespace here (and close it to further ones): tried once per program. */
export function sandboxUserNamespace(bwrap: string): boolean {
  let known = userNamespaceSupport.get(bwrap);
  if (known === undefined) {
    const tried = spawnSync(bwrap, ["--unshare-user", "--disable-userns", "--cap-drop", "ALL", "--ro-bind", "/", "/", "--", "/bin/true"], {
      stdio: "ignore",
      timeout: 10_000,
    });
    known = tried.status === 0;
    userNamespaceSupport.set(bwrap, known);
  }
  return known;
}

/** Whether `bwrap` starts a sandbox at all here (a host that forbids namespaces makes it fail at once). */
export function sandboxWorks(bwrap: string): boolean {
  const tried = spawnSync(bwrap, ["--unshare-all", "--cap-drop", "ALL", "--ro-bind", "/", "/", "--", "/bin/true"], { stdio: "ignore", timeout: 10_000 });
  return tried.status === 0;
}

/**
 * The sandbox for `argv` as `spec` asks. `config_invalid` for a bad spec: a relative path, a
 * writable path or socket that does not exist or is protected, a `cwd` outside every bind.
 */
export function sandboxLaunch(spec: SandboxSpec, argv: readonly string[], who: string): SandboxLaunch {
  const absolute = (p: unknown, what: string): string => {
    if (typeof p !== "string" || !path.isAbsolute(p) || p.includes("\0")) throw new ToolError("config_invalid", `${who}: ${what} must be absolute paths`);
    return path.resolve(p);
  };
  const readOnly = [...new Set(spec.readOnly.map((p) => absolute(p, "read-only paths")))].filter((p) => existsSync(p));
  const writable = [...new Set((spec.writable ?? []).map((p) => absolute(p, "writable paths")))];
  const sockets = [...new Set((spec.unixSockets ?? []).map((p) => absolute(p, "unix sockets")))];
  for (const p of [...writable, ...sockets]) {
    if (!existsSync(p)) throw new ToolError("config_invalid", `${who}: ${p} does not exist`);
  }
  for (const p of [...readOnly, ...writable, ...sockets]) {
    if (isProtectedPath(p)) throw new ToolError("config_invalid", `${who}: ${p} is in the gate's protected state; a sandbox may not bind it`);
  }
  for (const p of sockets) {
    if (!statSync(p).isSocket()) throw new ToolError("config_invalid", `${who}: ${p} is not a Unix socket`);
  }
  const cwd = absolute(spec.cwd, "the working directory");
  const under = (p: string, dir: string) => p === dir || p.startsWith(dir.endsWith(path.sep) ? dir : dir + path.sep);
  if (![...readOnly, ...writable].some((b) => under(cwd, b)) && cwd !== "/tmp") {
    throw new ToolError("config_invalid", `${who}: the working directory ${cwd} is not inside anything the sandbox binds`);
  }

  const userns = sandboxUserNamespace(spec.bwrap);
  const network = spec.network === true;
  const args = [spec.bwrap, "--unshare-all"];
  if (network) args.push("--share-net");
  if (userns) args.push("--unshare-user", "--disable-userns");
  args.push("--cap-drop", "ALL", "--new-session", "--die-with-parent");
  // What the starting shell adds to the environment is not the program's (a sandbox gets only what its caller gives).
  for (const name of SHELL_VARIABLES) args.push("--unsetenv", name);
  // The private mounts first, so a bind under /tmp shows through them.
  // /dev is a tmpfs of its own, remounted read-only below; its /dev/shm and /tmp are sized.
  const tmpBytes = String(spec.limits.tmpBytes);
  args.push("--proc", "/proc", "--dev", "/dev", "--size", tmpBytes, "--tmpfs", "/dev/shm", "--size", tmpBytes, "--tmpfs", "/tmp");
  // The sandbox's user is the host's: procfs files that check only the user (sysctls such as
  // kernel/core_pattern, the sysrq trigger) would take its writes. Read-only, or hidden.
  for (const p of PROC_READ_ONLY) if (existsSync(p)) args.push("--ro-bind", p, p);
  for (const p of PROC_HIDDEN) if (existsSync(p)) args.push(...(isDirectory(p) ? ["--tmpfs", p, "--remount-ro", p] : ["--ro-bind", "/dev/null", p]));
  for (const p of readOnly) args.push("--ro-bind", p, p);
  if (network && existsSync("/etc/resolv.conf")) args.push("--ro-bind", "/etc/resolv.conf", "/etc/resolv.conf");
  for (const p of writable) args.push("--bind", p, p);
  for (const p of sockets) args.push("--bind", p, p);
  args.push(...bubblewrapMasks([...readOnly, ...writable], spec.hidden ?? []));
  // The empty root bubblewrap builds and /dev are tmpfs: read-only, so nothing is kept in memory beyond the sized ones.
  args.push("--remount-ro", "/dev", "--remount-ro", "/");
  const seccomp = seccompProgram({ unixSockets: sockets.length > 0 });
  if (seccomp !== undefined) args.push("--add-seccomp-fd", String(SANDBOX_SECCOMP_FD));
  args.push("--chdir", cwd, "--", ...argv);

  const root = process.getuid?.() === 0;
  const cgroup: RunCgroup | undefined = root ? runCgroup(spec.limits) : undefined;
  // A root host's processes are exempt from RLIMIT_NPROC; other hosts' are counted per user by the
  // kernel, the host user's own processes included, so the limit leaves room for those.
  const nproc = root ? spec.limits.processes : spec.limits.processes + userProcessCount();
  const limits = prlimitArgs({ ...spec.limits, processes: nproc });
  const prlimit = ["/usr/bin/prlimit", "/bin/prlimit"].find(isExecutable);
  if (prlimit === undefined) throw new ToolError("config_invalid", `${who}: the sandbox needs prlimit (util-linux), which was not found`);
  const bash = isExecutable("/bin/bash") ? "/bin/bash" : undefined;
  if (bash === undefined && cgroup === undefined) throw new ToolError("config_invalid", `${who}: the sandbox needs /bin/bash to start`);
  const shell = bash ?? "/bin/sh";
  const full = [
    shell,
    ...(bash === undefined ? [] : ["--norc", "--noprofile"]),
    "-c",
    bash === undefined ? JOIN : CLOSE + JOIN,
    "sandbox",
    ...(cgroup?.procs ?? []),
    "--",
    prlimit,
    ...limits,
    "--",
    ...args,
  ];

  const facts: SandboxFacts = {
    kind: "bubblewrap",
    userNamespace: userns,
    network: network ? "host" : "none",
    unixSockets: sockets,
    readOnly,
    writable,
    seccomp: seccomp !== undefined,
    limits: spec.limits,
    processesBoundBy: cgroup !== undefined ? "cgroup" : root ? "none" : "rlimit",
  };
  let finished = false;
  return {
    argv: full,
    seccomp,
    facts,
    finish(exit) {
      if (finished) return [];
      finished = true;
      const hit = new Set<SandboxLimitName>(cgroup?.finish() ?? []);
      if (exit.code === 128 + SIGXCPU || exit.signal === "SIGXCPU") hit.add("cpuSeconds");
      if (exit.code === 128 + SIGXFSZ || exit.signal === "SIGXFSZ") hit.add("fileBytes");
      return [...hit];
    },
  };
}

/** Whether a root host's sandboxes get a cgroup (and so a bounded process count). */
export function sandboxCgroups(): boolean {
  return process.getuid?.() === 0 && cgroupsAvailable();
}

/**
 * Closes every descriptor the host inherited (whatever its parent left open without close-on-exec
 * would otherwise reach the program) but the standard three and the seccomp program's.
 */
const CLOSE = `for f in /proc/self/fd/*; do n=\${f##*/}; case $n in 0|1|2|${3}) ;; *) eval "exec $n>&-" ;; esac; done; `;
/** Joins each cgroup named before `--`, then runs the rest: the first process is in the cgroup before anything forks. */
const JOIN = 'while [ "$1" != -- ]; do echo $$ > "$1" || exit 125; shift; done; shift; exec "$@"';

/** The host user's processes now (what RLIMIT_NPROC counts besides the sandbox's). */
function userProcessCount(): number {
  const uid = process.getuid?.();
  let count = 0;
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const status = readFileSync(`/proc/${entry}/status`, "utf8");
      const real = /^Uid:\s+(\d+)/m.exec(status)?.[1];
      // RLIMIT_NPROC counts tasks: every thread.
      if (real !== undefined && Number(real) === uid) count += Number(/^Threads:\s+(\d+)/m.exec(status)?.[1] ?? 1);
    } catch {
      // gone
    }
  }
  return count;
}

/**
 * The bubblewrap arguments that hide every protected path (and `hidden`) inside the paths a sandbox
 * binds: a directory behind an empty tmpfs, a file behind /dev/null. Pass them after the binds.
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

function isExecutable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return statSync(file).isFile();
  } catch {
    return false;
  }
}
