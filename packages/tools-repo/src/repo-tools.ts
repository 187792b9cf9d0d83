import { defineFamily } from "@toolgate/core";
import { createRepoRuntime } from "./client.js";
import type { RepoToolsOptions } from "./options.js";
import { REPO_PERMISSIONS } from "./permissions.js";
import { applyPatchTool } from "./tools/apply-patch.js";
import { checkTool } from "./tools/check.js";
import { commitTool } from "./tools/commit.js";
import { diffTool } from "./tools/diff.js";
import { listFilesTool } from "./tools/list-files.js";
import { logTool } from "./tools/log.js";
import { readFileTool } from "./tools/read-file.js";
import { searchTool } from "./tools/search.js";
import { statusTool } from "./tools/status.js";
import { writeFileTool } from "./tools/write-file.js";

/**
 * Create the `repo` family: tools that read and change one git working tree.
 *
 * | tool | tokens | effect | approval |
 * |---|---|---|---|
 * | `repo.list_files`, `repo.read_file`, `repo.search`, `repo.status`, `repo.diff`, `repo.log` | `repo:read` | read, untrusted output | never |
 * | `repo.write_file`, `repo.apply_patch` | `repo:write` | write | always; the preview is the unified diff |
 * | `repo.check` (only when `checks` are given) | `repo:check`, `verifier:command` | runs a declared check, sandboxed | each run, unless the check says `approval: "none"` |
 * | `repo.commit` | `repo:commit` | write | always; message, exact paths, diff stat |
 *
 * Safety rules every tool keeps:
 * - Every path goes through `resolveWithinRoot` (symbolic links included), which refuses the
 *   gate's protected state; anything in a `.git` directory or matching the deny list (`deny`,
 *   added to `DEFAULT_DENY`), by name or by where it resolves, is refused with `path_escape`;
 *   listings, search, status and diff leave such paths out and count them in `skipped`; a path
 *   starting with `-` is refused by the input schema.
 * - `repo.check` runs the repository's code in the bubblewrap sandbox (`checkSandbox: "auto"`):
 *   no network, the tree read-only with denied paths hidden, writes only to a scratch copy; without
 *   bubblewrap it refuses unless the operator set `"none"`. Its isolation in the manifest is what
 *   is enforced.
 * - git runs only through a verifier, with argv the family declares (see {@link repoGitCommands}):
 *   no shell; hooks pointed at an empty directory; no pager, fsmonitor, external diff, textconv,
 *   signing, background maintenance or transport; no system or global configuration and a
 *   controlled `HOME`; literal pathspecs after `--`; a search pattern only after `-e`. Status, diff
 *   and commit are refused (`command_denied`) while the repository configures a filter driver,
 *   since git would run its program.
 * - Files are read and written in-process: byte caps, binary detection, line ranges; writes are
 *   atomic (temporary file and rename). Patches are parsed and applied in-process.
 *
 * @throws ToolError `config_invalid` for a root that is not an absolute directory with a `.git`
 *   directory (pass `gitDir` for linked worktrees), bad limits, check names or identity.
 */
export function createRepoTools(options: RepoToolsOptions) {
  const rt = createRepoRuntime(options);
  const reading = [listFilesTool(rt), readFileTool(rt), searchTool(rt), statusTool(rt), diffTool(rt), logTool(rt)] as const;
  const writing = [writeFileTool(rt), applyPatchTool(rt), commitTool(rt)] as const;
  const check = rt.checks ? [checkTool(rt.checks)] : [];
  return defineFamily({
    name: "repo",
    description: `Read and change one git working tree: list, read, search, status, diff, log, write, patch, check, commit. Never reached by any tool (refused, or left out of listings): the gate's own state wherever it is, and paths matching ${rt.deny.patterns.map((p) => `\`${p}\``).join(", ")}.`,
    tools: [...reading, ...writing, ...check],
    permissions: rt.checks ? REPO_PERMISSIONS : REPO_PERMISSIONS.filter((p) => p !== "repo:check"),
  });
}

/** The family `createRepoTools` returns. */
export type RepoToolFamily = ReturnType<typeof createRepoTools>;
