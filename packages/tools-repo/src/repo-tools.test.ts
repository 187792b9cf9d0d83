import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, chmodSync } from "node:fs";
import { grantAsOwner } from "@toolgate/core/testing";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createGate, createMemoryJournal, createToolRegistry, ToolError, type Gate, type InvokeResult } from "@toolgate/core";
import { createVerifier } from "@toolgate/core/boundary";
import { call, createTempRepo, exists, gateFor, identity, invokeApproved, type TempRepo } from "./fixtures/git-repo.js";
import { createRepoTools } from "./index.js";

let repo: TempRepo;
let gate: Gate;
beforeEach(() => {
  repo = createTempRepo({
    "README.md": "hello\n",
    "src/a.ts": "export const a = 1;\n",
    "src/b.ts": "export const b = 2;\n",
    "docs/guide.md": "# Guide\nRead me.\n",
  });
  gate = gateFor(repo);
});
afterEach(() => repo.remove());

function output<T>(result: InvokeResult): T {
  if (result.status !== "ok") throw new Error(`expected ok, got ${JSON.stringify(result)}`);
  return result.output as T;
}
const read = (relative: string) => readFileSync(path.join(repo.root, relative), "utf8");

describe("reading", () => {
  it("lists files by glob and directory, tracked and untracked, never .git", async () => {
    repo.write("src/new.ts", "x\n");
    repo.write(".gitignore", "ignored.ts\n");
    repo.write("ignored.ts", "x\n");
    expect(output<{ files: string[] }>(await gate.invoke("repo.list_files", { glob: "*.ts" }, call())).files.sort()).toEqual([
      "src/a.ts",
      "src/b.ts",
      "src/new.ts",
    ]);
    expect(output<{ files: string[] }>(await gate.invoke("repo.list_files", { directory: "docs" }, call())).files).toEqual(["docs/guide.md"]);
    expect(output<{ files: string[] }>(await gate.invoke("repo.list_files", { glob: "src/{a,b}.ts" }, call())).files.sort()).toEqual(["src/a.ts", "src/b.ts"]);
    const limited = output<{ files: string[]; total: number; truncated: boolean }>(await gate.invoke("repo.list_files", { limit: 2 }, call()));
    expect(limited).toMatchObject({ total: 6, truncated: true });
    expect(limited.files).toHaveLength(2);
  });

  it("reads line ranges, reports binary files, and refuses directories and missing files", async () => {
    repo.write("lines.txt", "one\ntwo\nthree\nfour\n");
    expect(output(await gate.invoke("repo.read_file", { path: "lines.txt", startLine: 2, endLine: 3 }, call()))).toMatchObject({
      content: "two\nthree\n",
      startLine: 2,
      endLine: 3,
      totalLines: 4,
      binary: false,
      truncated: false,
    });
    repo.write("image.bin", new Uint8Array([0x89, 0x50, 0x00, 0x01, 0xff]));
    expect(output(await gate.invoke("repo.read_file", { path: "image.bin" }, call()))).toMatchObject({ binary: true, content: "", bytes: 5 });
    const dir = await gate.invoke("repo.read_file", { path: "src" }, call());
    expect(dir.status === "error" && dir.code).toBe("invalid_input");
    const missing = await gate.invoke("repo.read_file", { path: "nope.txt" }, call());
    expect(missing.status === "error" && missing.code).toBe("not_found");
  });

  it("searches fixed strings and regular expressions, case-insensitively on request", async () => {
    expect(output<{ matches: unknown[] }>(await gate.invoke("repo.search", { pattern: "export const" }, call())).matches).toEqual([
      { path: "src/a.ts", line: 1, text: "export const a = 1;" },
      { path: "src/b.ts", line: 1, text: "export const b = 2;" },
    ]);
    expect(output<{ matches: unknown[] }>(await gate.invoke("repo.search", { pattern: "b = [0-9]", regex: true }, call())).matches).toHaveLength(1);
    expect(
      output<{ matches: unknown[] }>(await gate.invoke("repo.search", { pattern: "READ ME", ignoreCase: true, directory: "docs" }, call())).matches,
    ).toEqual([{ path: "docs/guide.md", line: 2, text: "Read me." }]);
    expect(output<{ matches: unknown[] }>(await gate.invoke("repo.search", { pattern: "a.ts" }, call())).matches).toEqual([]);
    const invalid = await gate.invoke("repo.search", { pattern: "(unclosed", regex: true }, call());
    expect(invalid.status === "error" && invalid.code).toBe("invalid_input");
  });

  it("shows status, diffs in each scope, and the log", async () => {
    repo.write("src/a.ts", "export const a = 10;\n");
    repo.write("src/b.ts", "export const b = 20;\n");
    repo.git("add", "src/b.ts");
    repo.write("fresh.txt", "new\n");
    const status = output<{ branch: string; entries: { path: string; index: string; worktree: string }[] }>(await gate.invoke("repo.status", {}, call()));
    expect(status.branch).toBe("main");
    expect(status.entries).toEqual(
      expect.arrayContaining([
        { path: "src/a.ts", index: " ", worktree: "M" },
        { path: "src/b.ts", index: "M", worktree: " " },
        { path: "fresh.txt", index: "?", worktree: "?" },
      ]),
    );
    const unstaged = output<{ diff: string }>(await gate.invoke("repo.diff", {}, call())).diff;
    expect(unstaged).toContain("+export const a = 10;");
    expect(unstaged).not.toContain("b = 20");
    expect(output<{ diff: string }>(await gate.invoke("repo.diff", { scope: "staged" }, call())).diff).toContain("+export const b = 20;");
    expect(output<{ diff: string }>(await gate.invoke("repo.diff", { scope: "head", paths: ["src/b.ts"] }, call())).diff).not.toContain("a = 10");
    const log = output<{ commits: { subject: string; author: string }[] }>(await gate.invoke("repo.log", { limit: 5 }, call()));
    expect(log.commits).toEqual([expect.objectContaining({ subject: "initial", author: "Fixture" })]);
  });

  it("shows an empty log for a repository without commits", async () => {
    const empty = createTempRepo({});
    try {
      const emptyGate = gateFor(empty);
      expect(output(await emptyGate.invoke("repo.log", {}, call()))).toEqual({ commits: [], truncated: false });
      expect(output<{ branch: string }>(await emptyGate.invoke("repo.status", {}, call())).branch).toContain("No commits yet");
    } finally {
      empty.remove();
    }
  });
});

