import { existsSync } from "node:fs";
import { link, mkdir, mkdtemp, realpath, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ToolError } from "../errors.js";
import { isProtectedPath, protectedPaths, protectPath } from "./protected-paths.js";
import { createRootGuard, resolveWithinRoot } from "./resolve-within-root.js";
import { createVerifier } from "./verifier.js";

let base: string;
let root: string;
let state: string; // a state directory inside the root, protected
let journal: string; // a journal file protected before it (or its -wal) exists
let elsewhere: string; // a state directory configured somewhere else inside the root

async function refusal(promise: Promise<unknown>): Promise<{ code: string; reason: unknown; message: string }> {
  try {
    await promise;
  } catch (error) {
    if (!ToolError.is(error)) throw error;
    return { code: error.code, reason: error.details?.["reason"], message: error.message };
  }
  return { code: "resolved", reason: undefined, message: "" };
}

beforeAll(async () => {
  base = await realpath(await mkdtemp(path.join(tmpdir(), "toolgate-protected-")));
  root = path.join(base, "repo");
  state = path.join(root, ".toolgate");
  elsewhere = path.join(root, "config", "gate-state");
  await mkdir(path.join(state, "grants"), { recursive: true });
  await mkdir(elsewhere, { recursive: true });
  await writeFile(path.join(state, "audit.key"), "k".repeat(64));
  await writeFile(path.join(state, "grants", "apr_1.json"), "{}");
  await writeFile(path.join(elsewhere, "vault.key"), "v".repeat(64));
  await writeFile(path.join(root, "README.md"), "hello");
  await mkdir(path.join(root, ".toolgate-other"));
  await writeFile(path.join(root, ".toolgate-other", "free.txt"), "free");
  journal = path.join(root, "db", "journal.db");
  protectPath(state);
  protectPath(elsewhere);
  // Protected before it exists, spelled through a `..`: the registry normalises.
  protectPath(path.join(root, "db", "x", "..", "journal.db"));
  protectPath(`${journal}-wal`);
});
afterAll(() => rm(base, { recursive: true, force: true }));

