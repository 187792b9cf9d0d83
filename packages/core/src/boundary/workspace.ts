import { createHash, randomBytes } from "node:crypto";
import { constants, mkdirSync } from "node:fs";
import { lstat, mkdir, open, readdir, rename, unlink } from "node:fs/promises";
import path from "node:path";
import type { Workspace, WorkspaceRef } from "../context.js";
import { ToolError } from "../errors.js";
import { createRootGuard } from "./resolve-within-root.js";

/** Options for {@link createWorkspace}. */
export interface CreateWorkspaceOptions {
  /**
   * Absolute path of the workspace directory. Created (mode 0700) when missing; may be a symbolic
   * link, which is resolved once.
   */
  readonly root: string;
  /** Most bytes all artifacts together may hold. */
  readonly maxBytes: number;
  /** Most bytes one artifact may hold; default `maxBytes`. */
  readonly maxFileBytes?: number;
  /** Most artifacts the workspace may hold; default 10,000. */
  readonly maxFiles?: number;
}

/** A workspace as {@link createWorkspace} returns it: the gate's `Workspace` and its limits. */
export interface ArtifactWorkspace extends Workspace {
  readonly maxBytes: number;
  readonly maxFileBytes: number;
  readonly maxFiles: number;
}

/** One name segment: letters, digits, `.`, `_`, `-`; not starting with a dot. */
const SEGMENT = /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}$/;
const MAX_NAME_LENGTH = 512;
const MAX_DEPTH = 8;
const READ_NO_FOLLOW = constants.O_RDONLY | constants.O_NOFOLLOW;

/**
 * Create the workspace where tools write run artifacts.
 *
 * Names are relative, `/`-separated, each segment of letters, digits, `.`, `_` and `-` not starting
 * with a dot (so names are safe to print and temporary files never collide with them), at most
 * eight segments deep. Every name also goes through {@link resolveWithinRoot}: a name that would
 * pass through a symbolic link — even one pointing inside — is refused, so an artifact's name is
 * exactly where its bytes are.
 *
 * - `write(name, data)` checks the per-artifact and total limits (counting a replaced artifact's
 *   old size as freed), writes to a temporary file in the same directory, flushes it to disk,
 *   renames it over the name and flushes the directory: a reader sees the old artifact or the new
 *   one, never a part. Writes through one workspace are serialized, so limits hold under
 *   concurrency. Returns the {@link WorkspaceRef} the journal records.
 * - `read(name)` returns an artifact's bytes (`not_found` if absent).
 * - `list()` returns every artifact, sorted by name, with its size and SHA-256, for operators.
 *   Links and temporary files are never listed.
 *
 * @throws ToolError `config_invalid` for a relative root, one that cannot be created, or limits
 *   that are not positive integers.
 * @throws (from its methods) ToolError `path_escape` for a name that is not a contained artifact
 *   name, `limit_exceeded` when a write would break a limit, `not_found` for a missing artifact.
 */
