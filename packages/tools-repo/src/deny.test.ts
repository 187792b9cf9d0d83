import { linkSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createToolRegistry, type Gate, type InvokeResult } from "@toolgate/core";
import { protectPath } from "@toolgate/core/boundary";
import { buildInventory } from "@toolgate/core/operator";
import { compileDeny, DEFAULT_DENY } from "./deny.js";
import { withoutHiddenFiles } from "./unified-diff.js";
import { call, createTempRepo, exists, gateFor, identity, invokeApproved, type TempRepo } from "./fixtures/git-repo.js";
import { createRepoTools } from "./index.js";

const AUDIT_KEY = "audit-key-0123456789abcdef0123456789abcdef";
const SECRETS = {
  ".toolgate/audit.key": AUDIT_KEY,
  ".toolgate/grants/apr_1.json": '{"grant":"grant-secret-77"}',
  ".toolgate/journal.db": "journal-secret-55",
  ".env": "API_TOKEN=env-secret-11",
  ".env.production": "API_TOKEN=env-secret-12",
  "deploy/id_ed25519": "ssh-secret-13",
  "certs/server.pem": "pem-secret-14",
  ".npmrc": "//registry/:_authToken=npm-secret-15",
  ".aws/credentials": "aws-secret-16",
  "var/gate/vault.key": "vault-secret-17",
  "var/gate/journal.db-wal": "wal-secret-18",
};

let repo: TempRepo;
let gate: Gate;
beforeEach(() => {
  repo = createTempRepo({ "README.md": "hello\n", "src/a.txt": "alpha\n", ".env": "API_TOKEN=committed-env\n" });
  for (const [file, content] of Object.entries(SECRETS)) repo.write(file, `${content}\n`);
  // A state directory configured somewhere no default pattern names: protected, as the CLI does.
  protectPath(path.join(repo.root, "var", "gate"));
  gate = gateFor(repo);
});
afterEach(() => repo.remove());

const codeOf = (result: InvokeResult) => (result.status === "error" || result.status === "denied" ? result.code : result.status);
const reasonOf = (result: InvokeResult) => (result.status === "error" ? result.details?.["reason"] : undefined);
const leaks = (result: unknown) => Object.values(SECRETS).filter((secret) => JSON.stringify(result).includes(secret.split("=").at(-1)!));