describe("protected paths", () => {
  it("refuses every spelling of the state directory and what is in it, existing or not", async () => {
    const spellings = [
      ".toolgate/audit.key",
      "./.toolgate/../.toolgate/audit.key",
      ".toolgate//audit.key",
      ".toolgate/./audit.key",
      "README.md/../.toolgate/audit.key",
      ".toolgate",
      ".toolgate/",
      ".toolgate/grants/apr_1.json",
      path.join(state, "audit.key"),
      "config/gate-state/vault.key",
      "config/../config/gate-state",
    ];
    for (const candidate of spellings) {
      const result = await refusal(resolveWithinRoot(root, candidate));
      expect(result, candidate).toMatchObject({ code: "path_escape", reason: "protected" });
      // The refusal never says where the state lives beyond what was asked.
      expect(result.message.replace(JSON.stringify(candidate), "")).not.toContain(root);
    }
    // Writes: a name that does not exist yet, under the state dir or as the journal and its sidecars.
    for (const candidate of [".toolgate/grants/apr_forged.json", ".toolgate/new/deeper.txt", "db/journal.db", "db/journal.db-wal"]) {
      expect(await refusal(resolveWithinRoot(root, candidate, { allowMissing: true })), candidate).toMatchObject({ reason: "protected" });
    }
    // Missing and protected is `path_escape`, not `not_found`: nothing is said about what exists there.
    expect(await refusal(resolveWithinRoot(root, ".toolgate/nothing-here"))).toMatchObject({ code: "path_escape", reason: "protected" });
  });

  it("refuses the protected file once it exists, and its write-ahead log created later", async () => {
    await mkdir(path.dirname(journal), { recursive: true });
    await writeFile(journal, "sqlite");
    await writeFile(`${journal}-wal`, "wal");
    for (const candidate of ["db/journal.db", "db/journal.db-wal", "./db/../db/journal.db"])
      expect(await refusal(resolveWithinRoot(root, candidate)), candidate).toMatchObject({ reason: "protected" });
    expect(protectedPaths()).toContain(journal);
  });

  it("follows symbolic links first: a link in the root to the state dir or a file in it is refused", async () => {
    await symlink(state, path.join(root, "state-link"));
    await symlink(path.join(state, "audit.key"), path.join(root, "key-link"));
    await symlink("../.toolgate/grants", path.join(root, "config", "grants-link"));
    await symlink(path.join(state, "not-yet"), path.join(root, "dangling-into-state"));
    for (const candidate of ["state-link/audit.key", "state-link", "key-link", "config/grants-link/apr_1.json"])
      expect(await refusal(resolveWithinRoot(root, candidate)), candidate).toMatchObject({ reason: "protected" });
    expect(await refusal(resolveWithinRoot(root, "dangling-into-state", { allowMissing: true }))).toMatchObject({ reason: "protected" });
  });

  it("refuses a hard link to a protected file (same inode), and only that", async () => {
    await link(path.join(state, "audit.key"), path.join(root, "innocent.txt"));
    expect(await refusal(resolveWithinRoot(root, "innocent.txt"))).toMatchObject({ code: "path_escape", reason: "protected" });
    // A file with several links that are all outside the state is still readable.
    await writeFile(path.join(root, "shared-a.txt"), "a");
    await link(path.join(root, "shared-a.txt"), path.join(root, "shared-b.txt"));
    expect(await resolveWithinRoot(root, "shared-b.txt")).toBe(path.join(root, "shared-b.txt"));
  });

  it("leaves neighbours alone: a sibling whose name starts the same is not protected", async () => {
    expect(await resolveWithinRoot(root, ".toolgate-other/free.txt")).toBe(path.join(root, ".toolgate-other", "free.txt"));
    expect(await resolveWithinRoot(root, "README.md")).toBe(path.join(root, "README.md"));
    expect(await resolveWithinRoot(root, ".")).toBe(root);
    expect(isProtectedPath(path.join(root, ".toolgate-other"))).toBe(false);
    expect(isProtectedPath(path.join(state, "grants"))).toBe(true);
  });

  it("holds for a guard made before the path was protected, and for a root that is the state's parent's link", async () => {
    const guard = createRootGuard(root);
    const late = path.join(root, "late-state");
    await mkdir(late);
    await writeFile(path.join(late, "secret"), "s");
    expect(await guard.resolve("late-state/secret")).toBe(path.join(late, "secret"));
    protectPath(late);
    expect(await refusal(guard.resolve("late-state/secret"))).toMatchObject({ reason: "protected" });
    const rootLink = path.join(base, "repo-link");
    await symlink(root, rootLink);
    expect(await refusal(resolveWithinRoot(rootLink, ".toolgate/audit.key"))).toMatchObject({ reason: "protected" });
    // Protected through a symbolic link's spelling: the real place is protected too.
    const viaLink = path.join(rootLink, "linked-state");
    await mkdir(path.join(root, "linked-state"));
    protectPath(viaLink);
    expect(await refusal(resolveWithinRoot(root, "linked-state"))).toMatchObject({ reason: "protected" });
  });

  it("only ever adds: bad input is refused, and the registry cannot be replaced", () => {
    for (const bad of ["relative/path", "", "/a\0b", 42 as unknown as string])
      expect(() => protectPath(bad)).toThrow(expect.objectContaining({ code: "config_invalid" }));
    const key = Symbol.for("@toolgate/core.protected-paths.v1");
    const holder = globalThis as unknown as Record<symbol, unknown>;
    const before = holder[key];
    expect(() => {
      holder[key] = { add() {}, list: () => [] };
    }).toThrow(TypeError);
    expect(holder[key]).toBe(before);
    expect(Object.isFrozen(before)).toBe(true);
    expect(protectedPaths()).toContain(state);
  });
});

const bwrap = ["/usr/bin/bwrap", "/bin/bwrap"].some((p) => existsSync(p));
describe.skipIf(!bwrap && process.env["CI"] === undefined)("protected paths under the sandbox", () => {
  it("hides protected files and directories inside the root from a sandboxed command, and paths `hide` names", async () => {
    await writeFile(path.join(root, ".env"), "TOKEN=hidden-by-hide");
    const look = [
      `const fs = require("fs");`,
      `const seen = (p) => { try { return fs.readFileSync(p, "utf8"); } catch (e) { return e.code; } };`,
      `const list = (p) => { try { return fs.readdirSync(p).join(","); } catch (e) { return e.code; } };`,
      `console.log(JSON.stringify({ key: seen(".toolgate/audit.key"), grants: list(".toolgate/grants"), vault: seen("config/gate-state/vault.key"), journal: seen("db/journal.db"), env: seen(".env"), readme: seen("README.md") }));`,
    ].join("\n");
    const verifier = createVerifier({
      root,
      commands: { look: { argv: [process.execPath, "-e", look] } },
      sandbox: { kind: "bubblewrap", hide: () => [path.join(root, ".env")] },
    });
    const result = await verifier.run({ command: "look" });
    // A hidden directory is an empty tmpfs; a hidden file is /dev/null on a nodev mount, which cannot be opened.
    expect(JSON.parse(result.stdout)).toEqual({ key: "ENOENT", grants: "ENOENT", vault: "ENOENT", journal: "EACCES", env: "EACCES", readme: "hello" });
  });
});
