/**
 * How `repo.check` runs the repository's own code: inside the shared bubblewrap sandbox profile by
 * default (no network, no capabilities, the seccomp filter, limits; the working tree read-only with
 * the gate's state and denied paths hidden, writes only to a scratch copy), after a human's
 * approval unless the operator opted a named check out.
 */
import { cp, mkdir, mkdtemp, readdir, rm, stat, symlink } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { ToolError, type RuntimeIsolation, type Verifier, type VerifierRunResult } from "@toolgate/core";
import {
  createVerifier,
  DEFAULT_SANDBOX_READ_ONLY_PATHS,
  type BubblewrapSandbox,
  type CommandVerifier,
  type VerifierCommand,
  type VerifierSandbox,
} from "@toolgate/core/boundary";
import { hiddenPath, isProtectedHardLink, type DenyRules } from "./deny.js";
import type { RepoCheck, RepoCheckSandbox, RepoLimits, RepoToolsOptions } from "./options.js";

const CHECK_NAME = /^[a-z][a-z0-9_-]{0,63}$/;

const isolationOf = (network: string, filesystem: string, notes: string, subprocess: "none" | "verifier" = "verifier"): RuntimeIsolation => ({
  network,
  filesystem,
  secrets: "none",
  subprocess,
  notes,
});

/** What `repo.check` knows about each check and how it runs one. */
export interface CheckRunner {
  readonly names: readonly string[];
  readonly descriptions: Readonly<Record<string, string>>;
  readonly timeoutMs: number;
  /** Whether a human approves each run of this check. */
  needsApproval(name: string): boolean;
  /** The check as a human approves it: its argv (or the gate verifier's name) and where it may write. */
  describe(name: string): { readonly argv: readonly string[] | null; readonly writes: "nothing" | "scratch copy" | "working tree" | "unknown" };
  /** The containment actually enforced, for the manifest and so the inventory and docs. */
  readonly isolation: RuntimeIsolation;
  /** `contained` when every run is sandboxed (or refused), `host` otherwise. */
  readonly containment: "contained" | "host";
  run(name: string, signal: AbortSignal, gateVerifier: Verifier | undefined): Promise<VerifierRunResult>;
}

/** The sandbox checks run under: `auto` finds bubblewrap and refuses every run without it. */
function checkSandbox(options: RepoToolsOptions): { kind: "bubblewrap"; settings: Exclude<VerifierSandbox, "none"> } | { kind: "none" } | { kind: "absent" } {
  const spec: RepoCheckSandbox = options.checkSandbox ?? options.sandbox ?? "auto";
  if (spec === "none") return { kind: "none" };
  if (spec === "auto" || (typeof spec === "object" && spec !== null && spec.kind === "auto")) {
    const bwrapPath = typeof spec === "object" ? spec.bwrapPath : undefined;
    const settings = { kind: "bubblewrap" as const, ...(bwrapPath === undefined ? {} : { bwrapPath }) };
    try {
      createVerifier({ root: tmpdir(), commands: {}, sandbox: settings });
      return { kind: "bubblewrap", settings };
    } catch (cause) {
      if (ToolError.is(cause, "config_invalid")) return { kind: "absent" };
      throw cause;
    }
  }
  return { kind: "bubblewrap", settings: spec as Exclude<VerifierSandbox, "none"> };
}

