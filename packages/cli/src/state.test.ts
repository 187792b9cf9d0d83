import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, renameSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { loadConfig } from "./config.js";
import { run } from "./program.js";
import { defaultStateDir } from "./state.js";

const nodeModules = fileURLToPath(new URL("../../../node_modules", import.meta.url));

let base: string;
let project: string;
let xdg: string;
const savedXdg = process.env["XDG_STATE_HOME"];

beforeEach(() => {
  base = realpathSync(mkdtempSync(join(tmpdir(), "toolgate-state-")));
  project = join(base, "project");
  xdg = join(base, "xdg-state");
  mkdirSync(project);
  symlinkSync(nodeModules, join(project, "node_modules"));
  const env = { ...process.env, GIT_CONFIG_NOSYSTEM: "1", GIT_CONFIG_GLOBAL: "/dev/null" };
  execFileSync("git", ["init", "-q", "-b", "main"], { cwd: project, env });
  writeFileSync(join(project, "README.md"), "hello\n");
  process.env["XDG_STATE_HOME"] = xdg;
});
afterEach(() => {
  if (savedXdg === undefined) delete process.env["XDG_STATE_HOME"];
  else process.env["XDG_STATE_HOME"] = savedXdg;
  rmSync(base, { recursive: true, force: true });
});

/** The repository's own shape of composition: the repo family rooted at the project. */
function compose(settings: string, repoOptions = "{}"): void {
  writeFileSync(
    join(project, "toolgate.config.mjs"),
    `import { defineProfile } from "@toolgate/core";
import { createRepoTools } from "@toolgate/tools-repo";
export default {
  ${settings}
  profiles: [
    defineProfile({ name: "reader", allow: ["repo:read"], maxRisk: "low" }),
    defineProfile({ name: "writer", allow: ["repo:read", "repo:write"], maxRisk: "medium" }),
  ],
  compose: ({ baseDir }) => ({ families: [createRepoTools({ root: baseDir, ...${repoOptions} })] }),
};
`,
  );
}

async function toolgate(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = "";
  let err = "";
  const code = await run(argv, { cwd: project, io: { out: (t) => void (out += `${t}\n`), err: (t) => void (err += `${t}\n`), interactive: false } });
  return { code, out, err };
}

const read = (path: string) => toolgate("call", "repo.read_file", "--input", JSON.stringify({ path }), "--profile", "reader");

describe("the gate's state is out of the repo family's reach", () => {
  it("a composition keeping its state in .toolgate/ (the old default) cannot read its audit key, journal or grants", async () => {
    compose(`journal: { sqlite: ".toolgate/journal.db" }, auditKey: { file: ".toolgate/audit.key" },`);
    expect((await toolgate("inventory")).code).toBe(0);
    const key = readFileSync(join(project, ".toolgate", "audit.key"), "utf8").trim();
    expect(key.length).toBeGreaterThanOrEqual(32);
    for (const path of [
      ".toolgate/audit.key",
      "./.toolgate/../.toolgate/audit.key",
      ".toolgate/journal.db",
      ".toolgate/journal.db-wal",
      ".toolgate/journal.db-shm",
      join(project, ".toolgate", "audit.key"),
    ]) {
      const result = await read(path);
      expect(result.code, path).toBe(1);
      expect(result.out, path).toContain("path_escape");
      expect(result.out + result.err, path).not.toContain(key);
    }
  });

  it("protects by construction, not by the deny list: with .toolgate/ dropped from it, and state in another directory of the project", async () => {
    compose(`state: "var/gate-state", vault: { key: { file: "keys/vault-key.txt" } },`, `{ dropDefaultDeny: [".toolgate/", "*.key"] }`);
    mkdirSync(join(project, "keys"));
    writeFileSync(join(project, "keys", "vault-key.txt"), `${"ab".repeat(32)}\n`, { mode: 0o600 });
    expect((await toolgate("inventory")).code).toBe(0);
    const state = join(project, "var", "gate-state");
    expect(readdirSync(state).sort()).toEqual(expect.arrayContaining(["audit.key", "journal.db"]));
    symlinkSync(state, join(project, "innocent"));
    for (const path of [
      "var/gate-state/audit.key",
      "var/gate-state/journal.db",
      "var/gate-state/journal.db-wal",
      "keys/vault-key.txt",
      "innocent/audit.key",
      "var/gate-state/tokens.vault",
    ]) {
      const result = await read(path);
      expect(result.code, path).toBe(1);
      expect(result.out, path).toContain("the gate's own state");
    }
    // Writing a forged grant file into the state's grants directory is refused before any approval.
    const forged = await toolgate(
      "call",
      "repo.write_file",
      "--input",
      JSON.stringify({ path: "var/gate-state/grants/apr_1.json", content: "{}" }),
      "--profile",
      "writer",
    );
    expect(forged.code).toBe(1);
    expect(existsSync(join(state, "grants", "apr_1.json"))).toBe(false);
  });

  it("the console's webhook secret file, kept in the project, is out of every tool's reach", async () => {
    compose(`console: { webhook: { url: "https://chat.example/hook", secret: { file: "keys/hook.secret" } } },`, `{ dropDefaultDeny: ["*.key"] }`);
    mkdirSync(join(project, "keys"));
    const secret = "whsec-".padEnd(48, "q");
    writeFileSync(join(project, "keys", "hook.secret"), `${secret}\n`, { mode: 0o600 });
    expect((await toolgate("inventory")).code).toBe(0);
    const result = await read("keys/hook.secret");
    expect(result.code).toBe(1);
    expect(result.out).toContain("the gate's own state");
    expect(result.out + result.err).not.toContain(secret);
  });

  it("the SQLite store protects its own file and its -wal and -shm wherever the journal is", async () => {
    compose(`journal: { sqlite: "data/journal.sqlite" },`, `{ dropDefaultDeny: [".toolgate/"] }`);
    expect((await toolgate("inventory")).code).toBe(0);
    expect(existsSync(join(project, "data", "journal.sqlite"))).toBe(true);
    for (const path of ["data/journal.sqlite", "data/journal.sqlite-wal", "data/journal.sqlite-shm"]) {
      const result = await read(path);
      expect(result.code, path).toBe(1);
      expect(result.out, path).toContain("the gate's own state");
    }
    const listed = await toolgate("call", "repo.list_files", "--input", "{}", "--profile", "reader");
    expect(listed.out).not.toContain("journal.sqlite");
  });
});

