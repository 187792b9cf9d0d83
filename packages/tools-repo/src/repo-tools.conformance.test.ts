import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll } from "vitest";
import { describeToolFamily } from "@toolgate/core/testing";
import { plainGitEnv } from "./fixtures/git-repo.js";
import { createRepoTools } from "./index.js";

// The family is bound to one root; each test's context re-creates a fresh git repository in it.
const base = realpathSync(mkdtempSync(path.join(tmpdir(), "tools-repo-conformance-")));
const root = path.join(base, "repo");
const home = path.join(base, "home");
mkdirSync(root);
mkdirSync(home);

function freshRepository(): void {
  for (const entry of readdirSync(root)) rmSync(path.join(root, entry), { recursive: true, force: true });
  const git = (...args: string[]) => execFileSync("git", args, { cwd: root, env: plainGitEnv(home), stdio: "ignore" });
  git("init", "-q", "-b", "main");
  writeFileSync(path.join(root, "README.md"), "hello\n");
  git("add", "--", "README.md");
  git("commit", "-q", "-m", "initial");
  writeFileSync(path.join(root, "README.md"), "hello\nworld\n");
}
freshRepository();
afterAll(() => rmSync(base, { recursive: true, force: true }));

const family = createRepoTools({
  root,
  identity: { name: "Conformance", email: "conformance@example.invalid" },
  checks: { pass: { argv: [process.execPath, "-e", "process.exit(0)"], description: "always passes" } },
});

describeToolFamily(family, {
  makeContext: () => {
    freshRepository();
    return {};
  },
  validInputs: {
    "repo.list_files": { glob: "*.md" },
    "repo.read_file": { path: "README.md", startLine: 1, endLine: 2 },
    "repo.search": { pattern: "hello" },
    "repo.status": {},
    "repo.diff": { scope: "unstaged" },
    "repo.log": { limit: 5 },
    "repo.write_file": { path: "notes/new.txt", content: "new\n" },
    "repo.apply_patch": { patch: "--- a/README.md\n+++ b/README.md\n@@ -1,2 +1,3 @@\n hello\n+there\n world\n" },
    "repo.check": { check: "pass" },
    "repo.commit": { message: "Update README", paths: ["README.md"] },
  },
  invalidInputs: {
    "repo.read_file": [{ path: "-rf" }, { path: "" }, { path: "README.md", startLine: 3, endLine: 1 }],
    "repo.search": [{ pattern: "" }, { pattern: "a\nb" }],
    "repo.status": [{ paths: ["--output=/tmp/x"] }],
    "repo.write_file": [{ path: "-x", content: "" }],
    "repo.commit": [{ message: "m", paths: [] }, { message: "m", paths: ["-a"] }, { message: "   ", paths: ["README.md"] }],
    "repo.check": [{ check: "undeclared" }],
  },
});
