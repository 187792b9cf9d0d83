/**
 * Running one command: spawned directly (never a shell) as the leader of its own process group,
 * stdin at end-of-file; at the deadline or on abort the whole group gets SIGTERM, then SIGKILL
 * after the grace; when the leader exits, whatever it left in its group is killed. Under the
 * sandbox, the run's end also asks the sandbox which limits were hit (and ends what it left).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { performance } from "node:perf_hooks";
import type { Writable } from "node:stream";
import type { VerifierRunResult } from "../context.js";
import { ToolError, type EffectBoundary } from "../errors.js";
import type { SandboxLimitName, SandboxLimits } from "./sandbox/limits.js";
import { feedSandbox, sandboxStdio, type SandboxLaunch } from "./sandbox/profile.js";
import { OutputCapture } from "./verifier-output.js";

/** After the leader exits, how long its output pipes may stay open (what it wrote is read first). */
const PIPES_AFTER_EXIT_MS = 250;

/** The sandbox a run was launched in: its seccomp program, its end, and what a limit hit means for the effect. */
export interface ExecuteSandbox {
  readonly launch: SandboxLaunch;
  readonly limits: SandboxLimits;
  /** Where the effect stands when a limit stopped the command (unknown where it could change anything outside). */
  readonly boundary: EffectBoundary;
}

export interface ExecuteOptions {
  readonly cwd: string;
  readonly env: Record<string, string>;
  readonly timeoutMs: number;
  readonly maxOutputBytes: number;
  readonly killGraceMs: number;
  readonly signal: AbortSignal | undefined;
  /** The command's declared name, for errors. */
  readonly label: string;
  /** The sandbox `argv` was launched in (argv is then its launch's); undefined without one. */
  readonly sandbox?: ExecuteSandbox;
}

/**
 * Run `argv` to its end. Resolves to the outcome whatever the exit status; rejects with
 * `cancelled` once the aborted run's group is gone, `limit_exceeded` once a sandboxed run that hit
 * a limit is gone, or `config_invalid` when it could not start.
 */
export function execute(argv: readonly string[], options: ExecuteOptions): Promise<VerifierRunResult> {
  const [program, ...rest] = argv as [string, ...string[]];
  const started = performance.now();
  return new Promise<VerifierRunResult>((resolve, reject) => {
    let child: ChildProcess;
    try {
      child = spawn(program, rest, {
        cwd: options.cwd,
        // Under the sandbox the command's environment reaches only the command (bubblewrap reads it
        // from a descriptor, with the seccomp program); what starts the sandbox gets the launch's.
        env: options.sandbox === undefined ? options.env : { ...options.sandbox.launch.env },
        stdio: options.sandbox === undefined ? ["ignore", "pipe", "pipe"] : sandboxStdio(options.sandbox.launch, ["ignore", "pipe", "pipe"]),
        detached: true,
        shell: false,
        windowsHide: true,
      });
    } catch (cause) {
      options.sandbox?.launch.finish({ code: null, signal: null });
      reject(new ToolError("config_invalid", `command ${options.label} could not be started`, { cause }));
      return;
    }
    if (options.sandbox !== undefined) feedSandbox(child, options.sandbox.launch);
    const stdout = new OutputCapture(options.maxOutputBytes);
    const stderr = new OutputCapture(options.maxOutputBytes);
    child.stdout?.on("data", (chunk: Buffer) => stdout.push(chunk));
    child.stderr?.on("data", (chunk: Buffer) => stderr.push(chunk));

    let timedOut = false;
    let aborted = false;
    let graceTimer: NodeJS.Timeout | undefined;
    let settled = false;
    let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;

    const stop = () => {
      if (graceTimer !== undefined) return;
      killGroup(child, "SIGTERM");
      graceTimer = setTimeout(() => killGroup(child, "SIGKILL"), options.killGraceMs);
    };
    const deadline = setTimeout(() => {
      timedOut = true;
      stop();
    }, options.timeoutMs);
    const onAbort = () => {
      aborted = true;
      stop();
    };
    options.signal?.addEventListener("abort", onAbort, { once: true });

    const finish = (error?: unknown) => {
      if (settled) return;
      settled = true;
      clearTimeout(deadline);
      if (graceTimer !== undefined) clearTimeout(graceTimer);
      options.signal?.removeEventListener("abort", onAbort);
      const durationMs = performance.now() - started;
      // Once, whatever the outcome: a root host's cgroup is read, emptied and removed here.
      const hit: SandboxLimitName[] = options.sandbox?.launch.finish(exit ?? { code: null, signal: null }) ?? [];
      if (error !== undefined) {
        const code = (error as { code?: unknown }).code;
        const what = options.sandbox !== undefined ? "the bubblewrap sandbox" : `the program of command ${options.label}`;
        reject(new ToolError("config_invalid", `${what} could not be started (${typeof code === "string" ? code : "error"})`, { cause: error }));
        return;
      }
      if (aborted) {
        reject(new ToolError("cancelled", `command ${options.label} was cancelled; its processes were stopped`, { details: { durationMs } }));
        return;
      }
      const limit = hit[0];
      if (limit !== undefined && options.sandbox !== undefined) {
        const value = options.sandbox.limits[limit];
        reject(
          new ToolError("limit_exceeded", `command ${options.label} hit its sandbox limit ${limit} (${value}); its processes were stopped`, {
            details: { command: options.label, limit, value, hit, durationMs },
            boundary: options.sandbox.boundary,
          }),
        );
        return;
      }
      resolve({
        exitCode: exit?.code ?? null,
        signal: exit?.signal ?? null,
        stdout: stdout.text(),
        stderr: stderr.text(),
        truncated: stdout.dropped > 0 || stderr.dropped > 0,
        durationMs,
        timedOut,
      });
    };

    child.once("error", (error) => {
      // Spawning failed (no such program, not executable); nothing is running.
      if (child.pid === undefined) finish(error);
    });
    child.once("exit", (code, signal) => {
      exit = { code, signal };
      // The leader is gone: whatever it left in its group goes too.
      killGroup(child, "SIGKILL");
      // Bubblewrap has long read its descriptors; they must not hold the run open, nor may anything
      // that kept the output pipes past the leader's end.
      for (const stream of child.stdio.slice(3)) (stream as Writable | null)?.destroy();
      setTimeout(() => {
        child.stdout?.destroy();
        child.stderr?.destroy();
      }, PIPES_AFTER_EXIT_MS).unref();
    });
    child.once("close", () => finish());
  });
}

function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    // the group is already gone
  }
}
