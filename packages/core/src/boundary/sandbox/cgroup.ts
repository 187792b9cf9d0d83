/**
 * A cgroup per sandboxed run, where the host may make one (a root host with the pids and memory
 * controllers, cgroup v1 or v2): it bounds the whole tree's processes and memory (a root host's
 * processes ignore RLIMIT_NPROC, and the tree's `/tmp` pages count as its memory), tells which
 * limit was hit, and kills whatever is left in it when the run is over.
 */
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import type { SandboxLimitName, SandboxLimits } from "./limits.js";

const ROOT = "/sys/fs/cgroup";

/** One run's cgroup: the files its first process writes its pid into, and the end of the run. */
export interface RunCgroup {
  /** The `cgroup.procs` files the run's first process joins before it starts the sandbox. */
  readonly procs: readonly string[];
  /** The limits the tree hit (processes, memory), then everything left in it killed and the cgroup removed. */
  finish(): SandboxLimitName[];
}

type Layout = { readonly version: 1; readonly pids: string; readonly memory: string } | { readonly version: 2; readonly base: string };

let layout: Layout | null | undefined;

/** Where this host's cgroups are, once: null where this process may not make one. */
function hostLayout(): Layout | null {
  if (layout !== undefined) return layout;
  layout = null;
  if (process.getuid?.() !== 0) return layout;
  try {
    if (existsSync(path.join(ROOT, "cgroup.controllers"))) {
      const controllers = readFileSync(path.join(ROOT, "cgroup.controllers"), "utf8").split(/\s+/);
      if (!controllers.includes("pids") || !controllers.includes("memory")) return layout;
      const base = path.join(ROOT, "toolgate");
      mkdirSync(base, { recursive: true });
      writeFileSync(path.join(ROOT, "cgroup.subtree_control"), "+pids +memory");
      writeFileSync(path.join(base, "cgroup.subtree_control"), "+pids +memory");
      layout = { version: 2, base };
    } else if (existsSync(path.join(ROOT, "pids", "pids.max")) || existsSync(path.join(ROOT, "pids", "cgroup.procs"))) {
      const pids = path.join(ROOT, "pids", "toolgate");
      const memory = path.join(ROOT, "memory", "toolgate");
      mkdirSync(pids, { recursive: true });
      mkdirSync(memory, { recursive: true });
      layout = { version: 1, pids, memory };
    }
    if (layout !== null) for (const dir of layout.version === 1 ? [layout.pids, layout.memory] : [layout.base]) removeOrphans(dir);
  } catch {
    layout = null;
  }
  return layout;
}

/** Remove the empty cgroups of runs whose host process is gone (one that died before it could finish them). */
function removeOrphans(base: string): void {
  for (const name of readdirSync(base)) {
    const pid = /^run-(\d+)-[0-9a-f]+$/.exec(name)?.[1];
    if (pid === undefined || alive(Number(pid))) continue;
    try {
      rmdirSync(path.join(base, name));
    } catch {
      // still holds a process, or gone already
    }
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** Whether runs get a cgroup here. */
export function cgroupsAvailable(): boolean {
  return hostLayout() !== null;
}

/** A new cgroup for one run with `limits`, or undefined where there is none (the rlimits still apply). */
export function runCgroup(limits: SandboxLimits): RunCgroup | undefined {
  const where = hostLayout();
  if (where === null) return undefined;
  const name = `run-${process.pid}-${randomBytes(6).toString("hex")}`;
  // The tree's memory: what its processes allocate and what it keeps in its /tmp.
  const memory = limits.memoryBytes + limits.tmpBytes;
  try {
    if (where.version === 2) {
      const dir = path.join(where.base, name);
      mkdirSync(dir);
      writeFileSync(path.join(dir, "pids.max"), String(limits.processes));
      writeFileSync(path.join(dir, "memory.max"), String(memory));
      writeFileSync(path.join(dir, "memory.swap.max"), "0", { flag: "w" });
      return made([dir], () => [
        ...(eventCount(path.join(dir, "pids.events"), "max") > 0 ? (["processes"] as const) : []),
        ...(eventCount(path.join(dir, "memory.events"), "oom_kill") > 0 ? (["memoryBytes"] as const) : []),
      ]);
    }
    const pids = path.join(where.pids, name);
    const mem = path.join(where.memory, name);
    mkdirSync(pids);
    mkdirSync(mem);
    writeFileSync(path.join(pids, "pids.max"), String(limits.processes));
    writeFileSync(path.join(mem, "memory.limit_in_bytes"), String(memory));
    return made([pids, mem], () => [
      ...(eventCount(path.join(pids, "pids.events"), "max") > 0 ? (["processes"] as const) : []),
      ...(eventCount(path.join(mem, "memory.oom_control"), "oom_kill") > 0 ? (["memoryBytes"] as const) : []),
    ]);
  } catch {
    return undefined;
  }
}

function made(dirs: readonly string[], hits: () => SandboxLimitName[]): RunCgroup {
  let done = false;
  return {
    procs: dirs.map((d) => path.join(d, "cgroup.procs")),
    finish() {
      if (done) return [];
      done = true;
      let hit: SandboxLimitName[] = [];
      try {
        hit = hits();
      } catch {
        // counters unreadable: report nothing rather than guess
      }
      for (const dir of dirs) removeCgroup(dir);
      return hit;
    },
  };
}

/** Kill what is left in `dir`, then remove it (a few tries: the killed need a moment to go). */
function removeCgroup(dir: string): void {
  for (let attempt = 0; attempt < 50; attempt++) {
    try {
      for (const pid of readFileSync(path.join(dir, "cgroup.procs"), "utf8").split("\n")) {
        if (pid.trim() === "") continue;
        try {
          process.kill(Number(pid), "SIGKILL");
        } catch {
          // gone already
        }
      }
      rmdirSync(dir);
      return;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return;
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 10);
    }
  }
}

/** The number after `key` in a flat keyed file. */
function eventCount(file: string, key: string): number {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch {
    return 0;
  }
  for (const line of text.split("\n")) {
    const [name, value] = line.trim().split(/\s+/);
    if (name === key) return Number(value) || 0;
  }
  return 0;
}
