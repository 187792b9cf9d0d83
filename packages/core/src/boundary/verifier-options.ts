/**
 * The verifier's contract: what an operator declares (commands, their arguments, the child's
 * environment, the sandbox) and what `createVerifier` returns.
 */
import type { Verifier } from "../context.js";
import type { RuntimeIsolation } from "../manifest.js";
import type { SandboxLimits } from "./sandbox/limits.js";
import type { SandboxFacts } from "./sandbox/profile.js";

/** The arguments a declared command may take from a tool. Without it, the command takes none. */
export interface VerifierCommandArgs {
  /**
   * Every argument must match this pattern as a whole. A string is compiled as `^(?:pattern)$`;
   * a RegExp is anchored the same way, and its `g`, `y` and `m` flags are dropped (they would make
   * matching stateful or let a newline split an argument). Without a pattern, any argument that
   * the other rules allow passes.
   */
  readonly pattern?: RegExp | string;
  /**
   * Whether an argument may start with `-`. Default `false`: a tool cannot smuggle an option
   * (`--exec=…`, `-o/elsewhere`) into the command. Programs that read other prefixes as options
   * (`+x`, `@file`) need a `pattern`.
   */
  readonly allowOptions?: boolean;
  /** Most arguments a call may pass; default 64. */
  readonly max?: number;
}

/** One operator-declared command. */
export interface VerifierCommand {
  /**
   * The program and its fixed leading arguments, e.g. `["npm", "test", "--"]`. The program is an
   * absolute path or a name looked up on the child's `PATH`; no shell ever reads any of it.
   * Ending the template with `--` keeps the tool's arguments out of option parsing for programs
   * that honour it.
   */
  readonly argv: readonly [string, ...string[]];
  readonly args?: VerifierCommandArgs;
  /**
   * Under a sandbox: whether the command may write to the root (default read-only), and this
   * command's limits, laid over the sandbox's (`outputBytes` excepted: the verifier's
   * `maxOutputBytes` is its output limit). Without a sandbox neither applies.
   */
  readonly sandbox?: { readonly write?: boolean; readonly limits?: Partial<SandboxLimits> };
  /** This command's deadline; default the verifier's `timeoutMs`. */
  readonly timeoutMs?: number;
}

/**
 * The child's environment, built from nothing: `PATH` (the host's unless `set` gives one), the
 * host's values of the names in `pass`, then the values in `set`. Nothing else is inherited.
 */
export interface VerifierEnv {
  readonly pass?: readonly string[];
  readonly set?: Readonly<Record<string, string>>;
}

/** Bubblewrap settings (the shared sandbox profile, see `sandboxLaunch`); `"bubblewrap"` alone means all defaults. */
export interface BubblewrapSandbox {
  readonly kind: "bubblewrap";
  /** The bwrap program (an absolute path); default found on the host's `PATH`, then /usr/bin, /bin. */
  readonly bwrapPath?: string;
  /**
   * Host paths bound read-only into the sandbox, each only where it exists; default
   * `DEFAULT_SANDBOX_READ_ONLY_PATHS` (system programs and libraries, not the host's `/etc`
   * as a whole, nor home directories). Add where a command's tools live elsewhere.
   */
  readonly readOnlyPaths?: readonly string[];
  /**
   * Absolute paths to hide from each run, asked for before every run (a directory is covered by an
   * empty tmpfs, a file by `/dev/null`). Protected paths (`protectPath`) are always hidden.
   */
  readonly hide?: () => readonly string[] | Promise<readonly string[]>;
  /**
   * Every command's limits, laid over `DEFAULT_SANDBOX_LIMITS` (a command may override them). A
   * run that hits one the host can observe (processes and memory through a root host's cgroup, CPU
   * time and file size through the kill signal) rejects with `limit_exceeded`. `outputBytes` is
   * not set here: the verifier's `maxOutputBytes` is its output limit.
   */
  readonly limits?: Partial<SandboxLimits>;
  /**
   * Host Unix sockets the commands may connect to (absolute paths of existing sockets). Without
   * them a command can open no Unix socket at all, even one inside the root.
   */
  readonly unixSockets?: readonly string[];
}

export type VerifierSandbox = "none" | "bubblewrap" | BubblewrapSandbox;

/** Options for `createVerifier`. */
export interface CreateVerifierOptions {
  /** Absolute path of the directory commands run in (a symbolic link is resolved once). */
  readonly root: string;
  /** The commands a tool may run, by name. */
  readonly commands: Readonly<Record<string, VerifierCommand>>;
  /** Deadline per run; default 120 s. */
  readonly timeoutMs?: number;
  /**
   * The verifier's output limit: most bytes kept per stream (stdout, stderr); default 256 KiB.
   * The rest is dropped and the stream ends with `TRUNCATION_MARKER`; the command runs on.
   */
  readonly maxOutputBytes?: number;
  readonly env?: VerifierEnv;
  /** Default `"none"`. */
  readonly sandbox?: VerifierSandbox;
  /** Between SIGTERM and SIGKILL when a run is stopped; default 2 s. */
  readonly killGraceMs?: number;
}

/** A verifier as `createVerifier` returns it. */
export interface CommandVerifier extends Verifier {
  /** The declared command names, for a tool's description or an operator's inventory. */
  readonly commands: readonly string[];
  readonly sandbox: "none" | "bubblewrap";
  /**
   * What the verifier enforces, in the inventory's words (`sandboxIsolation`): computed from the
   * sandbox as built for its commands (the root read-only, or writable for the commands that may
   * write, and each command's limits), or "no sandbox".
   */
  readonly isolation: RuntimeIsolation;
  /** What the sandbox enforces for a declared command, as built; undefined without a sandbox or for an undeclared name. */
  sandboxFacts(command: string): SandboxFacts | undefined;
}
