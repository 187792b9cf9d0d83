/**
 * The verifier: the only way a tool runs a host command. This file makes it from the operator's
 * declarations and runs a call through the checks; the parts live beside it: the contract in
 * `verifier-options.ts`, declared commands and argument checks in `verifier-commands.ts`, the
 * environment allowlist in `verifier-env.ts`, the sandbox argv in `verifier-sandbox.ts`, the
 * process and its group in `verifier-process.ts`, output capping in `verifier-output.ts`.
 */
import { stat } from "node:fs/promises";
import type { VerifierRunRequest, VerifierRunResult } from "../context.js";
import { ToolError } from "../errors.js";
import { createRootGuard } from "./resolve-within-root.js";
import type { SandboxLimits } from "./sandbox/limits.js";
import type { SandboxFacts } from "./sandbox/profile.js";
import { checkArgs, positiveInteger, prepareCommands } from "./verifier-commands.js";
import { buildEnv } from "./verifier-env.js";
import type { CommandVerifier, CreateVerifierOptions } from "./verifier-options.js";
import { execute } from "./verifier-process.js";
import { commandLimits, factsOf, launchRun, prepareSandbox, verifierIsolation } from "./verifier-sandbox.js";

export type {
  BubblewrapSandbox,
  CommandVerifier,
  CreateVerifierOptions,
  VerifierCommand,
  VerifierCommandArgs,
  VerifierEnv,
  VerifierSandbox,
} from "./verifier-options.js";
export { TRUNCATION_MARKER } from "./verifier-output.js";

const DEFAULT_TIMEOUT_MS = 120_000;
const DEFAULT_MAX_OUTPUT_BYTES = 256 * 1024;
const DEFAULT_KILL_GRACE_MS = 2_000;

/**
 * Create the verifier: the only way a tool runs a host command.
 *
 * A tool names a command the operator declared and passes arguments; the verifier checks them
 * against the declaration **before anything is spawned** and refuses with `command_denied` an
 * unknown command, too many arguments, an argument that is not a string, holds a NUL byte, starts
 * with `-` where options are not allowed, or does not match the declared pattern.
 *
 * A run then:
 * - spawns the argv directly (never a shell), in `cwd` resolved inside the root by
 *   {@link resolveWithinRoot} (`path_escape` otherwise), with stdin at end-of-file and the
 *   environment built only as {@link VerifierEnv} says;
 * - leads its own process group; at the deadline or on abort the whole group gets SIGTERM, then
 *   SIGKILL after `killGraceMs`; when the command exits, whatever it left in its group is killed.
 *   (A process that leaves the group with `setsid` escapes this; under bubblewrap it cannot, the
 *   sandbox has its own process namespace that dies with the run.)
 * - keeps at most `maxOutputBytes` per stream (the verifier's output limit), ending a cut stream
 *   with {@link TRUNCATION_MARKER};
 * - with `sandbox: "bubblewrap"`, runs in the shared sandbox profile (`sandboxLaunch`): every
 *   capability dropped, a user namespace where the kernel allows one, no network (a loopback of its
 *   own) and no Unix socket but those `unixSockets` names, its own process, IPC, host-name and
 *   cgroup namespaces, a private `/tmp` of `tmpBytes`, `/proc` and `/dev`, the read-only paths and
 *   the root read-only (writable for a command that declares `sandbox: { write: true }`) on an
 *   otherwise empty read-only root, every protected path (`protectPath`) and every path the
 *   sandbox's `hide` names hidden, the seccomp filter, the limits (`limits`, per command
 *   `sandbox.limits`), and the sandbox killed if the host process dies. A run that hits a limit the
 *   host observes rejects with `limit_exceeded` once its processes are gone.
 *
 * @returns a verifier whose `run` resolves to the outcome (exit code, signal, output, truncation,
 *   duration, whether the deadline hit) whatever the command's exit status.
 * @throws ToolError `config_invalid` for a bad root, command, pattern, limit, environment name,
 *   sandbox path or Unix socket (one that does not exist, or lies in the gate's protected state),
 *   or when the bubblewrap sandbox is asked for and bwrap is not installed.
 * @throws (from `run`) ToolError `command_denied`, `path_escape`, `not_found` (missing cwd),
 *   `cancelled` (the signal aborted; the process group is gone when it rejects),
 *   `limit_exceeded` (details `command`, `limit`, `value`; the effect state unknown for a command
 *   that could change anything outside the sandbox: one that writes the root or talks to a named
 *   socket), or `config_invalid` (the declared program could not be started).
 */
