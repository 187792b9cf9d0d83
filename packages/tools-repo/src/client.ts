import { lstatSync, realpathSync } from "node:fs";
import { lstat, mkdir, open, readFile, rename, stat, unlink } from "node:fs/promises";
import { randomBytes } from "node:crypto";
import path from "node:path";
import { ToolError, type RuntimeIsolation } from "@toolgate/core";
import { createRootGuard, type RootGuard } from "@toolgate/core/boundary";
import { checkRunner, type CheckRunner } from "./checks.js";
import { compileDeny, hiddenPath, type DenyRules } from "./deny.js";
import { createGitRunner, type GitIdentity, type GitRunner } from "./git.js";
import { DEFAULT_LIMITS, type RepoLimits, type RepoToolsOptions } from "./options.js";
import { resolveRepoPath, type RepoPath } from "./paths.js";
import { isBinary } from "./text.js";

/** What the reading tools reach: files through the root guard, git through the family's verifier. */
export const readIsolation: RuntimeIsolation = {
  network: "none",
  filesystem: "read-root",
  secrets: "none",
  subprocess: "verifier",
  notes:
    "git runs through the family's verifier with hooks, pager, fsmonitor, external diff and textconv drivers off; denied paths and the gate's state are refused, or left out of listings",
};

/** What the writing tools reach: files written through the root guard, never under `.git`. */
export const writeIsolation: RuntimeIsolation = {
  network: "none",
  filesystem: "write-root",
  secrets: "none",
  subprocess: "verifier",
  notes: "writes go through resolveWithinRoot; nothing under .git, a denied path or the gate's state is ever written",
};

/** What every tool of the family shares. Built once by `createRepoTools`. */
export interface RepoRuntime {
  readonly guard: RootGuard;
  readonly gitDir: string;
  readonly git: GitRunner;
  readonly limits: RepoLimits;
  readonly checks: CheckRunner | undefined;
  readonly deny: DenyRules;
  /** Whether a root-relative name git reported is denied or protected (left out of listings). */
  hidden(relative: string): boolean;
  resolve(candidate: string, options?: { allowMissing?: boolean }): Promise<RepoPath>;
  /** The current text of a file, or null when it does not exist. Refuses directories, binary and over-large files. */
  readText(file: RepoPath, signal: AbortSignal): Promise<string | null>;
  /** Write atomically (temporary file and rename in the same directory); parents created inside the root. */
  writeText(file: RepoPath, text: string): Promise<void>;
  remove(file: RepoPath): Promise<void>;
}