export function createWorkspace(options: CreateWorkspaceOptions): ArtifactWorkspace {
  const { root } = options;
  const maxBytes = positiveInteger(options.maxBytes, "maxBytes");
  const maxFileBytes = positiveInteger(options.maxFileBytes ?? maxBytes, "maxFileBytes");
  const maxFiles = positiveInteger(options.maxFiles ?? 10_000, "maxFiles");
  if (typeof root !== "string" || !path.isAbsolute(root) || root.includes("\0")) {
    throw new ToolError("config_invalid", "the workspace root must be an absolute path");
  }
  try {
    mkdirSync(root, { recursive: true, mode: 0o700 });
  } catch (cause) {
    throw new ToolError("config_invalid", "the workspace root cannot be created", { cause });
  }
  const guard = createRootGuard(root);
  const realRoot = guard.root;
  let queue: Promise<unknown> = Promise.resolve();

  const locate = async (name: string, allowMissing: boolean): Promise<{ name: string; file: string }> => {
    const canonical = checkName(name);
    const expected = path.join(realRoot, ...canonical.split("/"));
    const resolved = await guard.resolve(canonical, { allowMissing });
    if (resolved !== expected) {
      throw new ToolError("path_escape", `artifact name ${JSON.stringify(canonical)} passes through a symbolic link`, { details: { reason: "symlink" } });
    }
    return { name: canonical, file: resolved };
  };

  const write = async (name: string, data: string | Uint8Array): Promise<WorkspaceRef> => {
    if (typeof data !== "string" && !(data instanceof Uint8Array)) throw new ToolError("invalid_input", "artifact data must be a string or a Uint8Array");
    const bytes = typeof data === "string" ? Buffer.from(data, "utf8") : Buffer.from(data.buffer, data.byteOffset, data.byteLength);
    const { name: canonical, file } = await locate(name, true);
    if (bytes.byteLength > maxFileBytes) {
      throw new ToolError("limit_exceeded", `artifact ${JSON.stringify(canonical)} is ${bytes.byteLength} bytes; the limit is ${maxFileBytes}`, {
        details: { limit: "maxFileBytes", max: maxFileBytes, bytes: bytes.byteLength },
      });
    }
    const existing = await scan(realRoot);
    const previous = existing.get(canonical);
    const total = [...existing.values()].reduce((sum, size) => sum + size, 0) - (previous ?? 0) + bytes.byteLength;
    if (total > maxBytes) {
      throw new ToolError("limit_exceeded", `writing ${JSON.stringify(canonical)} would bring the workspace to ${total} bytes; the limit is ${maxBytes}`, {
        details: { limit: "maxBytes", max: maxBytes, bytes: total },
      });
    }
    if (previous === undefined && existing.size + 1 > maxFiles) {
      throw new ToolError("limit_exceeded", `the workspace already holds ${existing.size} artifacts; the limit is ${maxFiles}`, {
        details: { limit: "maxFiles", max: maxFiles },
      });
    }
    if (
      previous === undefined &&
      (await lstat(file).then(
        (info) => !info.isFile(),
        () => false,
      ))
    ) {
      throw new ToolError("conflict", `artifact name ${JSON.stringify(canonical)} is taken by a directory`);
    }
    const dir = path.dirname(file);
    await mkdir(dir, { recursive: true, mode: 0o700 });
    // The directories just made must still be where the name says (nothing re-linked meanwhile).
    await locate(canonical, true);
    const temp = path.join(dir, `.${path.basename(file)}.${randomBytes(6).toString("hex")}.tmp`);
    const handle = await open(temp, "wx", 0o600);
    try {
      await handle.writeFile(bytes);
      await handle.sync();
    } catch (cause) {
      await handle.close().catch(() => undefined);
      await unlink(temp).catch(() => undefined);
      throw cause;
    }
    await handle.close();
    try {
      await rename(temp, file);
    } catch (cause) {
      await unlink(temp).catch(() => undefined);
      throw cause;
    }
    await syncDirectory(dir);
    return { name: canonical, bytes: bytes.byteLength, sha256: createHash("sha256").update(bytes).digest("hex") };
  };

  return {
    root: realRoot,
    maxBytes,
    maxFileBytes,
    maxFiles,
    write(name, data) {
      const next = queue.then(() => write(name, data));
      queue = next.catch(() => undefined);
      return next;
    },
    async read(name) {
      const { name: canonical, file } = await locate(name, false);
      const handle = await open(file, READ_NO_FOLLOW);
      try {
        const info = await handle.stat();
        if (!info.isFile()) throw new ToolError("not_found", `artifact ${JSON.stringify(canonical)} is not a file`);
        if (info.size > maxFileBytes) {
          throw new ToolError("limit_exceeded", `artifact ${JSON.stringify(canonical)} is larger than ${maxFileBytes} bytes`, {
            details: { limit: "maxFileBytes", max: maxFileBytes, bytes: info.size },
          });
        }
        return new Uint8Array(await handle.readFile());
      } finally {
        await handle.close();
      }
    },
    async list() {
      const refs: WorkspaceRef[] = [];
      for (const name of [...(await scan(realRoot)).keys()].sort()) {
        const file = path.join(realRoot, ...name.split("/"));
        const handle = await open(file, READ_NO_FOLLOW).catch(() => undefined);
        if (!handle) continue; // removed while listing
        try {
          const data = await handle.readFile();
          refs.push({ name, bytes: data.byteLength, sha256: createHash("sha256").update(data).digest("hex") });
        } finally {
          await handle.close();
        }
      }
      return refs;
    },
  };
}

function positiveInteger(value: unknown, name: string): number {
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value <= 0) {
    throw new ToolError("config_invalid", `workspace ${name} must be a positive integer`);
  }
  return value;
}

/** Check an artifact name and return its canonical spelling. */
function checkName(name: unknown): string {
  const shown = typeof name === "string" ? ` ${JSON.stringify(name.slice(0, 120).replaceAll("\0", "\\0"))}` : "";
  const refuse = (why: string, reason: string) => new ToolError("path_escape", `artifact name${shown} ${why}`, { details: { reason } });
  if (typeof name !== "string") throw refuse("is not a string", "not_a_string");
  if (name.length === 0) throw refuse("is empty", "empty");
  if (name.includes("\0")) throw refuse("contains a NUL byte", "nul_byte");
  if (name.length > MAX_NAME_LENGTH) throw refuse(`is longer than ${MAX_NAME_LENGTH} characters`, "too_long");
  if (name.startsWith("/")) throw refuse("must be relative to the workspace", "outside_root");
  const segments = name.split("/");
  if (segments.length > MAX_DEPTH) throw refuse(`is deeper than ${MAX_DEPTH} levels`, "too_deep");
  for (const segment of segments) {
    if (segment === "..") throw refuse("must not contain `..`", "outside_root");
    if (!SEGMENT.test(segment))
      throw refuse("must be `/`-separated segments of letters, digits, `.`, `_` and `-`, none empty or starting with a dot", "name_invalid");
  }
  return segments.join("/");
}

/** Artifact names and sizes: regular files only, never following links, skipping dot-entries. */
async function scan(realRoot: string): Promise<Map<string, number>> {
  const found = new Map<string, number>();
  const walk = async (dir: string, prefix: string, depth: number): Promise<void> => {
    for (const entry of await readdir(dir, { withFileTypes: true })) {
      if (entry.name.startsWith(".")) continue;
      const name = `${prefix}${entry.name}`;
      const full = path.join(dir, entry.name);
      if (entry.isDirectory() && depth < MAX_DEPTH) await walk(full, `${name}/`, depth + 1);
      else if (entry.isFile()) {
        const info = await lstat(full).catch(() => undefined);
        if (info?.isFile()) found.set(name, info.size);
      }
    }
  };
  await walk(realRoot, "", 1);
  return found;
}

async function syncDirectory(dir: string): Promise<void> {
  const handle = await open(dir, "r").catch(() => undefined);
  if (!handle) return;
  try {
    await handle.sync();
  } catch {
    // some filesystems cannot flush a directory; the rename itself is still atomic
  } finally {
    await handle.close();
  }
}