describe("writing", () => {
  it("creates a file in new directories and replaces one keeping its mode, after approval of the diff", async () => {
    const first = await gate.invoke("repo.write_file", { path: "deep/er/new.txt", content: "one\n" }, call());
    expect(first.status === "approval_required" && first.preview).toMatchObject({
      summary: "Create deep/er/new.txt (+1 -0 lines)",
      details: { path: "deep/er/new.txt", change: "create" },
    });
    expect(first.status === "approval_required" && first.preview.body).toContain("--- /dev/null\n+++ b/deep/er/new.txt\n@@ -0,0 +1,1 @@\n+one\n");
    expect(exists(path.join(repo.root, "deep"))).toBe(false);
    expect(output(await invokeApproved(gate, "repo.write_file", { path: "deep/er/new.txt", content: "one\n" }))).toMatchObject({
      path: "deep/er/new.txt",
      created: true,
      bytes: 4,
    });
    expect(read("deep/er/new.txt")).toBe("one\n");

    chmodSync(path.join(repo.root, "src/a.ts"), 0o755);
    expect(output(await invokeApproved(gate, "repo.write_file", { path: "src/a.ts", content: "export const a = 3;\n" }))).toMatchObject({ created: false });
    expect(read("src/a.ts")).toBe("export const a = 3;\n");
    expect(statSync(path.join(repo.root, "src/a.ts")).mode & 0o777).toBe(0o755);
  });

  it("applies a multi-file patch: modify, create, delete; the preview is the resulting diff", async () => {
    const patch = [
      "diff --git a/src/a.ts b/src/a.ts",
      "--- a/src/a.ts",
      "+++ b/src/a.ts",
      "@@ -1 +1,2 @@",
      " export const a = 1;",
      "+export const c = 3;",
      "diff --git a/src/new.ts b/src/new.ts",
      "new file mode 100644",
      "--- /dev/null",
      "+++ b/src/new.ts",
      "@@ -0,0 +1 @@",
      "+new",
      "diff --git a/src/b.ts b/src/b.ts",
      "deleted file mode 100644",
      "--- a/src/b.ts",
      "+++ /dev/null",
      "@@ -1 +0,0 @@",
      "-export const b = 2;",
      "",
    ].join("\n");
    const first = await gate.invoke("repo.apply_patch", { patch }, call());
    expect(first.status).toBe("approval_required");
    if (first.status !== "approval_required") return;
    expect(first.preview.body).toContain("+export const c = 3;");
    expect(first.preview.details?.["files"]).toEqual([
      expect.objectContaining({ path: "src/a.ts", change: "modify", added: 1, removed: 0 }),
      expect.objectContaining({ path: "src/new.ts", change: "create", added: 1, removed: 0 }),
      expect.objectContaining({ path: "src/b.ts", change: "delete", added: 0, removed: 1 }),
    ]);
    const grant = await grantAsOwner(gate, first.requestId);
    expect((await gate.invoke("repo.apply_patch", { patch }, call(undefined, { approval: grant }))).status).toBe("ok");
    expect(read("src/a.ts")).toBe("export const a = 1;\nexport const c = 3;\n");
    expect(read("src/new.ts")).toBe("new\n");
    expect(exists(path.join(repo.root, "src/b.ts"))).toBe(false);
  });

  it("writes nothing when any hunk of a patch does not match", async () => {
    const patch =
      "--- a/src/a.ts\n+++ b/src/a.ts\n@@ -1 +1 @@\n-export const a = 1;\n+export const a = 9;\n--- a/src/b.ts\n+++ b/src/b.ts\n@@ -1 +1 @@\n-not what is there\n+x\n";
    const result = await invokeApproved(gate, "repo.apply_patch", { patch });
    expect(result.status === "error" && result.code).toBe("conflict");
    expect(read("src/a.ts")).toBe("export const a = 1;\n");
  });
});