export function createRepoRuntime(options: RepoToolsOptions): RepoRuntime {
  if (!options || typeof options.root !== "string") throw new ToolError("config_invalid", "createRepoTools needs { root }");
  const limits = { ...DEFAULT_LIMITS, ...(options.limits ?? {}) };
  for (const [name, value] of Object.entries(limits)) {
    if (!Number.isSafeInteger(value) || value <= 0) throw new ToolError("config_invalid", `repo limit ${name} must be a positive integer`);
  }
  const guard = createRootGuard(options.root);
  const gitDir = findGitDir(guard.root, options.gitDir);
  const deny = compileDeny(options.deny, options.dropDefaultDeny);
  const git = createGitRunner({
    root: guard.root,
    gitDir,
    maxLogEntries: limits.maxLogEntries,
    maxPaths: limits.maxPaths,
    timeoutMs: limits.gitTimeoutMs,
    maxOutputBytes: Math.max(limits.maxDiffBytes, limits.maxListedFiles * 512, limits.maxSearchMatches * 1024) + 1024,
    ...(options.gitVerifier ? { verifier: options.gitVerifier } : {}),
    ...(options.sandbox === undefined ? {} : { sandbox: options.sandbox }),
    ...(options.identity ? { identity: checkIdentity(options.identity) } : {}),
  });

  const resolve = (candidate: string, resolveOptions: { allowMissing?: boolean } = {}) => resolveRepoPath(guard, gitDir, deny, candidate, resolveOptions);

  const readText = async (file: RepoPath, signal: AbortSignal): Promise<string | null> => {
    let info;
    try {
      info = await stat(file.absolute);
    } catch (cause) {
      if ((cause as { code?: string }).code === "ENOENT") return null;
      throw cause;
    }
    if (!info.isFile()) throw new ToolError("invalid_input", `${JSON.stringify(file.relative)} is not a regular file`);
    if (info.size > limits.maxFileBytes) {
      throw new ToolError("limit_exceeded", `${JSON.stringify(file.relative)} is ${info.size} bytes; the limit is ${limits.maxFileBytes}`, {
        details: { bytes: info.size, limit: limits.maxFileBytes },
      });
    }
    const bytes = await readFile(file.absolute, { signal });
    if (bytes.length > limits.maxFileBytes) throw new ToolError("limit_exceeded", `${JSON.stringify(file.relative)} grew past ${limits.maxFileBytes} bytes`);
    if (isBinary(bytes)) throw new ToolError("invalid_input", `${JSON.stringify(file.relative)} is a binary file`, { details: { reason: "binary" } });
    return bytes.toString("utf8");
  };

  const writeText = async (file: RepoPath, text: string): Promise<void> => {
    const dir = path.dirname(file.absolute);
    await mkdir(dir, { recursive: true });
    // The directory was resolved inside the root, and only missing names were created under it.
    const again = await resolve(path.relative(guard.root, file.absolute) || ".", { allowMissing: true });
    if (again.absolute !== file.absolute) throw new ToolError("path_escape", `${JSON.stringify(file.relative)} changed while it was being written`);
    let mode = 0o644;
    try {
      const existing = await lstat(file.absolute);
      if (!existing.isFile()) throw new ToolError("invalid_input", `${JSON.stringify(file.relative)} is not a regular file`);
      mode = existing.mode & 0o777;
    } catch (cause) {
      if (ToolError.is(cause)) throw cause;
    }
    const temporary = path.join(dir, `.toolgate-${randomBytes(8).toString("hex")}.tmp`);
    const handle = await open(temporary, "wx", mode);
    try {
      try {
        await handle.writeFile(text, "utf8");
        await handle.sync();
      } finally {
        await handle.close();
      }
      await rename(temporary, file.absolute);
    } catch (cause) {
      await unlink(temporary).catch(() => undefined);
      throw cause;
    }
  };

  const remove = async (file: RepoPath): Promise<void> => {
    const info = await lstat(file.absolute);
    if (!info.isFile()) throw new ToolError("invalid_input", `${JSON.stringify(file.relative)} is not a regular file`);
    await unlink(file.absolute);
  };

  const hidden = (relative: string) => relative.split("/").some((s) => s.toLowerCase() === ".git") || hiddenPath(deny, guard.root, relative);
  const checks = checkRunner(options, guard.root, limits, deny);
  return { guard, gitDir, git, limits, checks, deny, hidden, resolve, readText, writeText, remove };
}

function findGitDir(root: string, given: string | undefined): string {
  const candidate = given ?? path.join(root, ".git");
  try {
    const info = lstatSync(candidate);
    if (!info.isDirectory()) throw new Error("not a directory");
    return realpathSync.native(candidate);
  } catch (cause) {
    throw new ToolError(
      "config_invalid",
      given === undefined ? "the repository root has no .git directory (for a linked worktree, pass gitDir)" : "gitDir is not a directory",
      { cause },
    );
  }
}

function checkIdentity(identity: GitIdentity): GitIdentity {
  const ok = (v: unknown) => typeof v === "string" && v.length > 0 && v.length <= 256 && !/[\0\n<>]/.test(v);
  if (!ok(identity.name) || !ok(identity.email))
    throw new ToolError("config_invalid", "identity needs a name and an email without NUL, newline or angle brackets");
  return identity;
}