describe("the composition file is the gate's own", () => {
  it("no tool of the composition can read or rewrite it (rewritten, the next CLI run would execute it beside the audit key)", async () => {
    compose("");
    const before = readFileSync(join(project, "toolgate.config.mjs"), "utf8");
    const readIt = await read("toolgate.config.mjs");
    expect(readIt.code).toBe(1);
    expect(readIt.out).toContain("path_escape");
    const write = await toolgate(
      "call",
      "repo.write_file",
      "--input",
      JSON.stringify({ path: "toolgate.config.mjs", content: "export default {};\n" }),
      "--profile",
      "writer",
    );
    expect(write.code).not.toBe(0);
    expect(write.out + write.err).toContain("path_escape");
    expect(readFileSync(join(project, "toolgate.config.mjs"), "utf8")).toBe(before);
  });
});

describe("the state directory", () => {
  it("defaults outside the project, under $XDG_STATE_HOME, 0700, named for the project; inventory prints it", async () => {
    compose("");
    const listed = await toolgate("inventory");
    expect(listed.code).toBe(0);
    const state = defaultStateDir(project);
    expect(state).toMatch(new RegExp(`^${xdg}/toolgate/project-[0-9a-f]{8}$`));
    expect(listed.out).toContain(`state ${state} (protected)`);
    expect(statSync(state).mode & 0o777).toBe(0o700);
    expect(statSync(join(state, "audit.key")).mode & 0o777).toBe(0o600);
    expect(readdirSync(state)).toContain("journal.db");
    expect(existsSync(join(project, ".toolgate"))).toBe(false);
    // The repo family cannot reach it by an absolute path either (it is outside the root anyway).
    expect((await read(join(state, "audit.key"))).out).toContain("path_escape");
  });

  it("keeps two projects of the same name apart, and falls back to ~/.local/state", () => {
    const other = join(base, "elsewhere", "project");
    expect(defaultStateDir(other)).not.toBe(defaultStateDir(project));
    expect(defaultStateDir(project, { HOME: "/home/op" })).toMatch(/^\/home\/op\/\.local\/state\/toolgate\/project-[0-9a-f]{8}$/);
    expect(defaultStateDir(project, { HOME: "/home/op", XDG_STATE_HOME: "relative/ignored" })).toMatch(/^\/home\/op\/\.local\/state\//);
  });

  it("keeps no grant files: approve records the grant in the journal, the retried call finds it there", async () => {
    compose("");
    const input = JSON.stringify({ path: "notes.txt", content: "hi\n" });
    const asked = await toolgate("call", "repo.write_file", "--input", input, "--profile", "writer");
    expect(asked.code).toBe(4);
    const id = /request (apr_[0-9a-f-]+)/.exec(asked.out)![1]!;
    expect((await toolgate("approvals", "approve", id)).code).toBe(0);
    expect(readdirSync(defaultStateDir(project))).not.toContain("grants");
    expect((await toolgate("call", "repo.write_file", "--input", input, "--profile", "writer")).code).toBe(0);
    expect(existsSync(join(project, "notes.txt"))).toBe(true);
  });

  it("is read from toolgate.config.json too, with the vault's file defaulting into it", async () => {
    const file = join(project, "toolgate.config.json");
    writeFileSync(file, JSON.stringify({ families: [], profiles: [], state: "../json-state", vault: { key: { env: "VAULT_KEY" } } }));
    const config = await loadConfig(file);
    expect(config).toMatchObject({ state: "../json-state", vault: { key: { env: "VAULT_KEY" } } });
    expect(config.vault && "file" in config.vault).toBe(false);
    writeFileSync(file, JSON.stringify({ families: [], profiles: [], state: 7 }));
    await expect(loadConfig(file)).rejects.toThrow("state: must be a directory path");
  });

  it("refuses a state setting that is not a path, or a directory it cannot create, as a configuration error", async () => {
    compose(`state: "",`);
    const result = await toolgate("inventory");
    expect(result.code).toBe(3);
    expect(result.err).toContain("state must be a directory path");
    writeFileSync(join(project, "a-file"), "");
    compose(`state: "a-file/state",`);
    // A second file name: an imported composition is cached by its URL.
    renameSync(join(project, "toolgate.config.mjs"), join(project, "blocked.config.mjs"));
    const blocked = await toolgate("--config", "blocked.config.mjs", "inventory");
    expect(blocked.code).toBe(3);
    expect(blocked.err).toContain("could not be created");
  });
});
