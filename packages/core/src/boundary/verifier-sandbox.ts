/**
 * The verifier on the shared sandbox profile (`sandbox/profile.ts`, which alone builds the
 * bubblewrap arguments): the settings checked once when the verifier is made, each command's
 * limits, each run's launch (the root read-only, or writable for a command that may write; the
 * configured read-only paths; the named Unix sockets; the hidden paths) and the isolation the
 * inventory reports, computed from what the profile built.
 */
import type { RuntimeIsolation } from "../manifest.js";
import { ToolError } from "../errors.js";
import { describeLimits, sandboxIsolation } from "./sandbox/isolation.js";
import { DEFAULT_SANDBOX_LIMITS, sandboxLimits, type SandboxLimits } from "./sandbox/limits.js";
import { DEFAULT_SANDBOX_READ_ONLY_PATHS, findBwrap, sandboxLaunch, type SandboxFacts, type SandboxLaunch } from "./sandbox/profile.js";
import type { BubblewrapSandbox, VerifierSandbox } from "./verifier-options.js";
import path from "node:path";

/** A sandbox ready to use: the bwrap program found, the paths and limits checked. */
export interface PreparedSandbox {
  readonly bwrap: string;
  readonly readOnlyPaths: readonly string[];
  readonly unixSockets: readonly string[];
  /** Every command's limits unless it overrides them; `outputBytes` is the verifier's `maxOutputBytes`. */
  readonly limits: SandboxLimits;
  readonly hide: BubblewrapSandbox["hide"];
}

/** The sandbox as configured; undefined for `"none"`. `config_invalid` for bad settings or a missing bwrap. */
export function prepareSandbox(spec: VerifierSandbox, realRoot: string, maxOutputBytes: number): PreparedSandbox | undefined {
  if (spec === "none") return undefined;
  const settings: BubblewrapSandbox | undefined =
    spec === "bubblewrap" ? { kind: "bubblewrap" } : typeof spec === "object" && spec !== null && spec.kind === "bubblewrap" ? spec : undefined;
  if (settings === undefined) throw new ToolError("config_invalid", `verifier sandbox must be "none" or "bubblewrap"`);
  if (realRoot === path.parse(realRoot).root) throw new ToolError("config_invalid", "a sandboxed verifier cannot use the filesystem root as its root");
  const readOnlyPaths = absolutePaths(settings.readOnlyPaths ?? DEFAULT_SANDBOX_READ_ONLY_PATHS, "sandbox readOnlyPaths");
  const unixSockets = absolutePaths(settings.unixSockets ?? [], "sandbox unixSockets");
  if (settings.hide !== undefined && typeof settings.hide !== "function") throw new ToolError("config_invalid", "sandbox hide must be a function");
  const bwrap = findBwrap('verifier sandbox "bubblewrap"', settings.bwrapPath);
  const limits = { ...verifierLimits(settings.limits, "verifier sandbox", DEFAULT_SANDBOX_LIMITS), outputBytes: maxOutputBytes };
  return { bwrap, readOnlyPaths, unixSockets, limits, hide: settings.hide };
}

/**
 * A command's limits: its overrides laid over the sandbox's. Checked without a sandbox too (a typo
 * is an error wherever it is), though then nothing enforces them.
 */
export function commandLimits(sandbox: PreparedSandbox | undefined, name: string, overrides: Partial<SandboxLimits> | undefined): SandboxLimits | undefined {
  const limits = verifierLimits(overrides, `verifier command ${JSON.stringify(name)}`, sandbox?.limits ?? DEFAULT_SANDBOX_LIMITS);
  return sandbox === undefined ? undefined : limits;
}

function verifierLimits(overrides: Partial<SandboxLimits> | undefined, where: string, base: SandboxLimits): SandboxLimits {
  // One output limit, not two: the verifier cuts each stream at maxOutputBytes.
  if (typeof overrides === "object" && overrides !== null && Object.hasOwn(overrides, "outputBytes")) {
    throw new ToolError("config_invalid", `${where}: limit outputBytes is set with the verifier's maxOutputBytes`);
  }
  return sandboxLimits(overrides, where, base);
}

/** One run of a command: `argv` in `cwd`, with the root writable only when `write`. */
export function launchRun(
  sandbox: PreparedSandbox,
  realRoot: string,
  run: {
    readonly cwd: string;
    readonly write: boolean;
    readonly limits: SandboxLimits;
    readonly hidden: readonly string[];
    readonly env?: Readonly<Record<string, string>>;
  },
  argv: readonly string[],
  who: string,
): SandboxLaunch {
  return sandboxLaunch(
    {
      bwrap: sandbox.bwrap,
      readOnly: run.write ? sandbox.readOnlyPaths : [...sandbox.readOnlyPaths, realRoot],
      writable: run.write ? [realRoot] : [],
      cwd: run.cwd,
      unixSockets: sandbox.unixSockets,
      limits: run.limits,
      hidden: run.hidden,
      env: run.env ?? {},
    },
    argv,
    who,
  );
}

/**
 * What the sandbox enforces for a command, as built: a launch made and finished at once, never
 * spawned (so a bad path or socket is a configuration error when the verifier is made).
 */
export function factsOf(sandbox: PreparedSandbox, realRoot: string, write: boolean, limits: SandboxLimits, who: string): SandboxFacts {
  const launch = launchRun(sandbox, realRoot, { cwd: realRoot, write, limits, hidden: [] }, ["/bin/true"], who);
  launch.finish({ code: 0, signal: null });
  return launch.facts;
}

/**
 * The verifier's isolation in the inventory's words: its read-only commands' sandbox as built, then
 * the root writable for the commands that may write and the limits of each command that sets its own.
 */
export function verifierIsolation(
  base: SandboxFacts | undefined,
  realRoot: string,
  commands: ReadonlyMap<string, { readonly write: boolean; readonly facts: SandboxFacts | undefined }>,
): RuntimeIsolation {
  const what = `verifier commands ${[...commands.keys()].join(", ") || "(none)"}`;
  if (base === undefined) return sandboxIsolation(undefined, what, "verifier", 'sandbox "none"');
  const isolation = sandboxIsolation(base, what, "verifier");
  const writers = [...commands].filter(([, c]) => c.write).map(([n]) => n);
  const own = [...commands].filter(([, c]) => c.facts !== undefined && !sameLimits(c.facts.limits, base.limits));
  return {
    ...isolation,
    filesystem: writers.length === 0 ? isolation.filesystem : `${isolation.filesystem}; writable: ${realRoot} for ${writers.join(", ")}`,
    notes: [isolation.notes, ...own.map(([n, c]) => `${n}: limits ${describeLimits(c.facts!.limits, c.facts!.processesBoundBy)}`)].join("; "),
  };
}

const sameLimits = (a: SandboxLimits, b: SandboxLimits) => (Object.keys(a) as (keyof SandboxLimits)[]).every((k) => a[k] === b[k]);

function absolutePaths(paths: unknown, what: string): readonly string[] {
  if (!Array.isArray(paths)) throw new ToolError("config_invalid", `${what} must be an array of absolute paths`);
  for (const p of paths) {
    if (typeof p !== "string" || !path.isAbsolute(p) || p.includes("\0")) throw new ToolError("config_invalid", `${what} must be absolute paths`);
  }
  return [...(paths as string[])];
}