/** The checks of `createRepoTools({ checks })`, or undefined when there are none. */
export function checkRunner(options: RepoToolsOptions, root: string, limits: RepoLimits, deny: DenyRules): CheckRunner | undefined {
  const declared = options.checks;
  if (declared === undefined) return undefined;
  if (Array.isArray(declared)) return gateChecks(declared as readonly string[], limits);
  const entries = Object.entries(declared as Readonly<Record<string, RepoCheck>>);
  if (entries.length === 0) return undefined;
  const commands: Record<string, VerifierCommand> = {};
  const descriptions: Record<string, string> = {};
  const approval: Record<string, boolean> = {};
  let longest = limits.checkTimeoutMs;
  for (const [name, check] of entries) {
    if (!CHECK_NAME.test(name)) throw new ToolError("config_invalid", `check name ${JSON.stringify(name)} must be a short lower-case word`);
    if (check.approval !== undefined && check.approval !== "required" && check.approval !== "none")
      throw new ToolError("config_invalid", `check ${name}: approval must be "required" or "none"`);
    commands[name] = { argv: check.argv, timeoutMs: check.timeoutMs ?? limits.checkTimeoutMs, ...(check.sandbox ? { sandbox: check.sandbox } : {}) };
    if (check.description) descriptions[name] = check.description;
    approval[name] = check.approval !== "none";
    longest = Math.max(longest, check.timeoutMs ?? 0);
  }
  const writers = entries.filter(([, c]) => c.sandbox?.write === true).map(([n]) => n);
  const linked = Object.fromEntries(entries.map(([n, c]) => [n, linkedDirs(n, c.sandbox?.linkReadOnly, deny)]));
  const sandbox = checkSandbox(options);
  const base = { timeoutMs: limits.checkTimeoutMs, maxOutputBytes: limits.maxCheckOutputBytes, ...(options.checkEnv ? { env: options.checkEnv } : {}) };
  const hidden = () => hiddenUnder(root, deny, limits.maxCheckScanEntries);
  const shared = {
    names: entries.map(([n]) => n),
    descriptions,
    timeoutMs: longest + (writers.length > 0 ? 30_000 : 0),
    needsApproval: (name: string) => approval[name] !== false,
  };
  type Writes = ReturnType<CheckRunner["describe"]>["writes"];
  const runner = (
    writes: (name: string) => Writes,
    containment: CheckRunner["containment"],
    isolation: RuntimeIsolation,
    run: CheckRunner["run"],
  ): CheckRunner => ({
    ...shared,
    describe: (name) => ({ argv: commands[name]?.argv ?? null, writes: writes(name) }),
    containment,
    isolation,
    run,
  });
  const approvalNote = `a human approves each run${Object.values(approval).some((a) => !a) ? ` except of ${shared.names.filter((n) => !approval[n]).join(", ")}` : ""}`;

  if (sandbox.kind === "absent") {
    const why = 'checks run only inside the bubblewrap sandbox, which is not installed here (an operator may set sandbox: "none")';
    const notes = 'bubblewrap is not installed: every check is refused until it is, or until the operator sets sandbox: "none"';
    return runner(
      () => "nothing",
      "contained",
      isolationOf("none", "none", notes, "none"),
      async () => {
        throw new ToolError("command_denied", why, { details: { reason: "no_sandbox" } });
      },
    );
  }

  if (sandbox.kind === "none") {
    const verifier = createVerifier({ root, commands, ...base });
    const notes = `sandbox "none" (the operator's choice): the repository's code runs with the user's rights — network, every file the user can reach, inside the root or not; ${approvalNote}`;
    return runner(
      () => "working tree",
      "host",
      isolationOf("host", "host", notes),
      (name, signal) => verifier.run({ command: name, signal }),
    );
  }

  // Writing checks run in a scratch copy, never through this verifier: in it every check reads only.
  const inPlace = Object.fromEntries(Object.entries(commands).map(([n, c]) => [n, { ...c, sandbox: { ...c.sandbox, write: false } }]));
  const readOnly = createVerifier({ root, commands: inPlace, ...base, sandbox: withHide(sandbox.settings, hidden) });
  // What the sandbox enforces (capabilities, seccomp, limits) in the verifier's words, computed from what it built.
  const enforced = readOnly.isolation;
  const notes = `the working tree read-only, the gate's state and denied paths hidden, a private /tmp${
    writers.length > 0 ? `; ${writers.join(", ")} write to a scratch copy of the tree (denied paths left out), discarded after the run` : ""
  }; ${enforced.notes ?? ""}; ${approvalNote}`;
  return runner(
    (name) => (writers.includes(name) ? "scratch copy" : "nothing"),
    "contained",
    isolationOf(enforced.network, writers.length > 0 ? "scratch-copy" : "read-root", notes),
    async (name, signal) => {
      if (!writers.includes(name)) return readOnly.run({ command: name, signal });
      const links = linked[name] ?? [];
      return inScratchCopy(root, deny, links, signal, scratchLimitBoundary, async (scratch) => {
        const settings = withHide(sandbox.settings, links.length === 0 ? () => [] : hidden);
        const readOnlyPaths = [...(settings.readOnlyPaths ?? DEFAULT_SANDBOX_READ_ONLY_PATHS), ...links.map((l) => path.join(root, l))];
        const verifier: CommandVerifier = createVerifier({
          root: scratch,
          commands: { [name]: commands[name]! },
          ...base,
          sandbox: { ...settings, readOnlyPaths },
        });
        return verifier.run({ command: name, signal });
      });
    },
  );
}

/**
 * A writing check stopped by a limit wrote, at most, to its scratch copy, which is discarded: the
 * tree is untouched, so its effect failed rather than stands unknown.
 */
function scratchLimitBoundary(error: unknown): unknown {
  if (!ToolError.is(error, "limit_exceeded") || error.boundary !== "effect_state_unknown") return error;
  return new ToolError(error.code, error.message, { cause: error, ...(error.details ? { details: error.details } : {}), boundary: "effect_failed" });
}

function withHide(settings: Exclude<VerifierSandbox, "none">, hide: () => Promise<readonly string[]> | readonly string[]): BubblewrapSandbox {
  return typeof settings === "string" ? { kind: "bubblewrap", hide } : { ...settings, hide };
}

