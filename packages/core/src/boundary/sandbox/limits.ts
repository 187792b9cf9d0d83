/**
 * What a sandboxed program may use: each limit has a default, and an operator narrows or widens
 * it per command, per tool process or per imported server. They are enforced by the kernel (rlimits
 * set before bubblewrap starts, a tmpfs of fixed size, and a cgroup where the host may make one),
 * except `outputBytes`, which the host enforces as it reads.
 */
import { ToolError } from "../../errors.js";

export interface SandboxLimits {
  /** Memory a process may allocate (RLIMIT_DATA); with a cgroup, also the whole tree's memory, `/tmp` included. */
  readonly memoryBytes: number;
  /** Processes and threads the program may run at once (RLIMIT_NPROC, or the cgroup's pids.max for a root host). */
  readonly processes: number;
  /** Open files per process (RLIMIT_NOFILE). */
  readonly openFiles: number;
  /** CPU seconds per process (RLIMIT_CPU): the kernel stops it with SIGXCPU. */
  readonly cpuSeconds: number;
  /** Largest file a process may write (RLIMIT_FSIZE): a larger write fails and the kernel sends SIGXFSZ. */
  readonly fileBytes: number;
  /** Size of the private `/tmp`, and of `/dev/shm` (each). */
  readonly tmpBytes: number;
  /** Output the host reads from the program (per verifier stream; per frame for a tool process). */
  readonly outputBytes: number;
}

export type SandboxLimitName = keyof SandboxLimits;

const MIB = 1024 * 1024;

export const DEFAULT_SANDBOX_LIMITS: SandboxLimits = Object.freeze({
  memoryBytes: 2048 * MIB,
  processes: 256,
  openFiles: 1024,
  cpuSeconds: 600,
  fileBytes: 512 * MIB,
  tmpBytes: 256 * MIB,
  outputBytes: 16 * MIB,
});

/** The floor of each limit: below it nothing starts (an interpreter alone needs this much). */
const FLOORS: SandboxLimits = { memoryBytes: 64 * MIB, processes: 8, openFiles: 32, cpuSeconds: 1, fileBytes: 4096, tmpBytes: 64 * 1024, outputBytes: 1024 };

export const SANDBOX_LIMIT_NAMES: readonly SandboxLimitName[] = Object.keys(DEFAULT_SANDBOX_LIMITS) as SandboxLimitName[];

/**
 * `overrides` laid over `base`, each checked: a whole number at or above its floor and within
 * 2^53. `config_invalid` (naming `where` and the limit) for anything else, an unknown name included.
 */
export function sandboxLimits(overrides: Partial<SandboxLimits> | undefined, where: string, base: SandboxLimits = DEFAULT_SANDBOX_LIMITS): SandboxLimits {
  if (overrides === undefined) return base;
  if (overrides === null || typeof overrides !== "object" || Array.isArray(overrides)) {
    throw new ToolError("config_invalid", `${where}: limits must be an object of ${SANDBOX_LIMIT_NAMES.join(", ")}`);
  }
  const out: Record<string, number> = { ...base };
  for (const [name, value] of Object.entries(overrides)) {
    if (!Object.hasOwn(FLOORS, name)) {
      throw new ToolError("config_invalid", `${where}: unknown limit ${JSON.stringify(name)} (use ${SANDBOX_LIMIT_NAMES.join(", ")})`);
    }
    if (value === undefined) continue;
    const floor = FLOORS[name as SandboxLimitName];
    if (typeof value !== "number" || !Number.isSafeInteger(value) || value < floor) {
      throw new ToolError("config_invalid", `${where}: limit ${name} must be a whole number of at least ${floor}`);
    }
    out[name] = value;
  }
  return Object.freeze(out as unknown as SandboxLimits);
}

/** The prlimit options that set every kernel limit, the hard limit too (a program cannot raise them back). */
export function prlimitArgs(limits: SandboxLimits): string[] {
  return [
    `--data=${limits.memoryBytes}`,
    `--nproc=${limits.processes}`,
    `--nofile=${limits.openFiles}`,
    // SIGXCPU at the limit and SIGKILL a second later (at a hard limit alone the kernel sends SIGKILL, which says nothing).
    `--cpu=${limits.cpuSeconds}:${limits.cpuSeconds + 1}`,
    `--fsize=${limits.fileBytes}`,
    // No core files: a crashing tool must not write its memory (and what it held) to disk.
    "--core=0",
  ];
}