describe("checks", () => {
  it("runs a declared check and reports failure, output and timeouts", async () => {
    const checked = gateFor(repo, {
      checks: {
        pass: { argv: [process.execPath, "-e", "console.log('all good')"] },
        fail: { argv: [process.execPath, "-e", "console.error('broken'); process.exit(3)"] },
        hang: { argv: [process.execPath, "-e", "setInterval(() => {}, 1000)"], timeoutMs: 300 },
      },
    });
    expect(output(await invokeApproved(checked, "repo.check", { check: "pass" }))).toMatchObject({ passed: true, exitCode: 0, stdout: "all good\n" });
    expect(output(await invokeApproved(checked, "repo.check", { check: "fail" }))).toMatchObject({ passed: false, exitCode: 3, stderr: "broken\n" });
    expect(output(await invokeApproved(checked, "repo.check", { check: "hang" }))).toMatchObject({ passed: false, timedOut: true });
  });

  it("can run checks declared on the gate's verifier instead", async () => {
    const family = createRepoTools({ root: repo.root, identity, checks: ["lint"] });
    const verifier = createVerifier({ root: repo.root, commands: { lint: { argv: [process.execPath, "-e", "process.exit(0)"] } } });
    const withVerifier = createGate({ registry: createToolRegistry({ families: [family] }), journal: createMemoryJournal(), verifier });
    expect(output(await invokeApproved(withVerifier as unknown as Gate, "repo.check", { check: "lint" }))).toMatchObject({ passed: true });
    const without = createGate({ registry: createToolRegistry({ families: [family] }), journal: createMemoryJournal() });
    const refused = await invokeApproved(without as unknown as Gate, "repo.check", { check: "lint" });
    expect(refused.status === "error" && refused.code).toBe("command_denied");
  });

  it("has no repo.check and no repo:check token without checks", () => {
    const family = createRepoTools({ root: repo.root });
    expect(family.tools.map((t) => t.id)).not.toContain("repo.check");
    expect(family.permissions).not.toContain("repo:check");
  });
});

describe("committing", () => {
  it("commits exactly the listed paths, leaving other staged and changed files out", async () => {
    repo.write("src/a.ts", "export const a = 2;\n");
    repo.write("src/b.ts", "export const b = 3;\n");
    repo.git("add", "src/b.ts");
    repo.write("README.md", "hello\nmore\n");
    repo.write("added.txt", "brand new\n");
    const result = output<{ commit: string; paths: string[] }>(
      await invokeApproved(gate, "repo.commit", { message: "Change a\n\nWith a body.", paths: ["src/a.ts", "added.txt"] }),
    );
    expect(result.paths).toEqual(["src/a.ts", "added.txt"]);
    expect(result.commit).toBe(repo.git("rev-parse", "HEAD").trim());
    expect(repo.git("log", "-1", "--format=%an|%B").trim()).toBe(`${identity.name}|Change a\n\nWith a body.`);
    expect(repo.git("show", "--name-only", "--format=", "HEAD").trim()).toBe("added.txt\nsrc/a.ts");
    expect(repo.git("diff", "--cached", "--name-only").trim()).toBe("src/b.ts");
    expect(repo.git("diff", "--name-only").trim()).toBe("README.md");
  });

  it("commits a deletion, and refuses when nothing listed changed", async () => {
    rmSync(path.join(repo.root, "src/b.ts"));
    const first = await gate.invoke("repo.commit", { message: "Remove b", paths: ["src/b.ts"] }, call());
    expect(first.status === "approval_required" && first.preview.body).toContain("src/b.ts | +0 -1 (deleted)");
    expect(output(await invokeApproved(gate, "repo.commit", { message: "Remove b", paths: ["src/b.ts"] }))).toMatchObject({ paths: ["src/b.ts"] });
    expect(repo.git("ls-files", "src").trim()).toBe("src/a.ts");
    const nothing = await gate.invoke("repo.commit", { message: "Nothing", paths: ["src/a.ts"] }, call());
    expect(nothing.status === "error" && nothing.code).toBe("conflict");
  });
});

describe("configuration", () => {
  it("refuses a root without a .git directory, and bad limits", () => {
    const plain = mkdtempSync(path.join(tmpdir(), "tools-repo-plain-"));
    try {
      mkdirSync(path.join(plain, "sub"));
      expect(() => createRepoTools({ root: plain })).toThrow(expect.objectContaining({ code: "config_invalid" }));
      expect(() => createRepoTools({ root: "relative/path" })).toThrow(ToolError);
      expect(() => createRepoTools({ root: repo.root, limits: { maxPaths: 0 } })).toThrow(expect.objectContaining({ code: "config_invalid" }));
      expect(() => createRepoTools({ root: repo.root, checks: { "Bad Name": { argv: ["true"] } } })).toThrow(
        expect.objectContaining({ code: "config_invalid" }),
      );
    } finally {
      rmSync(plain, { recursive: true, force: true });
    }
  });
});
