import { lstat, mkdir, mkdtemp, readdir, realpath, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ToolError, type ToolErrorCode } from "../errors.js";
import { createRootGuard, resolveWithinRoot, type PathRefusalReason } from "./resolve-within-root.js";

let base: string; // real path of the temp dir holding everything
let root: string; // real path of the root
let rootLink: string; // a symbolic link to the root

async function caught(promise: Promise<unknown>): Promise<ToolError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof ToolError) return error;
    throw new Error(`expected a ToolError, got ${String(error)}`);
  }
  throw new Error("expected a refusal, but the call succeeded");
}

async function expectRefused(candidate: string, reason: PathRefusalReason, options: { allowMissing?: boolean } = {}, givenRoot = root): Promise<ToolError> {
  const error = await caught(resolveWithinRoot(givenRoot, candidate, options));
  expect(error.code).toBe<ToolErrorCode>("path_escape");
  expect(error.details?.["reason"]).toBe(reason);
  // The refusal never tells where the root is or where a link points (beyond what it was given).
  expect(error.message.replace(JSON.stringify(String(candidate).slice(0, 120)), "")).not.toContain(base);
  return error;
}

function inside(p: string, realRoot = root): boolean {
  return p === realRoot || p.startsWith(realRoot + path.sep);
}

beforeAll(async () => {
  base = await realpath(await mkdtemp(path.join(tmpdir(), "toolgate-rwr-")));
  root = path.join(base, "repo");
  await mkdir(path.join(root, "a", "b", "c"), { recursive: true });
  await writeFile(path.join(root, "a", "b", "c", "file.txt"), "deep");
  await writeFile(path.join(root, "a", "file.txt"), "a");
  await writeFile(path.join(root, "notes.txt"), "notes");
  for (const sibling of ["repo-evil", "repo2", "outside"]) {
    await mkdir(path.join(base, sibling), { recursive: true });
    await writeFile(path.join(base, sibling, "x.txt"), "outside data");
  }
  await writeFile(path.join(base, "secret.txt"), "secret");

  const link = (target: string, name: string) => symlink(target, path.join(root, name));
  // inside → inside
  await link("notes.txt", "in-file");
  await link("a/b", "in-dir");
  await link(path.join(root, "a"), "in-abs");
  await link("in-dir", "chain-in");
  await link(".", "self");
  // inside → outside
  await link(path.join(base, "secret.txt"), "out-file-abs");
  await link("../secret.txt", "out-file-rel");
  await link(path.join(base, "outside"), "out-dir-abs");
  await link("../outside", "out-dir-rel");
  await link("chain2", "chain1");
  await link("chain3", "chain2");
  await link("../outside", "chain3");
  await link("in-dir/../../../outside", "chain-dotdot");
  await link("../repo-evil", "sibling");
  await link("..", "parent-link");
  await link("../outside/new.txt", "dangling-out");
  await link("dangling-out", "dangling-chain");
  await link("a/new-via-link.txt", "dangling-in");
  await link("loop2", "loop1");
  await link("loop1", "loop2");
  await symlink("../../outside", path.join(root, "a", "up"));
  await symlink("../c/../../../../outside", path.join(root, "a", "b", "tricky"));
  // the root spelled through a link
  rootLink = path.join(base, "rootlink");
  await symlink(root, rootLink);
});

afterAll(async () => {
  await rm(base, { recursive: true, force: true });
});