function gateChecks(names: readonly string[], limits: RepoLimits): CheckRunner | undefined {
  if (names.length === 0) return undefined;
  for (const name of names)
    if (typeof name !== "string" || !CHECK_NAME.test(name))
      throw new ToolError("config_invalid", `check name ${JSON.stringify(name)} must be a short lower-case word`);
  return {
    names: [...new Set(names)],
    descriptions: {},
    timeoutMs: limits.checkTimeoutMs,
    needsApproval: () => true,
    describe: () => ({ argv: null, writes: "unknown" }),
    containment: "host",
    isolation: isolationOf("host", "host", "runs on the gate's verifier: contained only as far as that verifier is sandboxed; a human approves each run"),
    run: async (name, signal, gateVerifier) => {
      if (!gateVerifier) throw new ToolError("command_denied", "the gate has no verifier to run checks with", { details: { reason: "no_verifier" } });
      return gateVerifier.run({ command: name, signal });
    },
  };
}

/**
 * Every denied or protected path under the root, found by walking it (links are not followed; a
 * hidden directory is not entered). Fails closed past `maxEntries`.
 */
async function hiddenUnder(root: string, deny: DenyRules, maxEntries: number): Promise<string[]> {
  const found: string[] = [];
  let seen = 0;
  const walk = async (relative: string): Promise<void> => {
    const dir = relative === "" ? root : path.join(root, relative);
    let entries;
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch (cause) {
      // A directory the user cannot read is as unreadable inside the sandbox: nothing to hide below it.
      if (["EACCES", "EPERM"].includes((cause as { code?: string }).code ?? "")) return;
      throw cause;
    }
    for (const entry of entries) {
      if (++seen > maxEntries)
        throw new ToolError("limit_exceeded", `the working tree has more than ${maxEntries} entries to check for denied paths (limits.maxCheckScanEntries)`);
      const child = relative === "" ? entry.name : `${relative}/${entry.name}`;
      if (hiddenPath(deny, root, child) || (entry.isFile() && (await isProtectedHardLink(path.join(root, child))))) found.push(path.join(root, child));
      else if (entry.isDirectory()) await walk(child);
    }
  };
  await walk("");
  return found;
}

/** A check's `linkReadOnly` directories, checked: relative, inside the tree, not denied. */
function linkedDirs(name: string, given: readonly string[] | undefined, deny: DenyRules): string[] {
  if (given === undefined) return [];
  if (!Array.isArray(given)) throw new ToolError("config_invalid", `check ${name}: sandbox.linkReadOnly must be an array of directories`);
  return given.map((entry) => {
    const relative = typeof entry === "string" ? path.posix.normalize(entry).replace(/\/+$/, "") : "";
    if (relative === "" || relative === "." || relative.includes("\0") || path.posix.isAbsolute(relative) || relative.split("/").includes(".."))
      throw new ToolError("config_invalid", `check ${name}: linkReadOnly ${JSON.stringify(entry)} must be a directory inside the tree`);
    if (deny.match(relative) !== undefined) throw new ToolError("config_invalid", `check ${name}: linkReadOnly ${JSON.stringify(entry)} is a denied path`);
    return relative;
  });
}

/**
 * Run `body` on a scratch copy of the tree (denied and protected paths left out), removed
 * afterwards; the `links` directories are not copied but linked to the tree's own (bound read-only).
 */
async function inScratchCopy<T>(
  root: string,
  deny: DenyRules,
  links: readonly string[],
  signal: AbortSignal,
  failed: (error: unknown) => unknown,
  body: (scratch: string) => Promise<T>,
): Promise<T> {
  const base = await mkdtemp(path.join(tmpdir(), "toolgate-check-"));
  const scratch = path.join(base, path.basename(root));
  try {
    await cp(root, scratch, {
      recursive: true,
      verbatimSymlinks: true,
      filter: async (source) => {
        const relative = path.relative(root, source).split(path.sep).join("/");
        return relative === "" || (!hiddenPath(deny, root, relative) && !links.includes(relative) && !(await isProtectedHardLink(source)));
      },
    });
    for (const link of links) {
      if (
        !(await stat(path.join(root, link)).then(
          (s) => s.isDirectory(),
          () => false,
        ))
      )
        continue;
      await mkdir(path.dirname(path.join(scratch, link)), { recursive: true });
      await symlink(path.join(root, link), path.join(scratch, link));
    }
    if (signal.aborted) throw new ToolError("cancelled", "the check was cancelled before it started");
    return await body(scratch).catch((error: unknown) => {
      throw failed(error);
    });
  } finally {
    await rm(base, { recursive: true, force: true });
  }
}
