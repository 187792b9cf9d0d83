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
  checks: {
    pass: { argv: [process.execPath, "-e", "process.exit(0)"], description: "always passes" },
    show: { argv: [process.execPath, "-e", "process.stdout.write(require('fs').readFileSync('planted.txt', 'utf8'))"], description: "prints planted.txt" },
  },
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
    "repo.commit": [
      { message: "m", paths: [] },
      { message: "m", paths: ["-a"] },
      { message: "   ", paths: ["README.md"] },
    ],
    "repo.check": [{ check: "undeclared" }],
  },
  // Each tool returns a secret from the repository: in a file's name, content or a commit message.
  plantSecret: (toolId, secret) => {
    const git = (...args: string[]) => execFileSync("git", args, { cwd: root, env: plainGitEnv(home), stdio: "ignore" });
    writeFileSync(path.join(root, "planted.txt"), `token=${secret}\n`);
    if (toolId === "repo.log") {
      git("add", "--", "planted.txt");
      git("commit", "-q", "-m", `Add ${secret}`);
    }
    if (toolId === "repo.diff") {
      writeFileSync(path.join(root, "README.md"), `hello\n${secret}\n`);
    }
    if (toolId === "repo.list_files" || toolId === "repo.status") writeFileSync(path.join(root, `${secret}.md`), "x\n");
    const inputs: Record<string, unknown> = {
      "repo.list_files": { glob: "*.md" },
      "repo.read_file": { path: "planted.txt" },
      "repo.search": { pattern: "token=" },
      "repo.status": {},
      "repo.diff": { scope: "unstaged" },
      "repo.log": { limit: 5 },
      "repo.write_file": { path: `notes/${secret}.txt`, content: "new\n" },
      "repo.apply_patch": { patch: `--- /dev/null\n+++ b/${secret}.txt\n@@ -0,0 +1 @@\n+new\n` },
      "repo.check": { check: "show" },
      "repo.commit": { message: `Record ${secret}`, paths: ["planted.txt"] },
    };
    return inputs[toolId];
  },
});
