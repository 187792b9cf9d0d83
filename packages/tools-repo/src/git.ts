import { mkdirSync, mkdtempSync, chmodSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { ToolError, type Verifier, type VerifierRunResult } from "@toolgate/core";
import { createVerifier, TRUNCATION_MARKER, type VerifierCommand, type VerifierSandbox } from "@toolgate/core/boundary";

/**
 * Options every git run carries, before the subcommand. Command-line configuration outranks the
 * repository's own `.git/config`, so none of these can be turned back on by the repository.
 */
function safetyOptions(hooksPath: string, gitDir: string, workTree: string): string[] {
  const config = {
    "core.hooksPath": hooksPath,
    "core.fsmonitor": "false",
    "core.pager": "cat",
    "core.untrackedCache": "false",
    "core.quotePath": "false",
    "commit.gpgSign": "false",
    "tag.gpgSign": "false",
    "log.showSignature": "false",
    "gc.auto": "0",
    "maintenance.auto": "false",
    "protocol.allow": "never",
    "submodule.recurse": "false",
    "color.ui": "false",
  };
  return ["--no-pager", `--git-dir=${gitDir}`, `--work-tree=${workTree}`, ...Object.entries(config).flatMap(([key, value]) => ["-c", `${key}=${value}`])];
}

const DIFF_SAFETY = ["--no-ext-diff", "--no-textconv", "--no-color", "--no-renames", "--ignore-submodules=all"] as const;

/** Where git looks for hooks and `HOME`: empty, read-only directories made once per process. */
let emptyDirs: { hooks: string; home: string } | undefined;
function controlledDirs(): { hooks: string; home: string } {
  if (!emptyDirs) {
    const base = mkdtempSync(path.join(tmpdir(), "toolgate-repo-"));
    const hooks = path.join(base, "hooks");
    const home = path.join(base, "home");
    mkdirSync(hooks, { mode: 0o500 });
    mkdirSync(home, { mode: 0o500 });
    chmodSync(base, 0o500);
    emptyDirs = { hooks, home };
  }
  return emptyDirs;
}

/** The git commands the family runs, by name. Each argv is fixed here; a tool only adds paths or one pattern. */
export type GitCommandName =
  | "config_filters"
  | "ls_files"
  | "ls_untracked"
  | "grep_fixed"
  | "grep_fixed_icase"
  | "grep_regex"
  | "grep_regex_icase"
  | "status"
  | "diff_unstaged"
  | "diff_staged"
  | "diff_head"
  | "numstat_head"
  | "head"
  | "log"
  | "add"
  | "commit";

/** Options for {@link repoGitCommands}. */
export interface RepoGitCommandsOptions {
  /** The working tree's real path. */
  readonly root: string;
  /** The repository's git directory; default `<root>/.git`. */
  readonly gitDir: string;
  /** Most commits `git log` returns. */
  readonly maxLogEntries: number;
  /** Most paths one command takes. */
  readonly maxPaths: number;
  /** An empty directory git looks in for hooks; default one the family creates. */
  readonly hooksPath?: string;
}

/**
 * The verifier declarations of every git command the repo family runs: operators who pass their
 * own `gitVerifier` must declare exactly these names (usually by passing this object to
 * `createVerifier` with their own sandbox). Hooks, pagers, external diff and textconv drivers,
 * fsmonitor, signing, background maintenance and every transport are switched off on the command
 * line; paths always follow `--`; a search pattern always follows `-e`.
 */
export function repoGitCommands(options: RepoGitCommandsOptions): Record<GitCommandName, VerifierCommand> {
  const safe = ["git", ...safetyOptions(options.hooksPath ?? controlledDirs().hooks, options.gitDir, options.root)] as const;
  const paths = { max: options.maxPaths };
  const grep = (flags: readonly string[]): VerifierCommand => ({
    argv: [...safe, "grep", "--untracked", "--no-color", "--no-textconv", "-I", "-n", "-z", "--full-name", ...flags, "-e"],
    // Exactly one argument, the pattern, placed after `-e`: git reads it as a pattern even when it starts with `-`.
    args: { max: 1, allowOptions: true },
  });
  return {
    config_filters: { argv: [...safe, "config", "--null", "--name-only", "--get-regexp", "^filter\\..+\\.(clean|smudge|process)$"] },
    ls_files: { argv: [...safe, "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--deduplicate", "--full-name", "--"] },
    ls_untracked: { argv: [...safe, "ls-files", "-z", "--others", "--exclude-standard", "--full-name", "--"], args: paths },
    grep_fixed: grep(["-F"]),
    grep_fixed_icase: grep(["-F", "-i"]),
    grep_regex: grep(["-E"]),
    grep_regex_icase: grep(["-E", "-i"]),
    status: {
      argv: [...safe, "status", "--porcelain=v1", "-z", "--branch", "--untracked-files=all", "--ignore-submodules=all", "--no-renames", "--"],
      args: paths,
    },
    diff_unstaged: { argv: [...safe, "diff", ...DIFF_SAFETY, "--"], args: paths },
    diff_staged: { argv: [...safe, "diff", "--cached", ...DIFF_SAFETY, "--"], args: paths },
    diff_head: { argv: [...safe, "diff", ...DIFF_SAFETY, "HEAD", "--"], args: paths },
    numstat_head: { argv: [...safe, "diff", "--numstat", "-z", ...DIFF_SAFETY, "HEAD", "--"], args: paths },
    head: { argv: [...safe, "rev-parse", "--verify", "--quiet", "HEAD^{commit}"] },
    log: {
      argv: [
        ...safe,
        "log",
        "--no-color",
        "--no-show-signature",
        "--no-mailmap",
        "--no-decorate",
        "-z",
        "--format=%H%x1f%an%x1f%ae%x1f%aI%x1f%s",
        `--max-count=${options.maxLogEntries}`,
        "--",
      ],
      args: { max: 1 },
    },
    add: { argv: [...safe, "add", "--"], args: paths, sandbox: { write: true } },
    commit: {
      argv: [...safe, "commit", "--no-verify", "--no-gpg-sign", "--quiet", "--only", "-m"],
      // The message (after `-m`), then `--`, then the paths: built by the commit tool, never by a model.
      args: { max: options.maxPaths + 2, allowOptions: true },
      sandbox: { write: true },
    },
  };
}

/** The environment of every git run: no system or global configuration, a controlled `HOME`. */
export function repoGitEnv(identity: GitIdentity | undefined): Record<string, string> {
  const { home } = controlledDirs();
  return {
    GIT_CONFIG_NOSYSTEM: "1",
    GIT_CONFIG_GLOBAL: "/dev/null",
    GIT_ATTR_NOSYSTEM: "1",
    HOME: home,
    XDG_CONFIG_HOME: home,
    GIT_TERMINAL_PROMPT: "0",
    GIT_OPTIONAL_LOCKS: "0",
    GIT_LITERAL_PATHSPECS: "1",
    GIT_PAGER: "cat",
    PAGER: "cat",
    LC_ALL: "C",
    ...(identity
      ? { GIT_AUTHOR_NAME: identity.name, GIT_AUTHOR_EMAIL: identity.email, GIT_COMMITTER_NAME: identity.name, GIT_COMMITTER_EMAIL: identity.email }
      : {}),
  };
}

/** Who commits made through the family are by. */
export interface GitIdentity {
  readonly name: string;
  readonly email: string;
}

export interface GitRunOptions {
  readonly signal: AbortSignal;
  /** Relative to the root. */
  readonly cwd?: string;
  /** Exit codes that are not failures; default `[0]`. */
  readonly ok?: readonly number[];
}

/** Runs the family's declared git commands and turns failures into ToolErrors. */
export interface GitRunner {
  run(command: GitCommandName, args: readonly string[], options: GitRunOptions): Promise<VerifierRunResult>;
  /**
   * Refuse (`command_denied`) when the repository's configuration declares a filter driver: git
   * would run its program while reading the working tree (status, diff, add).
   */
  refuseProgramDrivers(signal: AbortSignal): Promise<void>;
}

export interface CreateGitRunnerOptions extends RepoGitCommandsOptions {
  readonly verifier?: Verifier;
  readonly sandbox?: VerifierSandbox;
  readonly identity?: GitIdentity;
  readonly timeoutMs: number;
  readonly maxOutputBytes: number;
}

export function createGitRunner(options: CreateGitRunnerOptions): GitRunner {
  const verifier =
    options.verifier ??
    createVerifier({
      root: options.root,
      commands: repoGitCommands(options),
      timeoutMs: options.timeoutMs,
      maxOutputBytes: options.maxOutputBytes,
      env: { set: repoGitEnv(options.identity) },
      ...(options.sandbox === undefined ? {} : { sandbox: options.sandbox }),
    });

  const run = async (command: GitCommandName, args: readonly string[], runOptions: GitRunOptions): Promise<VerifierRunResult> => {
    const result = await verifier.run({ command, args, signal: runOptions.signal, ...(runOptions.cwd === undefined ? {} : { cwd: runOptions.cwd }) });
    if (result.timedOut) throw new ToolError("timeout", `git ${command} did not finish in time`);
    const ok = runOptions.ok ?? [0];
    if (result.exitCode === null || !ok.includes(result.exitCode)) {
      const reason = firstLine(result.stderr) || (result.signal ? `stopped by ${result.signal}` : `exit code ${String(result.exitCode)}`);
      throw new ToolError("handler_failed", `git ${command.replaceAll("_", " ")} failed: ${reason}`, { details: { exitCode: result.exitCode } });
    }
    return result;
  };

  return {
    run,
    async refuseProgramDrivers(signal) {
      const result = await run("config_filters", [], { signal, ok: [0, 1] });
      const keys = result.stdout.split("\0").filter((k) => k.length > 0);
      if (keys.length > 0) {
        const drivers = [...new Set(keys.map((k) => k.split(".").slice(1, -1).join(".")))];
        throw new ToolError(
          "command_denied",
          `the repository's configuration declares filter driver${drivers.length === 1 ? "" : "s"} ${drivers.map((d) => JSON.stringify(d.slice(0, 64))).join(", ")}, which would run a program; refusing to run git here`,
          {
            details: { reason: "filter_driver" },
          },
        );
      }
    },
  };
}

/** What a cut stream ends with, up to the count of dropped bytes. */
const MARKER_PREFIX = TRUNCATION_MARKER.slice(0, TRUNCATION_MARKER.indexOf("N more"));

function firstLine(text: string): string {
  const line = text.split("\n").find((l) => l.trim().length > 0) ?? "";
  return line.length > 300 ? `${line.slice(0, 300)}…` : line;
}

/** Drop a verifier truncation marker and the partial record before it from `-z` output. */
export function completeRecords(result: VerifierRunResult, separator = "\0"): { records: string[]; truncated: boolean } {
  let text = result.stdout;
  if (result.truncated) {
    const marker = text.lastIndexOf(MARKER_PREFIX);
    if (marker >= 0) text = text.slice(0, marker);
    const last = text.lastIndexOf(separator);
    text = last >= 0 ? text.slice(0, last + 1) : "";
  }
  const records = text.split(separator);
  if (records.at(-1) === "") records.pop();
  return { records, truncated: result.truncated };
}

/** Text output of a run with the verifier's truncation marker removed, cut to `maxBytes`. */
export function cappedText(result: VerifierRunResult, maxBytes: number): { text: string; truncated: boolean } {
  let text = result.stdout;
  let truncated = result.truncated;
  if (truncated) {
    const marker = text.lastIndexOf(MARKER_PREFIX);
    if (marker >= 0) text = text.slice(0, marker + 1);
  }
  const bytes = Buffer.from(text, "utf8");
  if (bytes.length > maxBytes) {
    text = bytes
      .subarray(0, maxBytes)
      .toString("utf8")
      .replace(/\uFFFD$/, "");
    truncated = true;
  }
  return { text, truncated };
}
