import { lstatSync, readlinkSync, realpathSync, statSync, type Stats } from "node:fs";
import path from "node:path";
import { ToolError } from "../errors.js";
import { isHardLinkToProtected, protectedPathCovering, protectedPaths } from "./protected-paths.js";

/** Options for {@link resolveWithinRoot} and {@link RootGuard.resolve}. */
export interface ResolveWithinRootOptions {
  /**
   * Accept a candidate that does not exist yet (for writes). The nearest existing ancestor is
   * resolved through every symbolic link and must lie inside the root; a dangling link on the way
   * is followed to where it points. The returned path then names only real directories followed by
   * names that do not exist, so creating it cannot land outside the root.
   * Default `false`: a missing candidate is refused with `not_found`.
   */
  readonly allowMissing?: boolean;
}

/** Why a candidate was refused; carried in `ToolError.details.reason`. */
export type PathRefusalReason =
  | "not_a_string"
  | "empty"
  | "nul_byte"
  | "too_long"
  | "outside_root"
  | "symlink_escape"
  | "unresolvable"
  /** At or under a path protected with `protectPath` (the gate's own state), or a hard link to a file there. */
  | "protected";

/**
 * A root resolved once, reused for many candidates. The root's real path is fixed when the guard
 * is created; moving or re-pointing the root afterwards does not move the guard.
 */
export interface RootGuard {
  /** The root's real path (every symbolic link resolved). */
  readonly root: string;
  /** {@link resolveWithinRoot} against this guard's root. */
  resolve(candidate: string, options?: ResolveWithinRootOptions): Promise<string>;
  /** True when `absolutePath`, taken literally, is the root or lies under it (no I/O). */
  contains(absolutePath: string): boolean;
}

/** Longest candidate accepted, in UTF-16 code units; longer ones are refused before any I/O. */
export const MAX_CANDIDATE_LENGTH = 4096;

/** How many dangling symbolic links a missing-leaf resolution follows before giving up. */
const MAX_DANGLING_HOPS = 32;

/**
 * Create a guard for `root`. The root must be an absolute path to an existing directory; it may
 * itself be a symbolic link, which is resolved here, once.
 *
 * @throws ToolError `config_invalid` when the root is relative, missing or not a directory.
 */
export function createRootGuard(root: string): RootGuard {
  const realRoot = resolveRootSync(root);
  return {
    root: realRoot,
    resolve: async (candidate, options) => resolveAgainst(realRoot, root, candidate, options ?? {}),
    contains: (absolutePath) => isInside(realRoot, absolutePath),
  };
}

/**
 * Resolve `candidate` inside `root` and return its real, absolute path — or refuse.
 *
 * This is the only way a tool turns a name it was given into a filesystem path. The root is
 * resolved once per call (it may be a symbolic link); the candidate is resolved through every
 * symbolic link on its way (realpath); the result is compared with the real root by
 * a separator-aware prefix check, so `/srv/repo-evil` is never inside `/srv/repo`.
 *
 * - A relative candidate is taken relative to the root. `..` may appear as long as the path stays
 *   inside (`a/../b`); one that climbs out (`../x`, `a/../../x`, `a/b/../../..`) is refused before
 *   the filesystem is touched. `..` is applied to the spelling before links are followed (as
 *   `path.resolve` does): `link/../x` names `x` in the root wherever `link` points. The returned
 *   path is the real path of what was checked, so callers act on exactly that.
 * - An absolute candidate is accepted only when it names something under the root (by the root's
 *   own spelling or its real path) and still resolves inside; any other absolute path is refused
 *   before the filesystem is touched.
 * - A symbolic link inside the root that points inside is followed; one that points outside
 *   (directly, relatively, or through a chain of links) is refused.
 * - With `allowMissing`, see {@link ResolveWithinRootOptions.allowMissing}.
 *
 * Refusal messages name the candidate (shortened) and the rule it broke, never the root's location
 * or where a link points.
 *
 * A real path at or under a path protected with {@link protectPath} (the gate's journal, keys,
 * vault and grants), or a regular file that is a hard link to one there, is refused with reason
 * `protected`, wherever the root is: after realpath, so a symbolic link to it is caught too.
 *
 * The check is made at call time: a process that can rename or re-link entries inside the root
 * while the caller uses the returned path can still race it, and a hard link or a bind mount
 * inside the root is not a symbolic link and is not seen. Roots must not be writable by anyone the
 * tool is guarding against. POSIX paths only.
 *
 * @returns the real absolute path, inside the real root (the root itself for `"."`).
 * @throws ToolError `path_escape` (with `details.reason`, a {@link PathRefusalReason}) when the
 *   candidate is empty, not a string, contains a NUL byte, is too long, leads outside the root,
 *   is protected, or cannot be resolved (a symbolic-link loop, for instance).
 * @throws ToolError `not_found` when the candidate is inside the root but does not exist and
 *   `allowMissing` is not set.
 * @throws ToolError `config_invalid` when the root is relative, missing or not a directory.
 */