describe("the gate's state and secrets are out of every repo tool's reach", () => {
  it("read_file refuses every spelling of the audit key, grants, journal, .env, keys and credentials", async () => {
    const spellings = [
      ...Object.keys(SECRETS),
      "./.toolgate/../.toolgate/audit.key",
      ".toolgate//audit.key",
      "src/../.toolgate/audit.key",
      path.join(repo.root, ".toolgate", "audit.key"),
      ".TOOLGATE/audit.key",
      ".Env",
      "var/gate/../gate/vault.key",
    ];
    for (const candidate of spellings) {
      const result = await gate.invoke("repo.read_file", { path: candidate }, call());
      expect(codeOf(result), candidate).toBe("path_escape");
      expect(leaks(result), candidate).toEqual([]);
    }
    const protectedOnly = await gate.invoke("repo.read_file", { path: "var/gate/journal.db-wal" }, call());
    expect(reasonOf(protectedOnly)).toBe("protected");
    const denied = await gate.invoke("repo.read_file", { path: ".toolgate/audit.key" }, call());
    expect(reasonOf(denied)).toBe("denied");
  });

  it("read_file refuses symbolic links and hard links planted in the tree that lead to them", async () => {
    symlinkSync(path.join(repo.root, ".toolgate"), path.join(repo.root, "innocent-dir"));
    symlinkSync(".env", path.join(repo.root, "notes.txt"));
    symlinkSync("var/gate/vault.key", path.join(repo.root, "vault-link"));
    linkSync(path.join(repo.root, "var", "gate", "vault.key"), path.join(repo.root, "hard-vault.txt"));
    // The other way round: a denied name that points at an ordinary file is refused by its name.
    symlinkSync("src/a.txt", path.join(repo.root, ".env.local"));
    for (const candidate of ["innocent-dir/audit.key", "notes.txt", "vault-link", "hard-vault.txt", ".env.local"]) {
      const result = await gate.invoke("repo.read_file", { path: candidate }, call());
      expect(codeOf(result), candidate).toBe("path_escape");
      expect(leaks(result), candidate).toEqual([]);
    }
  });

  it("search leaves out a hard link planted in the tree to the gate's state (read_file refuses it too)", async () => {
    linkSync(path.join(repo.root, "var", "gate", "vault.key"), path.join(repo.root, "src", "hard-vault.txt"));
    const searched = await gate.invoke("repo.search", { pattern: "vault-secret" }, call());
    expect(searched.status === "ok" && searched.output).toMatchObject({ matches: [] });
    expect(leaks(searched)).toEqual([]);
    const inDir = await gate.invoke("repo.search", { pattern: "vault-secret", directory: "src" }, call());
    expect(leaks(inDir)).toEqual([]);
  });

  it("diff leaves out a tracked file replaced in the tree by a hard link to the gate's state", async () => {
    rmSync(path.join(repo.root, "src", "a.txt"));
    linkSync(path.join(repo.root, "var", "gate", "vault.key"), path.join(repo.root, "src", "a.txt"));
    for (const scope of ["unstaged", "head"] as const) {
      const diff = await gate.invoke("repo.diff", { scope }, call());
      const output = diff.status === "ok" ? (diff.output as { diff: string; skipped: number }) : undefined;
      expect(output?.diff, scope).not.toContain("src/a.txt");
      expect(output?.skipped, scope).toBe(2); // and the tracked .env
      expect(leaks(diff), scope).toEqual([]);
    }
  });

  it("list_files, search and status leave them out and say how many", async () => {
    const listed = await gate.invoke("repo.list_files", {}, call());
    expect(listed.status).toBe("ok");
    const files = (listed.status === "ok" ? listed.output : { files: [] }) as { files: string[]; skipped: number };
    expect(files.files.sort()).toEqual(["README.md", "src/a.txt"]);
    expect(files.skipped).toBe(Object.keys(SECRETS).length);
    // The count does not depend on the glob, so a glob cannot probe which names exist.
    const probed = await gate.invoke("repo.list_files", { glob: "*.key" }, call());
    expect(probed.status === "ok" && probed.output).toMatchObject({ files: [], skipped: Object.keys(SECRETS).length });

    for (const pattern of ["secret", AUDIT_KEY, "API_TOKEN"]) {
      const searched = await gate.invoke("repo.search", { pattern }, call());
      expect(searched.status === "ok" && searched.output).toMatchObject({ matches: [], skipped: Object.keys(SECRETS).length });
      expect(leaks(searched)).toEqual([]);
    }
    const inDir = await gate.invoke("repo.search", { pattern: "secret", directory: ".toolgate" }, call());
    expect(codeOf(inDir)).toBe("path_escape");

    const status = await gate.invoke("repo.status", {}, call());
    const entries = status.status === "ok" ? (status.output as { entries: { path: string }[]; skipped: number }) : undefined;
    expect(entries?.entries.map((e) => e.path)).toEqual([]);
    expect(entries?.skipped).toBeGreaterThan(0);
  });

  it("diff leaves out a tracked denied file's change; log refuses its path", async () => {
    repo.write(".env", "API_TOKEN=env-secret-11\n");
    repo.write("src/a.txt", "alpha\nbeta\n");
    for (const scope of ["unstaged", "head"] as const) {
      const diff = await gate.invoke("repo.diff", { scope }, call());
      const output = diff.status === "ok" ? (diff.output as { diff: string; skipped: number }) : undefined;
      expect(output?.diff).toContain("+beta");
      expect(output?.diff).not.toContain(".env");
      expect(output?.skipped).toBe(1);
      expect(leaks(diff)).toEqual([]);
    }
    const named = await gate.invoke("repo.diff", { paths: [".env"] }, call());
    expect(codeOf(named)).toBe("path_escape");
    const log = await gate.invoke("repo.log", { path: ".env" }, call());
    expect(codeOf(log)).toBe("path_escape");
  });

  it("write_file, apply_patch and commit refuse them before any approval: no forged grant, no planted key", async () => {
    for (const target of [".toolgate/grants/apr_forged.json", "var/gate/journal.db", ".env", "deploy/id_rsa", ".ssh/authorized_keys"]) {
      const write = await invokeApproved(gate, "repo.write_file", { path: target, content: "planted\n" });
      expect(codeOf(write), target).toBe("path_escape");
      const patch = await invokeApproved(gate, "repo.apply_patch", { patch: `--- /dev/null\n+++ b/${target}\n@@ -0,0 +1 @@\n+planted\n` });
      expect(codeOf(patch), target).toBe("path_escape");
      expect(exists(path.join(repo.root, target)) && readFileSync(path.join(repo.root, target), "utf8").includes("planted"), target).toBe(false);
    }
    const commit = await invokeApproved(gate, "repo.commit", { message: "leak", paths: [".env"] });
    expect(codeOf(commit)).toBe("path_escape");
    const first = await gate.invoke("repo.write_file", { path: ".toolgate/grants/apr_2.json", content: "{}" }, call());
    expect(first.status).toBe("error"); // refused before a human is even asked
  });
});