describe("resolveWithinRoot refuses", () => {
  it.each([
    "..",
    "../x",
    "a/../../x",
    "./../x",
    "a/b/../../..",
    "a/b/../../../",
    "a/b/c/../../../../notes.txt",
    "..//x",
    ".././x",
    "a/./../../x",
    "a/..//../x",
    "../repo-evil/x.txt",
  ])("the `..` escape %j before touching the filesystem", async (candidate) => {
    await expectRefused(candidate, "outside_root");
    await expectRefused(candidate, "outside_root", { allowMissing: true });
  });

  it("absolute paths outside the root", async () => {
    await expectRefused("/etc/passwd", "outside_root");
    await expectRefused("/", "outside_root");
    await expectRefused(base, "outside_root");
    await expectRefused(path.join(base, "secret.txt"), "outside_root");
    await expectRefused(path.join(root, "..", "secret.txt"), "outside_root");
    await expectRefused(path.join(base, "outside", "new.txt"), "outside_root", { allowMissing: true });
  });

  it("sibling directories that share the root's name as a prefix", async () => {
    for (const sibling of ["repo-evil", "repo2"]) {
      await expectRefused(path.join(base, sibling), "outside_root");
      await expectRefused(path.join(base, sibling, "x.txt"), "outside_root");
      await expectRefused(`${root}${sibling.slice(4)}/x.txt`, "outside_root");
      await expectRefused(`../${sibling}/x.txt`, "outside_root");
    }
    await expectRefused("sibling/x.txt", "symlink_escape");
    await expectRefused("sibling", "symlink_escape");
  });

  it("a link to a file outside, by absolute and by relative target", async () => {
    await expectRefused("out-file-abs", "symlink_escape");
    await expectRefused("out-file-rel", "symlink_escape");
    await expectRefused(path.join(root, "out-file-abs"), "symlink_escape");
  });

  it("a link to a directory outside, by absolute and by relative target, and what lies under it", async () => {
    for (const name of ["out-dir-abs", "out-dir-rel", "parent-link", "a/up"]) {
      await expectRefused(name, "symlink_escape");
      await expectRefused(`${name}/`, "symlink_escape");
      await expectRefused(`${name}/.`, "symlink_escape");
    }
    await expectRefused("out-dir-abs/x.txt", "symlink_escape");
    await expectRefused("out-dir-rel/x.txt", "symlink_escape");
    await expectRefused("a/up/x.txt", "symlink_escape");
    await expectRefused("parent-link/secret.txt", "symlink_escape");
    await expectRefused("parent-link/repo-evil/x.txt", "symlink_escape");
  });

  it("chains of links that end outside", async () => {
    await expectRefused("chain1", "symlink_escape");
    await expectRefused("chain1/x.txt", "symlink_escape");
    await expectRefused("chain2/x.txt", "symlink_escape");
    await expectRefused("chain-dotdot/x.txt", "symlink_escape");
    await expectRefused("a/b/tricky/x.txt", "symlink_escape");
  });

  it("a missing leaf under a parent link that points outside (for writes)", async () => {
    await expectRefused("out-dir-abs/new.txt", "symlink_escape", { allowMissing: true });
    await expectRefused("out-dir-rel/new.txt", "symlink_escape", { allowMissing: true });
    await expectRefused("chain1/new/deeper/file.txt", "symlink_escape", { allowMissing: true });
    await expectRefused("a/up/new.txt", "symlink_escape", { allowMissing: true });
    await expectRefused("parent-link/new.txt", "symlink_escape", { allowMissing: true });
    // …and says nothing about whether it exists there when writes are not allowed either.
    await expectRefused("out-dir-abs/new.txt", "symlink_escape");
    await expectRefused("out-dir-abs/x.txt/below", "symlink_escape", { allowMissing: true });
    await expectRefused("out-dir-abs/x.txt/below", "symlink_escape");
  });

  it("a dangling link whose target would be created outside", async () => {
    await expectRefused("dangling-out", "symlink_escape", { allowMissing: true });
    await expectRefused("dangling-chain", "symlink_escape", { allowMissing: true });
    await expectRefused("dangling-out", "symlink_escape");
  });

  it("NUL bytes anywhere", async () => {
    for (const candidate of ["\0", "notes.txt\0", "a\0/../../etc/passwd", "\0/etc/passwd"]) {
      const error = await expectRefused(candidate, "nul_byte", { allowMissing: true });
      expect(error.message).not.toContain("\0");
    }
  });

  it("empty input, non-strings and overlong input", async () => {
    await expectRefused("", "empty");
    await expectRefused("", "empty", { allowMissing: true });
    for (const value of [undefined, null, 42, ["notes.txt"], { toString: () => "notes.txt" }]) {
      await expectRefused(value as unknown as string, "not_a_string");
    }
    await expectRefused("a/".repeat(3000), "too_long");
  });

  it("a loop of links", async () => {
    await expectRefused("loop1", "unresolvable");
    await expectRefused("loop1/x", "unresolvable", { allowMissing: true });
  });

  it("a root that is a link: escapes are judged against the real root, not the link's place", async () => {
    // `..` from the link's spelling would be `base`; from the real root it is also outside.
    await expectRefused("../secret.txt", "outside_root", {}, rootLink);
    await expectRefused(path.join(rootLink, "..", "secret.txt"), "outside_root", {}, rootLink);
    await expectRefused(path.join(rootLink, "out-dir-abs", "x.txt"), "symlink_escape", {}, rootLink);
    await expectRefused(path.join(base, "repo-evil", "x.txt"), "outside_root", {}, rootLink);
    await expectRefused(`${rootLink}-evil/x.txt`, "outside_root", {}, rootLink);
  });

  it("a root that is relative, missing or a file, as a configuration error", async () => {
    for (const bad of ["repo", "./repo", "", path.join(base, "missing"), path.join(base, "secret.txt"), "/tmp\0/x"]) {
      const error = await caught(resolveWithinRoot(bad, "notes.txt"));
      expect(error.code).toBe<ToolErrorCode>("config_invalid");
      expect(() => createRootGuard(bad)).toThrowError(expect.objectContaining({ code: "config_invalid" }) as Error);
    }
  });

  it("a root that is not a directory as a configuration error, whatever the candidate and however it would be refused", async () => {
    const file = path.join(base, "secret.txt");
    const fileLink = path.join(base, "file-root-link");
    await symlink(file, fileLink);
    for (const givenRoot of [file, fileLink]) {
      for (const candidate of [".", "x", "a/b", "../x", "..", "/etc/passwd", `${file}/x`, "a/../..", "loop1"]) {
        for (const allowMissing of [false, true]) {
          const error = await caught(resolveWithinRoot(givenRoot, candidate, { allowMissing }));
          expect(error.code).toBe<ToolErrorCode>("config_invalid");
        }
      }
    }
  });

  it("a missing path as not_found unless writes are allowed", async () => {
    const error = await caught(resolveWithinRoot(root, "a/nope.txt"));
    expect(error.code).toBe<ToolErrorCode>("not_found");
    const deeper = await caught(resolveWithinRoot(root, "notes.txt/below", { allowMissing: true }));
    expect(deeper.code).toBe<ToolErrorCode>("not_found");
  });
});