export async function resolveWithinRoot(root: string, candidate: string, options: ResolveWithinRootOptions = {}): Promise<string> {
  checkCandidate(candidate);
  const realRoot = resolveRoot(root);
  let real: string;
  try {
    real = resolveAgainst(realRoot, root, candidate, options);
  } catch (error) {
    // A root that is not a directory is a configuration error, whatever the candidate.
    assertRootIsDirectory(realRoot);
    throw error;
  }
  // A real path strictly below the real root proves the root is a directory; the root itself does not.
  if (real === realRoot) assertRootIsDirectory(realRoot);
  return real;
}

// ---------- internals ----------

function isInside(realRoot: string, absolutePath: string): boolean {
  if (absolutePath === realRoot) return true;
  const prefix = realRoot.endsWith(path.sep) ? realRoot : realRoot + path.sep;
  return absolutePath.startsWith(prefix);
}

function shown(candidate: string): string {
  const short = candidate.length > 120 ? `${candidate.slice(0, 120)}…` : candidate;
  return JSON.stringify(short);
}

function refuse(candidate: unknown, reason: PathRefusalReason, why: string, cause?: unknown): ToolError {
  const name = typeof candidate === "string" ? `path ${shown(candidate)}` : "path";
  return new ToolError("path_escape", `${name} ${why}`, { details: { reason }, ...(cause === undefined ? {} : { cause }) });
}

function checkCandidate(candidate: unknown): asserts candidate is string {
  if (typeof candidate !== "string") throw refuse(candidate, "not_a_string", "is not a string");
  if (candidate.length === 0) throw refuse(candidate, "empty", "is empty");
  if (candidate.includes("\0")) throw refuse(candidate.replaceAll("\0", "\\0"), "nul_byte", "contains a NUL byte");
  if (candidate.length > MAX_CANDIDATE_LENGTH) throw refuse(candidate, "too_long", `is longer than ${MAX_CANDIDATE_LENGTH} characters`);
}

function rootProblem(root: unknown): string | undefined {
  if (typeof root !== "string" || root.length === 0) return "the root must be a non-empty string";
  if (root.includes("\0")) return "the root contains a NUL byte";
  if (!path.isAbsolute(root)) return "the root must be an absolute path";
  return undefined;
}

function resolveRootSync(root: string): string {
  const real = resolveRoot(root);
  assertRootIsDirectory(real);
  return real;
}

/**
 * The root's real path (resolved on every call, never cached: a root re-pointed between calls is
 * followed). Whether it is a directory is checked by `assertRootIsDirectory` only when the answer
 * could depend on it: a candidate that resolved strictly below the real root proves it is one.
 */
function resolveRoot(root: string): string {
  const problem = rootProblem(root);
  if (problem) throw new ToolError("config_invalid", problem);
  try {
    return realpathSync.native(root);
  } catch (cause) {
    throw new ToolError("config_invalid", "the root does not exist or cannot be resolved", { cause });
  }
}

function assertRootIsDirectory(realRoot: string): void {
  let directory: boolean;
  try {
    directory = statSync(realRoot).isDirectory();
  } catch (cause) {
    throw new ToolError("config_invalid", "the root does not exist or cannot be resolved", { cause });
  }
  if (!directory) throw new ToolError("config_invalid", "the root is not a directory");
}

function errnoOf(cause: unknown): string | undefined {
  return typeof cause === "object" && cause !== null && "code" in cause ? String((cause as { code: unknown }).code) : undefined;
}

const MISSING = new Set(["ENOENT", "ENOTDIR"]);

function statQuietly(p: string): Stats | undefined {
  try {
    return statSync(p);
  } catch {
    return undefined;
  }
}

/**
 * The resolution itself, synchronous: `realpathSync.native` and one `statSync` cost a few
 * microseconds on a local filesystem, where each asynchronous call waits for a pool thread (tens
 * of microseconds). The price: the event loop waits for these system calls, which matters only on
 * a slow (network) filesystem.
 */
