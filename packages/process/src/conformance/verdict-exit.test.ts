import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { marker, NODE, PYTHON_TOOL, processesWith, realPython } from "../fixtures/helpers.js";
import { runConformance } from "./run-conformance.js";

// The kit's own bin, as `toolgate-tool-test` runs it (built by the global setup).
const BIN = fileURLToPath(new URL("../../dist/conformance/bin.js", import.meta.url));

const tags: string[] = [];
afterEach(() => {
  for (const tag of tags.splice(0)) for (const pid of processesWith(tag)) process.kill(pid, "SIGKILL");
});

interface Run {
  readonly lines: string[];
  readonly code: number | null;
  /** Milliseconds from the summary line ("N passed, M failed") to the kit's exit. */
  readonly afterVerdictMs: number;
}

function runBin(args: readonly string[]): Promise<Run> {
  return new Promise((resolve) => {
    const child = spawn(NODE, [BIN, ...args], { stdio: ["ignore", "pipe", "pipe"], env: { PATH: process.env["PATH"] ?? "" } });
    let out = "";
    let verdictAt = 0;
    child.stdout.on("data", (chunk: Buffer) => {
      out += chunk.toString("utf8");
      if (verdictAt === 0 && /^\d+ passed, \d+ failed$/m.test(out)) verdictAt = Date.now();
    });
    child.on("close", (code) => resolve({ lines: out.trim().split("\n"), code, afterVerdictMs: Date.now() - verdictAt }));
  });
}

describe("the conformance run ends as soon as it has its verdict", () => {
  it("a passing tool: the kit exits right after its summary", async () => {
    // A long call timeout: a timer left running would hold the kit for 300 s, far beyond the bound below
    // (generous for a loaded machine).
    const run = await runBin(["--input", 'word_count={"text":"a b"}', "--slow", 'slow_count={"n":50}', "--timeout", "300000", "--", realPython(), PYTHON_TOOL]);
    expect(run.lines.at(-1)).toBe("8 passed, 0 failed");
    expect(run.code).toBe(0);
    console.log(`verdict to exit, passing run: ${run.afterVerdictMs} ms`);
    expect(run.afterVerdictMs).toBeLessThan(60_000);
  });

  it("a tool that exits before its manifest and leaves a process holding its pipes: the verdict names its stderr, and the kit exits with it", async () => {
    // Before, the kit waited for the pipes to close: until the process left behind ended, 300 s later.
    const tag = marker();
    tags.push(tag);
    const run = await runBin(["--timeout", "300000", "--", "sh", "-c", `setsid sh -c 'sleep 300; :' "$0" & echo 'config.toml: no such file' >&2; exit 3`, tag]);
    expect(run.lines[0]).toBe("FAIL handshake — the process exited before its ToolRegister; its stderr ends: config.toml: no such file");
    expect(run.lines.at(-1)).toBe("0 passed, 8 failed");
    expect(run.code).toBe(1);
    console.log(`verdict to exit, failed handshake: ${run.afterVerdictMs} ms`);
    expect(run.afterVerdictMs).toBeLessThan(60_000);
  });
});

describe("the kit quotes a failed handshake's stderr as the host does", () => {
  it("garbage before the manifest: the violation and the stderr, the explicit environment's values redacted", async () => {
    const report = await runConformance({
      command: "sh",
      args: ["-c", `echo "loaded key $API_TOKEN" >&2; printf 'not a frame at all'; sleep 5`],
      env: { PATH: process.env["PATH"] ?? "", API_TOKEN: "sk-live-0123456789abcdef" },
    });
    const handshake = report.checks[0]!;
    expect(handshake.ok).toBe(false);
    expect(handshake.detail).toMatch(
      /^the process exited before its ToolRegister; its stderr ends: loaded key \[REDACTED\]; protocol violation: stdout is not a clean frame stream/,
    );
    expect(JSON.stringify(report)).not.toContain("sk-live");
  });
});
