import { existsSync } from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type VerifierRunResult } from "@toolgate/core";
import { TRUNCATION_MARKER } from "@toolgate/core/boundary";
import { call, createTempRepo, gateFor, invokeApproved, type TempRepo } from "./fixtures/git-repo.js";
import { cappedText, completeRecords } from "./git.js";

const run = (stdout: string, truncated: boolean): VerifierRunResult => ({
  exitCode: 0,
  signal: null,
  stdout,
  stderr: "",
  truncated,
  durationMs: 1,
  timedOut: false,
});

describe("reading cut git output", () => {
  it("drops the partial record and the marker of a cut stream", () => {
    const cut = run(`a.ts\0b.ts\0c.t${TRUNCATION_MARKER.replace("N", "99")}`, true);
    expect(completeRecords(cut)).toEqual({ records: ["a.ts", "b.ts"], truncated: true });
    expect(completeRecords(run("a.ts\0b.ts\0", false))).toEqual({ records: ["a.ts", "b.ts"], truncated: false });
    expect(cappedText(cut, 1000).text).not.toContain("toolgate");
    expect(cappedText(run("é".repeat(10), false), 5)).toEqual({ text: "éé", truncated: true });
  });
});

let repo: TempRepo;
beforeEach(() => {
  repo = createTempRepo({ "README.md": "hello\n" });
});
afterEach(() => repo.remove());

describe("limits on git output", () => {
  it("cuts a long diff to the byte limit and says so", async () => {
    const gate = gateFor(repo, { limits: { maxDiffBytes: 200 } });
    repo.write("README.md", Array.from({ length: 100 }, (_, i) => `line ${i}\n`).join(""));
    const result = await gate.invoke("repo.diff", {}, call());
    expect(result.status).toBe("ok");
    const { diff, truncated } = (result.status === "ok" ? result.output : {}) as { diff: string; truncated: boolean };
    expect(truncated).toBe(true);
    expect(Buffer.byteLength(diff)).toBeLessThanOrEqual(200);
  });
});

const bwrapInstalled = [...(process.env["PATH"] ?? "").split(path.delimiter), "/usr/bin", "/bin"].some((dir) => existsSync(path.join(dir, "bwrap")));

describe.skipIf(!bwrapInstalled && process.env["CI"] === undefined)("under the bubblewrap sandbox", { timeout: 60_000 }, () => {
  it("reads, writes and commits with git and checks sandboxed", async () => {
    const gate = gateFor(repo, {
      sandbox: "bubblewrap",
      checks: { write: { argv: [process.execPath, "-e", "try { require('node:fs').writeFileSync('written-by-check', 'x') } catch { process.exit(7) }"] } },
    });
    repo.write("README.md", "hello\nsandboxed\n");
    const status = await gate.invoke("repo.status", {}, call());
    expect(status.status === "ok" && status.output).toMatchObject({ entries: [{ path: "README.md", index: " ", worktree: "M" }] });
    const committed = await invokeApproved(gate, "repo.commit", { message: "Sandboxed commit", paths: ["README.md"] });
    expect(committed.status).toBe("ok");
    expect(repo.git("log", "-1", "--format=%s").trim()).toBe("Sandboxed commit");
    // Checks see the working tree read-only unless declared otherwise.
    const check = await invokeApproved(gate, "repo.check", { check: "write" });
    expect(check.status === "ok" && check.output).toMatchObject({ passed: false, exitCode: 7 });
    expect(existsSync(path.join(repo.root, "written-by-check"))).toBe(false);
  });
});
