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
import { accessSync, constants, existsSync, readdirSync, readFileSync, realpathSync, statSync } from "node:fs";
import path from "node:path";
import { ToolError } from "../../errors.js";
import { isDirectory, isProtectedPath } from "../protected-paths.js";
import { bubblewrapMasks, EMPTY_DIR, PROC_HIDDEN, PROC_READ_ONLY } from "./mounts.js";
import { pathIsUnder } from "../path-under.js";
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

/** The descriptor the sandbox reads its seccomp program from (see `launch.descriptors`). */
export const SANDBOX_SECCOMP_FD = 3;
/** The descriptor bubblewrap reads the program's environment from (`--args`): never on a command line, never in the starting processes' environment. */
export const SANDBOX_ARGS_FD = 4;

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
  /** The program's environment. It reaches only the program: what starts the sandbox runs with `launch.env`. */
  readonly env?: Readonly<Record<string, string>>;
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
  /** The seccomp program; undefined on an architecture without one. */
  readonly seccomp: Buffer | undefined;
  /**
   * The environment to spawn `argv` with: a fixed `PATH` only. The program's own environment goes
   * to bubblewrap on a descriptor, so nothing in it (`LD_PRELOAD`, `BASH_ENV`, functions) acts on
   * the shell, prlimit or bubblewrap that start the sandbox outside it.
   */
  readonly env: Readonly<Record<string, string>>;
  /**
   * What to write to descriptors 3, 4, … of the spawned process (spawn with a pipe at each; see
   * `sandboxStdio` and `feedSandbox`): the seccomp program, then the program's environment.
   */
  readonly descriptors: readonly Buffer[];
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
  // Every path by where it really is: bubblewrap follows links, so a check or a mask on the spelled
  // path would miss the state a link leads to. A spelled path that differs is a link inside.
  const spelled = new Map<string, string>();
  const real = (p: string): string => {
    let resolved = p;
    try {
      resolved = realpathSync(p);
    } catch {
      return p;
    }
    if (resolved !== p) spelled.set(p, resolved);
    return resolved;
  };
  const readOnlyGiven = [...new Set(spec.readOnly.map((p) => absolute(p, "read-only paths")).filter((p) => existsSync(p)))];
  const readOnlyReal = [...new Set(readOnlyGiven.map(real))];
  // A read-only path inside another read-only one is bound with it.
  const readOnly = readOnlyReal.filter((p) => !readOnlyReal.some((b) => b !== p && pathIsUnder(p, b)));
  const writableGiven = [...new Set((spec.writable ?? []).map((p) => absolute(p, "writable paths")))];
  const socketsGiven = (spec.unixSockets ?? []).map((p) => absolute(p, "unix sockets"));
  for (const p of [...writableGiven, ...socketsGiven]) {
    if (!existsSync(p)) throw new ToolError("config_invalid", `${who}: ${p} does not exist`);
  }
  const writable = [...new Set(writableGiven.map(real))];
  const sockets = [...new Set(socketsGiven.map(real))];
  for (const p of [...readOnly, ...writable]) {
    if (p === path.parse(p).root) throw new ToolError("config_invalid", `${who}: a sandbox may not bind the filesystem root`);
  }
  for (const p of [...readOnlyReal, ...writable, ...sockets]) {
    if (isProtectedPath(p)) throw new ToolError("config_invalid", `${who}: ${p} is in the gate's protected state; a sandbox may not bind it`);
  }
  for (const p of sockets) {
    if (!statSync(p).isSocket()) throw new ToolError("config_invalid", `${who}: ${p} is not a Unix socket`);
  }
  const cwd = real(absolute(spec.cwd, "the working directory"));
  if (![...readOnly, ...writable].some((b) => pathIsUnder(cwd, b)) && cwd !== "/tmp") {
    throw new ToolError("config_invalid", `${who}: the working directory ${cwd} is not inside anything the sandbox binds`);
  }

  const userns = sandboxUserNamespace(spec.bwrap);
  const network = spec.network === true;
  const args = [spec.bwrap, "--args", String(SANDBOX_ARGS_FD), "--unshare-all"];
  if (network) args.push("--share-net");
  if (userns) args.push("--unshare-user", "--disable-userns");
  args.push("--cap-drop", "ALL", "--new-session", "--die-with-parent");
  // The private mounts first, so a bind under /tmp shows through them.
  // /dev is a tmpfs of its own, remounted read-only below; its /dev/shm and /tmp are sized.
  const tmpBytes = String(spec.limits.tmpBytes);
  args.push("--proc", "/proc", "--dev", "/dev", "--size", tmpBytes, "--tmpfs", "/dev/shm", "--size", tmpBytes, "--tmpfs", "/tmp");
  // The sandbox's user is the host's: procfs files that check only the user (sysctls such as
  // kernel/core_pattern, the sysrq trigger) would take its writes. Read-only, or hidden.
  for (const p of PROC_READ_ONLY) if (existsSync(p)) args.push("--ro-bind", p, p);
  // Bubblewrap's own init is the namespace's first process, of the program's user: its memory is
  // hidden, or the program could rewrite it through /proc to outlive its run.
  args.push("--ro-bind", "/dev/null", "/proc/1/mem", "--ro-bind", "/dev/null", "/proc/1/task/1/mem");
  for (const p of PROC_HIDDEN) if (existsSync(p)) args.push(...(isDirectory(p) ? EMPTY_DIR(p) : ["--ro-bind", "/dev/null", p]));
  // Parents before children, whatever their kind: a read-only path inside a writable one stays read-only.
  const binds: [string, string][] = [
    ...readOnly.filter((p) => !writable.includes(p)).map((p): [string, string] => ["--ro-bind", p]),
    ...(network && existsSync("/etc/resolv.conf") ? [["--ro-bind", "/etc/resolv.conf"] as [string, string]] : []),
    ...writable.map((p): [string, string] => ["--bind", p]),
    ...sockets.map((p): [string, string] => ["--bind", p]),
  ];
  binds.sort((a, b) => depth(a[1]) - depth(b[1]));
  for (const [how, p] of binds) args.push(how, p, p);
  // A path given through a link: the link, where it is not already inside a bind.
  for (const [given, target] of spelled) {
    if (!binds.some(([, b]) => pathIsUnder(given, b))) args.push("--symlink", target, given);
  }
  args.push(...bubblewrapMasks([...readOnly, ...writable], spec.hidden ?? []));
  // The empty root bubblewrap builds and /dev are tmpfs: read-only, so nothing is kept in memory beyond the sized ones.
  args.push("--remount-ro", "/dev", "--remount-ro", "/");
  const seccomp = seccompProgram({ unixSockets: sockets.length > 0 });
  if (seccomp !== undefined) args.push("--add-seccomp-fd", String(SANDBOX_SECCOMP_FD));
  // The program's environment, read by bubblewrap from its descriptor (NUL-separated arguments).
  const envArgs = ["--clearenv"];
  for (const [name, value] of Object.entries(spec.env ?? {})) {
    if (name === "" || name.includes("=") || name.includes("\0") || typeof value !== "string" || value.includes("\0")) {
      throw new ToolError("config_invalid", `${who}: environment variable ${JSON.stringify(name)} must be a string without "=" in its name or NUL bytes`);
    }
    envArgs.push("--setenv", name, value);
  }
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
    // As the caller named them (the binds are their real paths).
    unixSockets: [...new Set(socketsGiven)],
    readOnly: readOnlyGiven,
    writable: writableGiven,
    seccomp: seccomp !== undefined,
    limits: spec.limits,
    processesBoundBy: cgroup !== undefined ? "cgroup" : root ? "none" : "rlimit",
  };
  let finished = false;
  return {
    argv: full,
    seccomp,
    env: { PATH: "/usr/bin:/bin" },
    descriptors: [seccomp ?? Buffer.alloc(0), Buffer.from(envArgs.map((a) => `${a}\0`).join(""))],
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

const depth = (p: string) => p.split(path.sep).filter(Boolean).length;

/** The stdio to spawn a launch with: the three given, then a pipe for each of its descriptors. */
export function sandboxStdio<T>(launch: SandboxLaunch, first: readonly [T, T, T]): (T | "pipe")[] {
  return [...first, ...launch.descriptors.map(() => "pipe" as const)];
}

/** Write a launch's descriptors to the spawned child (3, 4, …), each closed once written. */
export function feedSandbox(child: { readonly stdio: readonly unknown[] }, launch: SandboxLaunch): void {
  launch.descriptors.forEach((content, i) => {
    const pipe = child.stdio[SANDBOX_SECCOMP_FD + i] as { on(e: "error", f: () => void): void; end(b: Buffer): void } | null | undefined;
    pipe?.on("error", () => undefined);
    pipe?.end(content);
  });
}

/** Whether a root host's sandboxes get a cgroup (and so a bounded process count). */
export function sandboxCgroups(): boolean {
  return process.getuid?.() === 0 && cgroupsAvailable();
}

/**
 * Closes every descriptor the host inherited (whatever its parent left open without close-on-exec
 * would otherwise reach the program) but the standard three and the seccomp program's.
 */
const CLOSE = `for f in /proc/self/fd/*; do n=\${f##*/}; case $n in 0|1|2|${SANDBOX_SECCOMP_FD}|${SANDBOX_ARGS_FD}) ;; *) eval "exec $n>&-" ;; esac; done; `;
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

function isExecutable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return statSync(file).isFile();
  } catch {
    return false;
  }
}