export function createVerifier(options: CreateVerifierOptions): CommandVerifier {
  const guard = createRootGuard(options.root);
  const timeoutMs = positiveInteger(options.timeoutMs ?? DEFAULT_TIMEOUT_MS, "timeoutMs");
  const maxOutputBytes = positiveInteger(options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES, "maxOutputBytes");
  const killGraceMs = positiveInteger(options.killGraceMs ?? DEFAULT_KILL_GRACE_MS, "killGraceMs");
  const env = buildEnv(options.env ?? {});
  const sandbox = prepareSandbox(options.sandbox ?? "none", guard.root, maxOutputBytes);
  const commands = prepareCommands(options.commands, timeoutMs);
  const limits = new Map([...commands].map(([name, command]) => [name, commandLimits(sandbox, name, command.limits)]));
  // Each distinct sandbox (writable or not, its limits) is built once, to check it and to say what it enforces.
  const built = new Map<string, SandboxFacts>();
  const factsFor = (write: boolean, runLimits: SandboxLimits, who: string): SandboxFacts => {
    const key = JSON.stringify([write, runLimits]);
    let known = built.get(key);
    if (known === undefined) built.set(key, (known = factsOf(sandbox!, guard.root, write, runLimits, who)));
    return known;
  };
  const facts = new Map(
    [...commands].map(([name, command]) => [
      name,
      sandbox === undefined ? undefined : factsFor(command.write, limits.get(name)!, `verifier command ${JSON.stringify(name)}`),
    ]),
  );
  const isolation = verifierIsolation(
    sandbox === undefined ? undefined : factsFor(false, sandbox.limits, "verifier sandbox"),
    guard.root,
    new Map([...commands].map(([name, command]) => [name, { write: command.write, facts: facts.get(name) }])),
  );

  const run = async (request: VerifierRunRequest): Promise<VerifierRunResult> => {
    const { signal } = request;
    if (signal?.aborted) throw new ToolError("cancelled", "the run was cancelled before it started");
    const name: unknown = request.command;
    const command = typeof name === "string" ? commands.get(name) : undefined;
    if (command === undefined) {
      throw new ToolError(
        "command_denied",
        `no command ${typeof name === "string" ? JSON.stringify(name.slice(0, 64)) : ""} is declared (declared: ${[...commands.keys()].join(", ") || "none"})`,
        {
          details: { reason: "unknown_command" },
        },
      );
    }
    const args = checkArgs(name as string, command, request.args);
    const cwd = await guard.resolve(request.cwd ?? ".");
    if (!(await stat(cwd)).isDirectory())
      throw new ToolError("command_denied", `cwd ${JSON.stringify(request.cwd)} is not a directory`, { details: { reason: "cwd" } });
    if (signal?.aborted) throw new ToolError("cancelled", "the run was cancelled before it started");

    const argv = [...command.argv, ...args];
    const settings = { cwd, env, timeoutMs: command.timeoutMs, maxOutputBytes, killGraceMs, signal, label: name as string };
    if (sandbox === undefined) return execute(argv, settings);
    const hidden = sandbox.hide === undefined ? [] : await sandbox.hide();
    if (signal?.aborted) throw new ToolError("cancelled", "the run was cancelled before it started");
    const runLimits = limits.get(name as string)!;
    const launch = launchRun(sandbox, guard.root, { cwd, write: command.write, limits: runLimits, hidden, env }, argv, `verifier command ${name as string}`);
    // A command stopped by a limit changed nothing outside unless it could: by writing the root or through a named socket.
    const boundary = command.write || sandbox.unixSockets.length > 0 ? "effect_state_unknown" : "effect_failed";
    return execute(launch.argv, { ...settings, sandbox: { launch, limits: runLimits, boundary } });
  };

  return {
    root: guard.root,
    commands: [...commands.keys()],
    sandbox: sandbox === undefined ? "none" : "bubblewrap",
    isolation,
    sandboxFacts: (command: string) => (commands.has(command) ? facts.get(command) : undefined),
    run,
  };
}