function resolveAgainst(realRoot: string, givenRoot: string, candidate: string, options: ResolveWithinRootOptions): string {
  checkCandidate(candidate);
  let lexical: string;
  if (path.isAbsolute(candidate)) {
    lexical = path.resolve(candidate);
    if (!isInside(realRoot, lexical)) {
      const spelled = path.resolve(givenRoot);
      if (!isInside(spelled, lexical)) throw refuse(candidate, "outside_root", "is an absolute path outside the root");
    }
  } else {
    lexical = path.resolve(realRoot, candidate);
    if (!isInside(realRoot, lexical)) throw refuse(candidate, "outside_root", "leads outside the root");
  }

  let real: string;
  let missing = false;
  try {
    real = realpathSync.native(lexical);
  } catch (cause) {
    const code = errnoOf(cause);
    if (code === undefined || !MISSING.has(code)) throw refuse(candidate, "unresolvable", `cannot be resolved (${code ?? "error"})`, cause);
    real = resolveMissing(realRoot, lexical, candidate);
    missing = true;
  }
  if (!isInside(realRoot, real)) throw refuse(candidate, "symlink_escape", "resolves through a symbolic link to a place outside the root");
  if (protectedPathCovering(real) !== undefined) throw refuse(candidate, "protected", "is the gate's own state, which no tool may reach");
  // The stat is only for the hard-link check, which matches nothing while nothing is protected.
  const info = missing || protectedPaths().length === 0 ? undefined : statQuietly(real);
  if (info !== undefined && isHardLinkToProtected(info))
    throw refuse(candidate, "protected", "is a hard link to the gate's own state, which no tool may reach");
  if (missing && options.allowMissing !== true) throw new ToolError("not_found", `path ${shown(candidate)} does not exist`);
  return real;
}

/**
 * Resolve a path that does not (fully) exist: the nearest existing ancestor through realpath,
 * dangling links followed, then the missing names appended. Every name appended is absent, so the
 * result holds no link that creating it could follow. An ancestor outside the root is refused at
 * once, before anything is said about what lies below it.
 */
function resolveMissing(realRoot: string, start: string, candidate: string): string {
  /** The parent of `ancestor`, its name put first in `rest`. */
  const climb = (ancestor: string, rest: string[]): string => {
    const parent = path.dirname(ancestor);
    if (parent === ancestor) throw refuse(candidate, "unresolvable", "cannot be resolved");
    rest.unshift(path.basename(ancestor));
    return parent;
  };
  let target = start;
  for (let hop = 0; hop <= MAX_DANGLING_HOPS; hop++) {
    const rest: string[] = [];
    // On the first hop `start` itself has just failed to resolve as missing: its parent is next.
    let ancestor = hop === 0 ? climb(target, rest) : target;
    let realAncestor: string | undefined;
    for (;;) {
      try {
        realAncestor = realpathSync.native(ancestor);
        break;
      } catch (cause) {
        const code = errnoOf(cause);
        if (code === undefined || !MISSING.has(code)) throw refuse(candidate, "unresolvable", `cannot be resolved (${code ?? "error"})`, cause);
        ancestor = climb(ancestor, rest);
      }
    }
    if (!isInside(realRoot, realAncestor)) throw refuse(candidate, "symlink_escape", "resolves through a symbolic link to a place outside the root");
    // The first missing name may still be an entry: a dangling symbolic link. Follow it.
    const first = rest[0];
    if (first === undefined) return realAncestor;
    const entry = path.join(realAncestor, first);
    let link: string;
    try {
      const info = lstatSync(entry, { throwIfNoEntry: false });
      if (info === undefined) return path.join(realAncestor, ...rest);
      // An entry that exists, is not a link, and yet did not resolve: it changed under us.
      if (!info.isSymbolicLink()) throw refuse(candidate, "unresolvable", "cannot be resolved (it changed while being resolved)");
      link = readlinkSync(entry);
    } catch (cause) {
      if (ToolError.is(cause)) throw cause;
      const code = errnoOf(cause);
      if (code === "ENOENT") return path.join(realAncestor, ...rest);
      if (code === "ENOTDIR") throw new ToolError("not_found", `path ${shown(candidate)} does not exist (a parent is not a directory)`);
      throw refuse(candidate, "unresolvable", `cannot be resolved (${code ?? "error"})`, cause);
    }
    target = path.resolve(realAncestor, link, ...rest.slice(1));
  }
  throw refuse(candidate, "unresolvable", "cannot be resolved (too many symbolic links)");
}
