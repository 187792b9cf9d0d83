import type { Verifier } from "@toolgate/core";
import type { VerifierEnv, VerifierSandbox } from "@toolgate/core/boundary";
import type { GitIdentity } from "./git.js";

/** One check an operator declares: a fixed argv the model can only name, never change. */
export interface RepoCheck {
  /** The program and all its arguments, e.g. `["npm", "test"]`. No shell reads it. */
  readonly argv: readonly [string, ...string[]];
  /** Shown to the model in the tool's description. */
  readonly description?: string;
  /** This check's deadline; default `limits.checkTimeoutMs`. */
  readonly timeoutMs?: number;
  /**
   * Under the sandbox: `write: true` runs the check in a scratch copy of the working tree (denied
   * paths left out), discarded after the run; default the tree read-only. Without a sandbox
   * (`sandbox: "none"`) a check writes where it likes.
   */
  readonly sandbox?: {
    readonly write?: boolean;
    /**
     * With `write`: directories of the tree (root-relative, e.g. `["node_modules"]`) the scratch
     * copy links to, read-only, instead of copying them: for large trees the check only reads.
     * Denied paths inside them stay hidden; a denied directory cannot be named here.
     */
    readonly linkReadOnly?: readonly string[];
  };
  /** `"required"` (default): a human approves each run, seeing the argv and the containment. `"none"`: the operator opts this check out. */
  readonly approval?: "required" | "none";
}

/**
 * Where checks run: `"auto"` (default) is bubblewrap when installed and otherwise refuses every
 * run; `{ kind: "auto", bwrapPath }` looks for bwrap there; `"none"` runs the repository's code
 * uncontained, with the user's rights.
 */
export type RepoCheckSandbox = VerifierSandbox | "auto" | { readonly kind: "auto"; readonly bwrapPath?: string };

/** Limits every tool of the family keeps. Each has a default. */
export interface RepoLimits {
  /** Most paths `repo.list_files` returns; default 2,000. */
  readonly maxListedFiles: number;
  /** Largest file `repo.read_file` reads, in bytes; default 4 MiB. Larger files are refused. */
  readonly maxFileBytes: number;
  /** Most bytes of text `repo.read_file` returns per call; default 256 KiB. */
  readonly maxReadBytes: number;
  /** Most matches `repo.search` returns; default 500. */
  readonly maxSearchMatches: number;
  /** Most bytes of a diff returned; default 512 KiB. */
  readonly maxDiffBytes: number;
  /** Most commits `repo.log` returns; default 200. */
  readonly maxLogEntries: number;
  /** Largest content `repo.write_file` writes, and largest patch, in bytes; default 1 MiB. */
  readonly maxWriteBytes: number;
  /** Most files one patch, or one commit, touches; default 100. */
  readonly maxPaths: number;
  /** Deadline of one check; default 120 s. */
  readonly checkTimeoutMs: number;
  /** Most bytes of a check's stdout and of its stderr; default 64 KiB each. */
  readonly maxCheckOutputBytes: number;
  /** Deadline of one git run; default 20 s. */
  readonly gitTimeoutMs: number;
  /** Most entries of the working tree walked, per sandboxed check run, to find denied paths to hide; default 200,000 (more: the run is refused). */
  readonly maxCheckScanEntries: number;
}

/** The limits used where `createRepoTools({ limits })` leaves one out. */
export const DEFAULT_LIMITS: RepoLimits = Object.freeze({
  maxListedFiles: 2000,
  maxFileBytes: 4 * 1024 * 1024,
  maxReadBytes: 256 * 1024,
  maxSearchMatches: 500,
  maxDiffBytes: 512 * 1024,
  maxLogEntries: 200,
  maxWriteBytes: 1024 * 1024,
  maxPaths: 100,
  checkTimeoutMs: 120_000,
  maxCheckOutputBytes: 64 * 1024,
  gitTimeoutMs: 20_000,
  maxCheckScanEntries: 200_000,
});

/** Options for `createRepoTools`. */
export interface RepoToolsOptions {
  /** Absolute path of the working tree (a symbolic link is resolved once). Must hold a `.git` directory unless `gitDir` is given. */
  readonly root: string;
  /**
   * The checks `repo.check` may run, by name: either declarations (the family builds a verifier
   * for them) or the names of commands declared on the gate's own verifier (`createGate({ verifier })`).
   * Without checks, `repo.check` is not part of the family.
   */
  readonly checks?: Readonly<Record<string, RepoCheck>> | readonly string[];
  /** The git directory, for linked worktrees; default `<root>/.git`. */
  readonly gitDir?: string;
  /** Author and committer of commits made through `repo.commit`; default the repository's own configuration. */
  readonly identity?: GitIdentity;
  /** Sandbox for git (default none) and, unless `checkSandbox` is given, for declared checks. */
  readonly sandbox?: VerifierSandbox;
  /** Sandbox for declared checks; default `sandbox` when given, else `"auto"`. See {@link RepoCheckSandbox}. */
  readonly checkSandbox?: RepoCheckSandbox;
  /**
   * Globs of root-relative paths no tool reads, lists, searches, diffs, writes or commits, and no
   * sandboxed check sees, added to `DEFAULT_DENY` (`.git/`, `.toolgate/`, `.env*`, private keys,
   * credential files). A glob without `/` matches a name at any depth; one with `/` is anchored
   * at the root; a match on a directory covers everything under it; case is ignored.
   */
  readonly deny?: readonly string[];
  /** Defaults to drop from `DEFAULT_DENY`, each spelled exactly as there (e.g. `".env.*"`). */
  readonly dropDefaultDeny?: readonly string[];
  /** Environment for declared checks (see `createVerifier`); default only `PATH`. */
  readonly checkEnv?: VerifierEnv;
  /**
   * A verifier declaring every command of `repoGitCommands()`; default one the family builds with
   * `createVerifier`. Only for operators who need their own process settings.
   */
  readonly gitVerifier?: Verifier;
  readonly limits?: Partial<RepoLimits>;
}

/** Largest preview body shown to a human; the preview's details still bind the whole change by hash. */
export const MAX_PREVIEW_BODY_BYTES = 192 * 1024;
