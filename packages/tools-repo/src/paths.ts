import path from "node:path";
import { z } from "zod";
import { ToolError } from "@toolgate/core";
import { type RootGuard } from "@toolgate/core/boundary";
import { refuseDenied, type DenyRules } from "./deny.js";

/** Longest path a tool accepts, in characters. */
export const MAX_PATH_LENGTH = 4096;

/**
 * A path inside the repository as a model may give it. Refused by the schema, before anything is
 * touched: empty, too long, NUL bytes, and anything starting with `-` (it could be read as an option).
 */
export const repoPathSchema = z
  .string()
  .min(1)
  .max(MAX_PATH_LENGTH)
  .refine((p) => !p.includes("\0"), { message: "a path must not contain NUL bytes" })
  .refine((p) => !p.startsWith("-"), { message: "a path must not start with '-'" })
  .meta({ description: "A path relative to the repository root, `/`-separated." });

/** A file or directory inside the root, as the tools use it. */
export interface RepoPath {
  /** The real absolute path (every link resolved), inside the root. */
  readonly absolute: string;
  /** Relative to the real root, `/`-separated; `.` for the root itself. */
  readonly relative: string;
}

const isGitSegment = (segment: string): boolean => segment.toLowerCase() === ".git";

function refuseGitDir(candidate: string): ToolError {
  const shown = candidate.length > 120 ? `${candidate.slice(0, 120)}…` : candidate;
  return new ToolError("path_escape", `path ${JSON.stringify(shown)} is inside the repository's .git directory, which no tool may touch`, {
    details: { reason: "git_dir" },
  });
}

/**
 * Resolve `candidate` inside the root through the guard, refusing anything in a `.git` directory
 * by its spelling or by where it resolves (a link planted in the tree that points into `.git`),
 * and anything the deny list matches, by its spelling or its real path. The guard itself refuses
 * protected paths (the gate's state) wherever they are.
 */
export async function resolveRepoPath(
  guard: RootGuard,
  gitDir: string,
  deny: DenyRules,
  candidate: string,
  options: { allowMissing?: boolean } = {},
): Promise<RepoPath> {
  if (candidate.startsWith("-")) throw new ToolError("command_denied", "a path must not start with '-'", { details: { reason: "option_like_path" } });
  if (candidate.split(/[\\/]+/).some(isGitSegment)) throw refuseGitDir(candidate);
  const spelled = path.relative(guard.root, path.resolve(guard.root, candidate)).split(path.sep).join("/");
  const spelledHit = spelled.startsWith("..") ? undefined : deny.match(spelled);
  if (spelledHit !== undefined) throw refuseDenied(candidate, spelledHit);
  // Resolved as if missing first, so a name under .git is refused as such whether or not it exists.
  const absolute = await guard.resolve(candidate, { allowMissing: true });
  const relative = path.relative(guard.root, absolute).split(path.sep).join("/") || ".";
  if (relative.split("/").some(isGitSegment)) throw refuseGitDir(candidate);
  const realHit = deny.match(relative);
  if (realHit !== undefined) throw refuseDenied(candidate, realHit);
  if (absolute === gitDir || absolute.startsWith(gitDir + path.sep)) throw refuseGitDir(candidate);
  if (options.allowMissing !== true && (await guard.resolve(candidate)) !== absolute)
    throw new ToolError("path_escape", "the path changed while it was being resolved");
  return { absolute, relative };
}

/** A relative path as git receives it after `--`: never empty, never option-like. */
export function gitPathArg(relative: string): string {
  if (relative === ".") return ".";
  return relative.startsWith("-") ? `./${relative}` : relative;
}

/** A list of repository paths: at least one, at most `max`, none repeated. */
export const pathList = (item: z.ZodType<string>, max: number) =>
  z
    .array(item)
    .min(1)
    .max(max)
    .refine((paths) => new Set(paths).size === paths.length, { message: "paths must not repeat" });
