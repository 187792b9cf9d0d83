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
import { checkArgs, positiveInteger, prepareCommands } from "./verifier-commands.js";
import { buildEnv } from "./verifier-env.js";
import type { CommandVerifier, CreateVerifierOptions } from "./verifier-options.js";
import { execute } from "./verifier-process.js";
import { prepareSandbox, sandboxedArgv } from "./verifier-sandbox.js";

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
 * - keeps at most `maxOutputBytes` per stream, ending a cut stream with {@link TRUNCATION_MARKER};
 * - with `sandbox: "bubblewrap"`, runs under bwrap with no network (a fresh network namespace
 *   holding only a loopback of its own), its own process, IPC and host-name namespaces, a private
 *   `/tmp`, `/proc` and `/dev`, the system paths read-only, the root read-only unless the command
 *   declares `sandbox: { write: true }`, every protected path (`protectPath`) and every path the
 *   sandbox's `hide` names hidden, and the sandbox killed if the host process dies.
 *
 * @returns a verifier whose `run` resolves to the outcome (exit code, signal, output, truncation,
 *   duration, whether the deadline hit) whatever the command's exit status.
 * @throws ToolError `config_invalid` for a bad root, command, pattern, limit or environment name,
 *   or when the bubblewrap sandbox is asked for and bwrap is not installed.
 * @throws (from `run`) ToolError `command_denied`, `path_escape`, `not_found` (missing cwd),
 *   `cancelled` (the signal aborted; the process group is gone when it rejects), or
 *   `config_invalid` (the declared program could not be started).
 */
export function createVerifier(options: CreateVerifierOptions): CommandVerifier {
  const guard = createRootGuard(options.root);
  const timeoutMs = positiveInteger(options.timeoutMs ?? DEFAULT_TIMEOUT_MS, "timeoutMs");
  const maxOutputBytes = positiveInteger(options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES, "maxOutputBytes");
  const killGraceMs = positiveInteger(options.killGraceMs ?? DEFAULT_KILL_GRACE_MS, "killGraceMs");
  const env = buildEnv(options.env ?? {});
  const sandbox = prepareSandbox(options.sandbox ?? "none", env, guard.root);
  const commands = prepareCommands(options.commands, timeoutMs);

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
    const hidden = sandbox?.hide === undefined ? [] : await sandbox.hide();
    if (signal?.aborted) throw new ToolError("cancelled", "the run was cancelled before it started");
    const spawned = sandbox === undefined ? argv : sandboxedArgv(sandbox, guard.root, cwd, command.write, argv, hidden);
    return execute(spawned, {
      cwd,
      env,
      timeoutMs: command.timeoutMs,
      maxOutputBytes,
      killGraceMs,
      signal,
      label: name as string,
      sandboxed: sandbox !== undefined,
    });
  };

  return { root: guard.root, commands: [...commands.keys()], sandbox: sandbox === undefined ? "none" : "bubblewrap", run };
}
