import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { cgroupsAvailable, runCgroup } from "./cgroup.js";
import { sandboxLimits } from "./limits.js";
import { bwrapOnPath, DEFAULT_SANDBOX_READ_ONLY_PATHS, sandboxCgroups, sandboxLaunch, feedSandbox, sandboxStdio } from "./profile.js";

const MIB = 1024 * 1024;
const root = process.getuid?.() === 0;
// Only a root host makes cgroups; there the pids and memory controllers must be usable.
const runCgroupTests = root && cgroupsAvailable();

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return !/^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, "utf8"));
  } catch {
    return false;
  }
};

const exited = (child: ChildProcess) =>
  new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on("close", (code, signal) => resolve({ code, signal })));

/** Starts `argv` on the host with its first process joined to `procs` before it runs anything. */
function spawnIn(procs: readonly string[], argv: readonly string[]): ChildProcess {
  const join = 'while [ "$1" != -- ]; do echo $$ > "$1" || exit 125; shift; done; shift; exec "$@"';
  return spawn("/bin/sh", ["-c", join, "sh", ...procs, "--", ...argv], { stdio: ["ignore", "pipe", "pipe"] });
}

describe("without cgroups", () => {
  it.skipIf(root)("a host that is not root makes none (the rlimits bound it)", () => {
    expect(cgroupsAvailable()).toBe(false);
    expect(runCgroup(sandboxLimits({}, "x"))).toBeUndefined();
    expect(sandboxCgroups()).toBe(false);
  });
  it.skipIf(!root)("a root host says whether it has them", () => {
    expect(sandboxCgroups()).toBe(cgroupsAvailable());
  });
});

describe.skipIf(!runCgroupTests)("a run's cgroup (root host)", { timeout: 60_000 }, () => {
  it("bounds processes and memory (the tree's memory includes its /tmp)", () => {
    const cgroup = runCgroup(sandboxLimits({ processes: 12, memoryBytes: 100 * MIB, tmpBytes: MIB }, "x"))!;
    try {
      const dirs = cgroup.procs.map((p) => path.dirname(p));
      const values = dirs.flatMap((dir) =>
        ["pids.max", "memory.max", "memory.limit_in_bytes"]
          .filter((f) => existsSync(path.join(dir, f)))
          .map((f) => [f, readFileSync(path.join(dir, f), "utf8").trim()]),
      );
      expect(values).toContainEqual(["pids.max", "12"]);
      expect(values.some(([f, v]) => (f === "memory.max" || f === "memory.limit_in_bytes") && v === String(101 * MIB))).toBe(true);
    } finally {
      cgroup.finish();
    }
  });

  it("finish kills what is left in it (a host process outside any pid namespace) and removes it", async () => {
    const cgroup = runCgroup(sandboxLimits({}, "x"))!;
    const dirs = cgroup.procs.map((p) => path.dirname(p));
    const child = spawnIn(cgroup.procs, ["/bin/sh", "-c", "/bin/sleep 60 & echo $!; wait"]);
    const sleeper = await new Promise<number>((resolve) => child.stdout!.once("data", (d: Buffer) => resolve(Number(d.toString().trim()))));
    expect(alive(sleeper)).toBe(true);
    for (const dir of dirs) expect(existsSync(dir)).toBe(true);
    try {
      expect(cgroup.finish()).toEqual([]);
      // finish() returns once the cgroup is gone, which it cannot be while anything is in it
      for (const dir of dirs) expect(existsSync(dir)).toBe(false);
      expect(alive(sleeper)).toBe(false);
      await exited(child);
      // once only
      expect(cgroup.finish()).toEqual([]);
    } finally {
      if (alive(sleeper)) process.kill(sleeper, "SIGKILL");
    }
  });

  it("reports processes when the tree hit its pids limit", async () => {
    const cgroup = runCgroup(sandboxLimits({ processes: 8 }, "x"))!;
    const child = spawnIn(cgroup.procs, ["/bin/sh", "-c", "for i in 1 2 3 4 5 6 7 8 9 10 11 12; do /bin/sleep 2 & done; wait"]);
    await exited(child);
    expect(cgroup.finish()).toEqual(["processes"]);
  });

  it("reports nothing for a tree that stayed under its limits", async () => {
    const cgroup = runCgroup(sandboxLimits({ processes: 8 }, "x"))!;
    await exited(spawnIn(cgroup.procs, ["/bin/sh", "-c", "/bin/true & wait"]));
    expect(cgroup.finish()).toEqual([]);
  });

  it.skipIf(bwrapOnPath() === undefined && process.env["CI"] === undefined)(
    "a sandboxed tree past memoryBytes is killed and finish() says memoryBytes (each process under RLIMIT_DATA)",
    async () => {
      // Four processes of ~40 MiB each: none passes the per-process 64 MiB, the tree passes the cgroup's.
      const hog =
        "import os, time\nfor i in range(3):\n  if os.fork() == 0: break\nb = bytearray(40 * 1024 * 1024)\nfor j in range(0, len(b), 4096): b[j] = 1\ntime.sleep(2)";
      const launch = sandboxLaunch(
        {
          bwrap: bwrapOnPath() ?? "/usr/bin/bwrap",
          readOnly: DEFAULT_SANDBOX_READ_ONLY_PATHS,
          cwd: "/tmp",
          limits: sandboxLimits({ memoryBytes: 64 * MIB, tmpBytes: 64 * 1024 }, "x"),
        },
        ["/usr/bin/python3", "-c", hog],
        "test",
      );
      expect(launch.facts.processesBoundBy).toBe("cgroup");
      const [program, ...rest] = launch.argv as [string, ...string[]];
      const child = spawn(program, rest, { stdio: sandboxStdio(launch, ["ignore", "ignore", "ignore"]), env: { ...launch.env } });
      feedSandbox(child, launch);
      const exit = await exited(child);
      expect(launch.finish(exit)).toContain("memoryBytes");
    },
  );
});
