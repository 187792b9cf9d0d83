/**
 * The operator's declared commands, checked once when the verifier is made, and a tool's
 * arguments checked against them before anything is spawned (`command_denied` otherwise).
 */
import { ToolError } from "../errors.js";
import type { SandboxLimits } from "./sandbox/limits.js";
import type { VerifierCommand } from "./verifier-options.js";

const DEFAULT_MAX_ARGS = 64;
const MAX_ARG_LENGTH = 4096;

/** A declared command, validated, with its defaults filled in. */
export interface PreparedCommand {
  readonly argv: readonly string[];
  readonly pattern: RegExp | undefined;
  readonly allowOptions: boolean;
  readonly maxArgs: number;
  readonly write: boolean;
  /** The command's own limits as declared (checked against the sandbox's when the verifier is made). */
  readonly limits: Partial<SandboxLimits> | undefined;
  readonly timeoutMs: number;
}

/** A verifier limit: a positive safe integer, or `config_invalid`. */
export function positiveInteger(value: unknown, name: string): number {
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value <= 0)
    throw new ToolError("config_invalid", `verifier ${name} must be a positive integer`);
  return value;
}

/** Validate every declared command; `timeoutMs` is the deadline of those that declare none. */
export function prepareCommands(declared: Readonly<Record<string, VerifierCommand>>, timeoutMs: number): Map<string, PreparedCommand> {
  if (typeof declared !== "object" || declared === null) throw new ToolError("config_invalid", "verifier commands must be an object");
  const commands = new Map<string, PreparedCommand>();
  for (const [name, entry] of Object.entries(declared)) {
    const bad = (why: string) => new ToolError("config_invalid", `verifier command ${JSON.stringify(name)}: ${why}`);
    if (name.length === 0) throw bad("the name is empty");
    const argv: unknown = entry?.argv;
    if (!Array.isArray(argv) || argv.length === 0) throw bad("argv must be a non-empty array");
    for (const part of argv)
      if (typeof part !== "string" || part.length === 0 || part.includes("\0")) throw bad("argv must hold non-empty strings without NUL bytes");
    if ((argv[0] as string).startsWith("-")) throw bad("the program must not start with `-`");
    const spec = entry.args;
    const maxArgs = spec === undefined ? 0 : spec.max === undefined ? DEFAULT_MAX_ARGS : spec.max;
    if (!Number.isSafeInteger(maxArgs) || maxArgs < 0) throw bad("args.max must be a non-negative integer");
    commands.set(name, {
      argv: [...(argv as string[])],
      pattern: spec?.pattern === undefined ? undefined : compilePattern(spec.pattern, name),
      allowOptions: spec?.allowOptions === true,
      maxArgs,
      write: entry.sandbox?.write === true,
      limits: entry.sandbox?.limits,
      timeoutMs: entry.timeoutMs === undefined ? timeoutMs : positiveInteger(entry.timeoutMs, `command ${name} timeoutMs`),
    });
  }
  return commands;
}

function compilePattern(pattern: RegExp | string, command: string): RegExp {
  const source = typeof pattern === "string" ? pattern : pattern.source;
  const flags = typeof pattern === "string" ? "" : [...pattern.flags].filter((f) => "isuv".includes(f)).join("");
  try {
    return new RegExp(`^(?:${source})$`, flags);
  } catch (cause) {
    throw new ToolError("config_invalid", `command ${command}: args.pattern is not a valid regular expression`, { cause });
  }
}

/** A tool's arguments for a command, each checked; the first that breaks a rule is refused. */
export function checkArgs(name: string, command: PreparedCommand, given: unknown): string[] {
  const deny = (why: string, reason: string, index?: number) =>
    new ToolError("command_denied", `command ${name}: ${why}`, { details: { reason, ...(index === undefined ? {} : { index }) } });
  if (given === undefined) return [];
  if (!Array.isArray(given)) throw deny("args must be an array of strings", "args_not_array");
  if (given.length > command.maxArgs) {
    throw deny(command.maxArgs === 0 ? "takes no arguments" : `takes at most ${command.maxArgs} arguments, got ${given.length}`, "too_many_args");
  }
  return given.map((arg: unknown, index) => {
    if (typeof arg !== "string") throw deny(`argument ${index} is not a string`, "arg_not_string", index);
    if (arg.includes("\0")) throw deny(`argument ${index} contains a NUL byte`, "nul_byte", index);
    if (arg.length > MAX_ARG_LENGTH) throw deny(`argument ${index} is longer than ${MAX_ARG_LENGTH} characters`, "arg_too_long", index);
    if (!command.allowOptions && arg.startsWith("-"))
      throw deny(`argument ${index} starts with "-" and this command takes no options`, "option_forbidden", index);
    if (command.pattern !== undefined && !command.pattern.test(arg))
      throw deny(`argument ${index} does not match the declared pattern`, "pattern_mismatch", index);
    return arg;
  });
}
