import { createHash } from "node:crypto";
import { mkdir, mkdtemp, open, readdir, readFile, realpath, rm, stat, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ToolError, type ToolErrorCode } from "../errors.js";
import { createWorkspace } from "./workspace.js";

let base: string;
let root: string;
let outside: string;

beforeEach(async () => {
  base = await realpath(await mkdtemp(path.join(tmpdir(), "toolgate-ws-")));
  root = path.join(base, "ws");
  outside = path.join(base, "outside");
  await mkdir(outside);
  await writeFile(path.join(outside, "secret.txt"), "outside secret");
});

afterEach(async () => {
  await rm(base, { recursive: true, force: true });
});

async function caught(promise: Promise<unknown>): Promise<ToolError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof ToolError) return error;
    throw new Error(`expected a ToolError, got ${String(error)}`);
  }
  throw new Error("expected a refusal, but the call succeeded");
}

async function tree(dir: string, prefix = ""): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    out.push(`${prefix}${entry.name}`);
    if (entry.isDirectory()) out.push(...(await tree(path.join(dir, entry.name), `${prefix}${entry.name}/`)));
  }
  return out.sort();
}

const sha = (data: string | Uint8Array) => createHash("sha256").update(data).digest("hex");

describe("createWorkspace refuses", () => {
  it.each([
    ["", "empty"],
    ["/etc/passwd", "outside_root"],
    ["../x", "outside_root"],
    ["a/../../x", "outside_root"],
    ["a/..", "outside_root"],
    ["a/./b", "name_invalid"],
    ["a//b", "name_invalid"],
    ["a/", "name_invalid"],
    [".hidden", "name_invalid"],
    ["a/.tmp", "name_invalid"],
    ["a\0b", "nul_byte"],
    ["line\nbreak", "name_invalid"],
    ["with space", "name_invalid"],
    ["back\\slash", "name_invalid"],
    ["a/b/c/d/e/f/g/h/i", "too_deep"],
    ["x".repeat(600), "too_long"],
  ])("the name %j (%s) for writes and reads, creating nothing", async (name, reason) => {
    const ws = createWorkspace({ root, maxBytes: 1000 });
    const error = await caught(ws.write(name, "data"));
    expect(error.code).toBe<ToolErrorCode>("path_escape");
    expect(error.details?.["reason"]).toBe(reason);
    expect((await caught(ws.read(name))).code).toBe<ToolErrorCode>("path_escape");
    expect(await tree(root)).toEqual([]);
    expect(await tree(base)).toEqual(["outside", "outside/secret.txt", "ws"]);
  });

  it("names that pass through a link, outside or even inside, for writes and reads", async () => {
    const ws = createWorkspace({ root, maxBytes: 1000 });
    await mkdir(path.join(root, "real"));
    await symlink(outside, path.join(root, "out"));
    await symlink("real", path.join(root, "alias"));
    await symlink(path.join(outside, "secret.txt"), path.join(root, "leak"));
    await symlink(path.join(outside, "planted.txt"), path.join(root, "dangling"));

    for (const name of ["out/new.txt", "out/secret.txt", "out/deep/new.txt", "leak", "dangling"]) {
      const error = await caught(ws.write(name, "overwrite"));
      expect(error.code).toBe<ToolErrorCode>("path_escape");
    }
    expect((await caught(ws.write("alias/x.txt", "data"))).details?.["reason"]).toBe("symlink");
    expect((await caught(ws.read("leak"))).code).toBe<ToolErrorCode>("path_escape");
    expect((await caught(ws.read("out/secret.txt"))).code).toBe<ToolErrorCode>("path_escape");
    expect(await tree(outside)).toEqual(["secret.txt"]);
    expect(await readFile(path.join(outside, "secret.txt"), "utf8")).toBe("outside secret");
    expect(await tree(path.join(root, "real"))).toEqual([]);
  });

  it("an artifact larger than the per-file limit, leaving nothing behind", async () => {
    const ws = createWorkspace({ root, maxBytes: 1000, maxFileBytes: 10 });
    const error = await caught(ws.write("big.bin", new Uint8Array(11)));
    expect(error.code).toBe<ToolErrorCode>("limit_exceeded");
    expect(error.details).toMatchObject({ limit: "maxFileBytes", max: 10, bytes: 11 });
    // multi-byte characters count as bytes, not characters
    expect((await caught(ws.write("utf8.txt", "ééééééé"))).code).toBe<ToolErrorCode>("limit_exceeded");
    expect(await tree(root)).toEqual([]);
    expect((await ws.write("exact.bin", new Uint8Array(10))).bytes).toBe(10);
  });

  it("a write that would bring the total over the limit, leaving the earlier artifacts intact", async () => {
    const ws = createWorkspace({ root, maxBytes: 100 });
    await ws.write("a.txt", "x".repeat(60));
    const error = await caught(ws.write("b.txt", "y".repeat(41)));
    expect(error.code).toBe<ToolErrorCode>("limit_exceeded");
    expect(error.details).toMatchObject({ limit: "maxBytes", max: 100, bytes: 101 });
    expect((await ws.list()).map((r) => r.name)).toEqual(["a.txt"]);
    expect(await tree(root)).toEqual(["a.txt"]);
    await ws.write("b.txt", "y".repeat(40));
  });

  it("more artifacts than the count limit", async () => {
    const ws = createWorkspace({ root, maxBytes: 1000, maxFiles: 2 });
    await ws.write("one", "1");
    await ws.write("two", "2");
    expect((await caught(ws.write("three", "3"))).code).toBe<ToolErrorCode>("limit_exceeded");
    await ws.write("two", "22"); // replacing is not adding
  });

  it("limits under concurrent writes: the total never exceeds maxBytes", async () => {
    const ws = createWorkspace({ root, maxBytes: 100 });
    const results = await Promise.allSettled(Array.from({ length: 20 }, (_, i) => ws.write(`part-${String(i).padStart(2, "0")}`, "0123456789")));
    const ok = results.filter((r) => r.status === "fulfilled");
    const refused = results.filter((r) => r.status === "rejected");
    expect(ok).toHaveLength(10);
    expect(refused.every((r) => ToolError.is(r.reason, "limit_exceeded"))).toBe(true);
    expect((await ws.list()).reduce((sum, r) => sum + r.bytes, 0)).toBe(100);
  });

  it("counting files placed beside it by someone else toward the total", async () => {
    const ws = createWorkspace({ root, maxBytes: 100 });
    await writeFile(path.join(root, "placed.bin"), new Uint8Array(95));
    expect((await caught(ws.write("mine.txt", "123456"))).code).toBe<ToolErrorCode>("limit_exceeded");
  });

  it("reading an artifact that is missing, or larger than the per-file limit", async () => {
    const ws = createWorkspace({ root, maxBytes: 1000, maxFileBytes: 10 });
    expect((await caught(ws.read("nope.txt"))).code).toBe<ToolErrorCode>("not_found");
    await writeFile(path.join(root, "huge.bin"), new Uint8Array(11));
    expect((await caught(ws.read("huge.bin"))).code).toBe<ToolErrorCode>("limit_exceeded");
  });

  it("data that is neither text nor bytes", async () => {
    const ws = createWorkspace({ root, maxBytes: 1000 });
    for (const data of [42, null, { length: 3 }, [1, 2, 3]]) {
      expect((await caught(ws.write("x.bin", data as unknown as string))).code).toBe<ToolErrorCode>("invalid_input");
    }
    expect(await tree(root)).toEqual([]);
  });

  it("a name taken by a directory", async () => {
    const ws = createWorkspace({ root, maxBytes: 1000 });
    await ws.write("run/out.txt", "x");
    expect((await caught(ws.write("run", "y"))).code).toBe<ToolErrorCode>("conflict");
    expect((await caught(ws.write("run/out.txt/below", "y"))).code).toBe<ToolErrorCode>("not_found");
  });

  it("a bad configuration", () => {
    for (const options of [
      { root: "relative/ws", maxBytes: 10 },
      { root, maxBytes: 0 },
      { root, maxBytes: -1 },
      { root, maxBytes: 1.5 },
      { root, maxBytes: Number.NaN },
      { root, maxBytes: 10, maxFileBytes: 0 },
      { root, maxBytes: 10, maxFiles: 0 },
      { root: path.join(outside, "secret.txt", "ws"), maxBytes: 10 },
    ]) {
      expect(() => createWorkspace(options)).toThrowError(expect.objectContaining({ code: "config_invalid" }) as Error);
    }
  });
});