describe("resolveWithinRoot allows", () => {
  it("ordinary relative paths, returning the real absolute path", async () => {
    expect(await resolveWithinRoot(root, "notes.txt")).toBe(path.join(root, "notes.txt"));
    expect(await resolveWithinRoot(root, "a/b/c/file.txt")).toBe(path.join(root, "a/b/c/file.txt"));
    expect(await resolveWithinRoot(root, "./a//b/./c/")).toBe(path.join(root, "a/b/c"));
    expect(await resolveWithinRoot(root, ".")).toBe(root);
  });

  it("paths that mention `..` but stay inside", async () => {
    expect(await resolveWithinRoot(root, "a/../notes.txt")).toBe(path.join(root, "notes.txt"));
    expect(await resolveWithinRoot(root, "a/b/c/../../file.txt")).toBe(path.join(root, "a/file.txt"));
    expect(await resolveWithinRoot(root, "a/..")).toBe(root);
    // climbing out by the root's own name and straight back in is inside
    expect(await resolveWithinRoot(root, "../repo/notes.txt")).toBe(path.join(root, "notes.txt"));
    expect(await resolveWithinRoot(root, "a/b/tricky/../../file.txt")).toBe(path.join(root, "a/file.txt"));
  });

  it("links inside the root that point inside, returning where they lead", async () => {
    expect(await resolveWithinRoot(root, "in-file")).toBe(path.join(root, "notes.txt"));
    expect(await resolveWithinRoot(root, "in-dir/c/file.txt")).toBe(path.join(root, "a/b/c/file.txt"));
    expect(await resolveWithinRoot(root, "in-abs/file.txt")).toBe(path.join(root, "a/file.txt"));
    expect(await resolveWithinRoot(root, "chain-in/c")).toBe(path.join(root, "a/b/c"));
    expect(await resolveWithinRoot(root, "self/self/notes.txt")).toBe(path.join(root, "notes.txt"));
  });

  it("absolute paths inside the root, by its real path or by the link's spelling", async () => {
    expect(await resolveWithinRoot(root, path.join(root, "a/file.txt"))).toBe(path.join(root, "a/file.txt"));
    expect(await resolveWithinRoot(rootLink, path.join(rootLink, "a/file.txt"))).toBe(path.join(root, "a/file.txt"));
    expect(await resolveWithinRoot(rootLink, path.join(root, "a/file.txt"))).toBe(path.join(root, "a/file.txt"));
    expect(await resolveWithinRoot(rootLink, "notes.txt")).toBe(path.join(root, "notes.txt"));
  });

  it("missing leaves for writes, under real directories or inside links", async () => {
    expect(await resolveWithinRoot(root, "new.txt", { allowMissing: true })).toBe(path.join(root, "new.txt"));
    expect(await resolveWithinRoot(root, "a/new/deeper/file.txt", { allowMissing: true })).toBe(path.join(root, "a/new/deeper/file.txt"));
    expect(await resolveWithinRoot(root, "in-dir/new.txt", { allowMissing: true })).toBe(path.join(root, "a/b/new.txt"));
    expect(await resolveWithinRoot(root, "dangling-in", { allowMissing: true })).toBe(path.join(root, "a/new-via-link.txt"));
    expect(await resolveWithinRoot(rootLink, "new.txt", { allowMissing: true })).toBe(path.join(root, "new.txt"));
  });

  it("a root re-pointed between calls: each call resolves the root again and confines to where it now leads", async () => {
    const movable = path.join(base, "movable-root");
    const first = path.join(base, "root-first");
    const second = path.join(base, "root-second");
    for (const dir of [first, second]) {
      await mkdir(dir, { recursive: true });
      await writeFile(path.join(dir, "x.txt"), dir);
    }
    await symlink(first, movable);
    expect(await resolveWithinRoot(movable, "x.txt")).toBe(path.join(first, "x.txt"));
    await rm(movable);
    await symlink(second, movable);
    expect(await resolveWithinRoot(movable, "x.txt")).toBe(path.join(second, "x.txt"));
    // The old target, by its real path, is now outside the root.
    await expectRefused(path.join(first, "x.txt"), "outside_root", {}, movable);
    // Replaced by a link that leads outside: what it leads to is the root now, never a way out of it.
    await rm(movable);
    await symlink(path.join(base, "outside"), movable);
    expect(await resolveWithinRoot(movable, "x.txt")).toBe(path.join(base, "outside", "x.txt"));
    await expectRefused("../secret.txt", "outside_root", {}, movable);
  });

  it("refuses by rejecting, never by throwing synchronously", async () => {
    const guard = createRootGuard(root);
    for (const candidate of ["../x", "out-dir-abs/x.txt", "loop1", "\0", 42 as unknown as string]) {
      let pending: Promise<string> | undefined;
      expect(() => (pending = guard.resolve(candidate))).not.toThrow();
      await expect(pending).rejects.toBeInstanceOf(ToolError);
      let direct: Promise<string> | undefined;
      expect(() => (direct = resolveWithinRoot(root, candidate))).not.toThrow();
      await expect(direct).rejects.toBeInstanceOf(ToolError);
    }
  });

  it("a guard resolves the root once and answers the same", async () => {
    const guard = createRootGuard(rootLink);
    expect(guard.root).toBe(root);
    expect(await guard.resolve("in-dir/c/file.txt")).toBe(path.join(root, "a/b/c/file.txt"));
    expect(guard.contains(path.join(root, "x"))).toBe(true);
    expect(guard.contains(`${root}-evil`)).toBe(false);
    expect(guard.contains(path.join(root, "..", "x"))).toBe(false);
    const error = await caught(guard.resolve("out-dir-rel/x.txt"));
    expect(error.code).toBe<ToolErrorCode>("path_escape");
  });
});

