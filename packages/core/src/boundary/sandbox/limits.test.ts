import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { ToolError } from "../../errors.js";
import { DEFAULT_SANDBOX_LIMITS, prlimitArgs, SANDBOX_LIMIT_NAMES, sandboxLimits, type SandboxLimits } from "./limits.js";

const MIB = 1024 * 1024;

function refusal(fn: () => unknown): { code: string; message: string } {
  try {
    fn();
  } catch (error) {
    if (!ToolError.is(error)) throw error;
    return { code: error.code, message: error.message };
  }
  return { code: "accepted", message: "" };
}

const bad = (overrides: unknown) => refusal(() => sandboxLimits(overrides as Partial<SandboxLimits>, "tools.files.limits"));

describe("sandboxLimits: what is refused", () => {
  it("an unknown name, naming where and the name", () => {
    const r = bad({ memory: 1024 });
    expect(r.code).toBe("config_invalid");
    expect(r.message).toMatch(/^tools\.files\.limits: unknown limit "memory" \(use memoryBytes, processes, /);
    // a name from the object's prototype is unknown too
    expect(bad(JSON.parse('{"toString": 5}')).code).toBe("config_invalid");
    expect(bad(JSON.parse('{"__proto__": {"processes": 1}}')).code).toBe("config_invalid");
  });

  it("a value below its floor, for each limit", () => {
    const floors: SandboxLimits = {
      memoryBytes: 64 * MIB,
      processes: 8,
      openFiles: 32,
      cpuSeconds: 1,
      fileBytes: 4096,
      tmpBytes: 64 * 1024,
      outputBytes: 1024,
    };
    for (const name of SANDBOX_LIMIT_NAMES) {
      const floor = floors[name];
      expect([name, bad({ [name]: floor - 1 })]).toEqual([
        name,
        { code: "config_invalid", message: `tools.files.limits: limit ${name} must be a whole number of at least ${floor}` },
      ]);
      expect([name, bad({ [name]: 0 }).code]).toEqual([name, "config_invalid"]);
      expect([name, bad({ [name]: -1 }).code]).toEqual([name, "config_invalid"]);
      // the floor itself is accepted
      expect(sandboxLimits({ [name]: floor }, "here")[name]).toBe(floor);
    }
  });

  it("a value that is not a whole number within 2^53", () => {
    for (const value of [1.5, 8.5, 100.5, 1e300, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 53, "4096", null, true, [4096], { n: 1 }]) {
      expect([value, bad({ processes: value }).code]).toEqual([value, "config_invalid"]);
      expect([value, bad({ processes: value }).message]).toEqual([value, "tools.files.limits: limit processes must be a whole number of at least 8"]);
    }
  });

  it("limits that are not an object", () => {
    for (const value of [null, 5, "x", [], [1]]) {
      const r = bad(value);
      expect([value, r.code]).toEqual([value, "config_invalid"]);
      expect(r.message).toMatch(/^tools\.files\.limits: limits must be an object of memoryBytes, /);
    }
  });
});

describe("sandboxLimits: what is accepted", () => {
  it("no overrides: the defaults (or the base)", () => {
    expect(sandboxLimits(undefined, "x")).toEqual(DEFAULT_SANDBOX_LIMITS);
    const base = sandboxLimits({ processes: 32 }, "x");
    expect(sandboxLimits(undefined, "x", base)).toBe(base);
  });

  it("an override replaces only its own limit, over the given base; undefined keeps the base's", () => {
    const base = sandboxLimits({ processes: 32 }, "x");
    const next = sandboxLimits({ cpuSeconds: 5, openFiles: undefined } as unknown as Partial<SandboxLimits>, "x", base);
    expect(next).toEqual({ ...DEFAULT_SANDBOX_LIMITS, processes: 32, cpuSeconds: 5 });
    expect(Object.isFrozen(next)).toBe(true);
    expect(Object.isFrozen(DEFAULT_SANDBOX_LIMITS)).toBe(true);
  });

  it("the defaults are at or above their floors (the default profile itself validates)", () => {
    expect(sandboxLimits({ ...DEFAULT_SANDBOX_LIMITS }, "defaults")).toEqual(DEFAULT_SANDBOX_LIMITS);
    expect([...SANDBOX_LIMIT_NAMES].sort()).toEqual(["cpuSeconds", "fileBytes", "memoryBytes", "openFiles", "outputBytes", "processes", "tmpBytes"]);
  });
});

describe("prlimitArgs", () => {
  const limits = sandboxLimits({ memoryBytes: 100 * MIB, processes: 20, openFiles: 64, cpuSeconds: 7, fileBytes: 8192 }, "x");

  it("sets data, nproc, nofile, cpu, fsize and no core files", () => {
    const args = prlimitArgs(limits);
    // cpu's soft limit is the limit (SIGXCPU there); its hard limit may sit above it (SIGKILL there)
    expect(args.filter((a) => !a.startsWith("--cpu="))).toEqual([`--data=${100 * MIB}`, "--nproc=20", "--nofile=64", "--fsize=8192", "--core=0"]);
    expect(args.filter((a) => a.startsWith("--cpu="))).toEqual([expect.stringMatching(/^--cpu=7(:\d+)?$/)]);
  });

  // The kernel's view of those options: soft = hard (cpu: hard at or above soft), so the program cannot raise a limit back.
  it.skipIf(!existsSync("/usr/bin/prlimit") && process.env["CI"] === undefined)("a process started with them has those kernel limits", () => {
    const ran = spawnSync("/usr/bin/prlimit", [...prlimitArgs(limits), "--", "/bin/cat", "/proc/self/limits"], { encoding: "utf8" });
    expect(ran.status).toBe(0);
    const row = (title: string) => {
      const line = ran.stdout.split("\n").find((l) => l.startsWith(title));
      return line?.slice(title.length).trim().split(/\s+/).slice(0, 2);
    };
    expect(row("Max data size")).toEqual([String(100 * MIB), String(100 * MIB)]);
    expect(row("Max processes")).toEqual(["20", "20"]);
    expect(row("Max open files")).toEqual(["64", "64"]);
    const cpu = row("Max cpu time")!;
    expect(cpu[0]).toBe("7");
    expect(Number(cpu[1])).toBeGreaterThanOrEqual(7);
    expect(row("Max file size")).toEqual(["8192", "8192"]);
    expect(row("Max core file size")).toEqual(["0", "0"]);
  });
});