describe("createWorkspace writes", () => {
  it("artifacts and returns the reference the journal records", async () => {
    const ws = createWorkspace({ root, maxBytes: 1000 });
    const bytes = new Uint8Array([0, 1, 2, 250, 255]);
    const text = await ws.write("report.txt", "héllo");
    const binary = await ws.write("run-1/raw.bin", bytes);
    expect(text).toEqual({ name: "report.txt", bytes: 6, sha256: sha("héllo") });
    expect(binary).toEqual({ name: "run-1/raw.bin", bytes: 5, sha256: sha(bytes) });
    expect(Buffer.from(await ws.read("report.txt")).toString("utf8")).toBe("héllo");
    expect([...(await ws.read("run-1/raw.bin"))]).toEqual([...bytes]);
    expect(await readFile(path.join(root, "run-1", "raw.bin"))).toEqual(Buffer.from(bytes));
    expect((await stat(path.join(root, "report.txt"))).mode & 0o777).toBe(0o600);
  });

  it("a subarray of a larger buffer as just its own bytes", async () => {
    const ws = createWorkspace({ root, maxBytes: 1000 });
    const big = new Uint8Array([9, 9, 1, 2, 3, 9]);
    const ref = await ws.write("slice.bin", big.subarray(2, 5));
    expect(ref.bytes).toBe(3);
    expect([...(await ws.read("slice.bin"))]).toEqual([1, 2, 3]);
  });

  it("atomically: a reader of the old artifact keeps it whole, and no temporary file is left", async () => {
    const ws = createWorkspace({ root, maxBytes: 1000 });
    await ws.write("state.json", "old-content");
    const reader = await open(path.join(root, "state.json"), "r");
    try {
      await ws.write("state.json", "new-content-longer");
      expect((await reader.readFile()).toString("utf8")).toBe("old-content");
    } finally {
      await reader.close();
    }
    expect(await readFile(path.join(root, "state.json"), "utf8")).toBe("new-content-longer");
    expect(await tree(root)).toEqual(["state.json"]);
  });

  it("a listing with sizes and hashes, sorted, without links or temporary files", async () => {
    const ws = createWorkspace({ root, maxBytes: 1000 });
    await ws.write("b.txt", "bbb");
    await ws.write("a/z.txt", "z");
    await ws.write("a/a.txt", "aa");
    await symlink(path.join(outside, "secret.txt"), path.join(root, "leak"));
    await symlink(outside, path.join(root, "leakdir"));
    await writeFile(path.join(root, ".b.txt.0123.tmp"), "partial");
    expect(await ws.list()).toEqual([
      { name: "a/a.txt", bytes: 2, sha256: sha("aa") },
      { name: "a/z.txt", bytes: 1, sha256: sha("z") },
      { name: "b.txt", bytes: 3, sha256: sha("bbb") },
    ]);
  });

  it("under a root that is a link, reporting the real root, creating a missing root", async () => {
    const real = path.join(base, "real-ws");
    await mkdir(real);
    const link = path.join(base, "ws-link");
    await symlink(real, link);
    const ws = createWorkspace({ root: link, maxBytes: 100 });
    expect(ws.root).toBe(real);
    await ws.write("x.txt", "x");
    expect(await readFile(path.join(real, "x.txt"), "utf8")).toBe("x");

    const fresh = createWorkspace({ root: path.join(base, "new", "nested"), maxBytes: 100 });
    expect((await stat(fresh.root)).isDirectory()).toBe(true);
  });
});