describe("the deny list", () => {
  it("drops diff sections by the header's path, quoted names included, and drops a header it cannot read", () => {
    const section = (header: string, body = "@@ -1 +1 @@\n-a\n+b\n") => `${header}\nindex 1..2 100644\n${body}`;
    const diff = [
      section("diff --git a/src/ok.txt b/src/ok.txt"),
      section('diff --git "a/private/we\\"ird\\tname.txt" "b/private/we\\"ird\\tname.txt"'),
      section('diff --git "a/caf\\303\\251/.env" "b/caf\\303\\251/.env"'),
      section("diff --git a/x b/y"),
      section("diff --git a/a b/a b/a b/a"),
    ].join("");
    const seen: string[] = [];
    const { text, skipped } = withoutHiddenFiles(diff, (p) => {
      seen.push(p);
      return p.startsWith("private/") || p.endsWith(".env");
    });
    expect(seen).toEqual(["src/ok.txt", 'private/we"ird\tname.txt', "café/.env", "a b/a"]);
    expect(text).toBe(section("diff --git a/src/ok.txt b/src/ok.txt") + section("diff --git a/a b/a b/a b/a"));
    expect(skipped).toBe(3);
  });

  it("starts a section only at a line's start: a CR or line separator inside a hidden file's line does not open a visible one", () => {
    for (const breaker of ["\r", "\u2028", "\u2029"]) {
      const hidden = `diff --git a/.env b/.env\nindex 1..2 100644\n@@ -1 +1 @@\n-a\n+x${breaker}diff --git a/ok.txt b/ok.txt\n+SECRET=env-secret-11\n`;
      const { text, skipped } = withoutHiddenFiles(hidden, (p) => p === ".env");
      expect(text, JSON.stringify(breaker)).toBe("");
      expect(skipped).toBe(1);
    }
  });

  it("extends the defaults with deny, drops a default only when named exactly, and refuses bad patterns", async () => {
    const family = createRepoTools({ root: repo.root, identity, deny: ["private/", "*.sqlite"], dropDefaultDeny: [".env.*"] });
    const gate2 = gateFor(repo, { deny: ["private/", "*.sqlite"], dropDefaultDeny: [".env.*"] });
    repo.write("private/notes.md", "private\n");
    repo.write("data/app.SQLITE", "db\n");
    for (const candidate of ["private/notes.md", "data/app.SQLITE", ".env", ".toolgate/audit.key"])
      expect(codeOf(await gate2.invoke("repo.read_file", { path: candidate }, call())), candidate).toBe("path_escape");
    expect(codeOf(await gate2.invoke("repo.read_file", { path: ".env.production" }, call()))).toBe("ok");
    expect(family.description).toContain("`private/`");
    expect(family.description).not.toContain("`.env.*`");
    for (const bad of [{ deny: ["../x"] }, { deny: ["/abs"] }, { deny: [""] }, { dropDefaultDeny: [".env*"] }, { deny: "x" as unknown as string[] }])
      expect(() => createRepoTools({ root: repo.root, ...bad }), JSON.stringify(bad)).toThrow(expect.objectContaining({ code: "config_invalid" }));
  });

  it("matches names at any depth, anchored globs from the root, directories with all below, case ignored", () => {
    const rules = compileDeny(["build/secrets"], undefined);
    expect(rules.match("a/b/.env")).toBe(".env");
    expect(rules.match("x/.SSH/config")).toBe(".ssh/");
    expect(rules.match("build/secrets/one.txt")).toBe("build/secrets");
    expect(rules.match("other/build/secrets/one.txt")).toBeUndefined();
    expect(rules.match("src/envelope.ts")).toBeUndefined();
    expect(rules.match(".environment")).toBeUndefined();
    expect(rules.match("README.md")).toBeUndefined();
    expect(rules.patterns.slice(0, DEFAULT_DENY.length)).toEqual([...DEFAULT_DENY]);
  });

  it("is shown in the inventory and therefore the generated docs", () => {
    const family = createRepoTools({ root: repo.root, deny: ["private/"] });
    const inventory = buildInventory(createToolRegistry({ families: [family] }));
    const described = inventory.families.find((f) => f.name === "repo")?.description ?? "";
    for (const pattern of [...DEFAULT_DENY, "private/"]) expect(described).toContain(`\`${pattern}\``);
    const read = inventory.tools.find((t) => t.id === "repo.read_file");
    expect(read?.runtimeIsolation.notes).toContain("denied paths");
  });
});