// ---------- properties ----------

/** Every existing component from the real root down is a real directory or file, never a link. */
async function holdsNoLinks(realRoot: string, resolved: string): Promise<boolean> {
  const rel = path.relative(realRoot, resolved);
  let current = realRoot;
  for (const name of rel === "" ? [] : rel.split(path.sep)) {
    current = path.join(current, name);
    try {
      if ((await lstat(current)).isSymbolicLink()) return false;
    } catch {
      return true; // the rest is absent
    }
  }
  return true;
}

const fixedSegments = [
  "..",
  ".",
  "",
  "a",
  "b",
  "c",
  "file.txt",
  "notes.txt",
  "new",
  "in-dir",
  "in-file",
  "self",
  "out-dir-abs",
  "out-dir-rel",
  "out-file-rel",
  "chain1",
  "chain-dotdot",
  "sibling",
  "parent-link",
  "dangling-out",
  "dangling-in",
  "up",
  "tricky",
  "loop1",
];

describe("resolveWithinRoot properties", { timeout: 120_000 }, () => {
  it("never returns a path outside the real root, over generated paths on a fixed layout", async () => {
    const seen = { accepted: 0, refused: 0 };
    const prefixes = fc.constantFrom(
      "",
      "",
      "",
      "/",
      () => `${root}/`,
      () => `${rootLink}/`,
      () => `${base}/`,
      () => `${root}-evil/`,
    );
    await fc.assert(
      fc.asyncProperty(
        prefixes,
        fc.array(fc.constantFrom(...fixedSegments), { minLength: 1, maxLength: 9 }),
        fc.boolean(),
        async (prefix, segments, allowMissing) => {
          const head = typeof prefix === "function" ? prefix() : prefix;
          const candidate = head + segments.join("/");
          const givenRoot = head === `${rootLink}/` ? rootLink : root;
          let resolved: string;
          try {
            resolved = await resolveWithinRoot(givenRoot, candidate, { allowMissing });
          } catch (error) {
            expect(ToolError.is(error, "path_escape", "not_found")).toBe(true);
            seen.refused++;
            return;
          }
          seen.accepted++;
          expect(inside(resolved)).toBe(true);
          expect(await holdsNoLinks(root, resolved)).toBe(true);
        },
      ),
      { numRuns: 500 },
    );
    // Both sides were exercised: the property is not passing by refusing everything.
    expect(seen.accepted).toBeGreaterThan(25);
    expect(seen.refused).toBeGreaterThan(25);
  });

  it("accepts every plain path of existing entries and returns it unchanged", async () => {
    const plain = fc.constantFrom("notes.txt", "a", "a/file.txt", "a/b", "a/b/c", "a/b/c/file.txt");
    await fc.assert(
      fc.asyncProperty(plain, fc.array(fc.constantFrom(".", ""), { maxLength: 3 }), async (candidate, noise) => {
        const spelled = [...noise, candidate].join("/");
        const resolved = await resolveWithinRoot(root, spelled.startsWith("/") ? `.${spelled}` : spelled);
        expect(resolved).toBe(path.join(root, candidate));
      }),
    );
  });

  it("never lets a write land outside, over generated link layouts", async () => {
    const dirs = ["", "d0", "d0/d1"];
    const linkTarget = fc.oneof(
      fc.constantFrom(
        "..",
        "../..",
        "../../..",
        "../outside",
        "../../outside",
        "d0",
        "d0/d1",
        "missing",
        "../missing",
        "n0",
        "n1",
        "n2",
        "../n3",
        "d1/../..",
        ".",
      ),
      fc
        .constantFrom("root", "root/d0", "outside", "outside/o0", "base", "root/n1", "root/missing", "outside/missing", "root/d0/../..")
        .map((t) => ({ abs: t })),
    );
    const layout = fc.array(fc.record({ dir: fc.constantFrom(...dirs), target: linkTarget }), { minLength: 1, maxLength: 6 });
    const candidate = fc.array(fc.constantFrom("n0", "n1", "n2", "n3", "n4", "n5", "d0", "d1", "o0", "..", ".", "x", "y"), { minLength: 1, maxLength: 6 });

    const seen = { accepted: 0, written: 0, refused: 0 };
    await fc.assert(
      fc.asyncProperty(layout, fc.array(fc.tuple(candidate, fc.boolean()), { minLength: 1, maxLength: 8 }), async (links, candidates) => {
        const scratch = await realpath(await mkdtemp(path.join(base, "layout-")));
        try {
          const realRoot = path.join(scratch, "root");
          const outside = path.join(scratch, "outside");
          await mkdir(path.join(realRoot, "d0", "d1"), { recursive: true });
          await mkdir(path.join(outside, "o0"), { recursive: true });
          for (const [index, entry] of links.entries()) {
            const target = typeof entry.target === "string" ? entry.target : path.join(scratch, entry.target.abs);
            await symlink(target, path.join(realRoot, entry.dir, `n${index}`));
          }
          const before = await listTree(outside);
          const guardRoot = scratch + "/root";
          for (const [segments, allowMissing] of candidates) {
            let resolved: string;
            try {
              resolved = await resolveWithinRoot(guardRoot, segments.join("/"), { allowMissing });
            } catch (error) {
              expect(ToolError.is(error, "path_escape", "not_found")).toBe(true);
              seen.refused++;
              continue;
            }
            seen.accepted++;
            expect(inside(resolved, realRoot)).toBe(true);
            expect(await holdsNoLinks(realRoot, resolved)).toBe(true);
            // Act on it as a writer would, and prove the write stayed inside.
            const exists = await lstat(resolved).then(
              () => true,
              () => false,
            );
            if (!exists) {
              await mkdir(path.dirname(resolved), { recursive: true });
              await writeFile(resolved, "written", { flag: "wx" });
              seen.written++;
            }
            expect(inside(await realpath(resolved), realRoot)).toBe(true);
          }
          expect(await listTree(outside)).toEqual(before);
        } finally {
          await rm(scratch, { recursive: true, force: true });
        }
      }),
      { numRuns: 150 },
    );
    expect(seen.accepted).toBeGreaterThan(25);
    expect(seen.written).toBeGreaterThan(10);
    expect(seen.refused).toBeGreaterThan(25);
  });
});

async function listTree(dir: string, prefix = ""): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const name = `${prefix}${entry.name}`;
    out.push(name);
    if (entry.isDirectory()) out.push(...(await listTree(path.join(dir, entry.name), `${name}/`)));
  }
  return out.sort();
}
