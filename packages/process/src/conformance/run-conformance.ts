import { z } from "zod";
import { childEnv, DEFAULT_PASS_ENV } from "../host/spawn.js";
import { childSecrets, stderrSummary } from "../host/stderr-tail.js";
import { PROTOCOL_VERSION, type DeclaredTool, type ToolMessage, type ToolRegister } from "../protocol/messages.js";
import { WireClient } from "./wire-client.js";

/** The least time start-up and exit get, whatever the per-check timeout. */
const PROCESS_LIFECYCLE_MS = 10_000;

/** The checks, in the order they run. */
export const CONFORMANCE_CHECKS = [
  "handshake",
  "invocation",
  "unknown_tool",
  "bad_input",
  "cancellation",
  "unknown_frame",
  "parallel_calls",
  "shutdown",
] as const;

export interface ConformanceOptions {
  /** The tool process to test, run as the host would run it. */
  readonly command: string;
  readonly args?: readonly string[];
  readonly cwd?: string;
  /** Explicit variables; otherwise only the host's allowlisted ones (PATH, locale, TZ). */
  readonly env?: Readonly<Record<string, string>>;
  /** A valid input per tool name. Without one, an input is generated from the tool's JSON Schema. */
  readonly inputs?: Readonly<Record<string, unknown>>;
  /** A tool and input that runs long enough to be cancelled; then the tool must answer `cancelled`. */
  readonly slow?: { readonly tool: string; readonly input: unknown };
  /** Per check; default 10 s. The handshake and the exit after `ToolShutdown` always get at least 10 s. */
  readonly timeoutMs?: number;
  /** Each result line as it is decided (`PASS name — detail` / `FAIL name — detail`). */
  readonly onLine?: (line: string) => void;
}

export interface ConformanceCheck {
  readonly name: (typeof CONFORMANCE_CHECKS)[number];
  readonly ok: boolean;
  readonly detail: string;
}

export interface ConformanceReport {
  readonly passed: number;
  readonly failed: number;
  readonly checks: readonly ConformanceCheck[];
}

/** A plausible value for a JSON Schema, for tools without a given input. */
function sample(schema: unknown, depth = 0): unknown {
  if (schema === null || typeof schema !== "object" || depth > 6) return {};
  const s = schema as Record<string, unknown>;
  if ("const" in s) return s["const"];
  if (Array.isArray(s["enum"]) && s["enum"].length > 0) return s["enum"][0];
  if (s["default"] !== undefined) return s["default"];
  for (const key of ["anyOf", "oneOf", "allOf"]) {
    const list = s[key];
    if (Array.isArray(list) && list.length > 0) return sample(list[0], depth + 1);
  }
  const type = Array.isArray(s["type"]) ? s["type"][0] : s["type"];
  switch (type) {
    case "string": {
      const min = typeof s["minLength"] === "number" ? s["minLength"] : 0;
      return "conformance sample".padEnd(min, "x");
    }
    case "integer":
    case "number":
      return typeof s["minimum"] === "number" ? s["minimum"] : typeof s["exclusiveMinimum"] === "number" ? s["exclusiveMinimum"] + 1 : 1;
    case "boolean":
      return true;
    case "null":
      return null;
    case "array": {
      const min = typeof s["minItems"] === "number" ? s["minItems"] : 0;
      return Array.from({ length: min }, () => sample(s["items"], depth + 1));
    }
    default: {
      const out: Record<string, unknown> = {};
      const props = (s["properties"] ?? {}) as Record<string, unknown>;
      for (const key of Array.isArray(s["required"]) ? (s["required"] as string[]) : []) out[key] = sample(props[key], depth + 1);
      return out;
    }
  }
}

/** Whether `value` fits the tool's schema, or undefined when the schema cannot be read. */
function fits(tool: DeclaredTool, value: unknown): boolean | undefined {
  try {
    return z.fromJSONSchema(tool.input_schema as Parameters<typeof z.fromJSONSchema>[0]).safeParse(value).success;
  } catch {
    return undefined;
  }
}

const describeFrame = (m: ToolMessage | undefined): string =>
  m === undefined ? "nothing" : m.type === "ToolError" ? `ToolError ${JSON.stringify(m.code)} (${m.message.slice(0, 120)})` : m.type;

/**
 * Drive a tool process through the protocol and report one pass/fail per check: handshake,
 * invocation, unknown tool, bad input, cancellation, unknown frame skipped, parallel calls,
 * shutdown. Any protocol violation seen during a check (a frame for a call never sent, a frame
 * after a terminal one, bytes that are not frames) fails it. The process is always killed at the end.
 */
export async function runConformance(options: ConformanceOptions): Promise<ConformanceReport> {
  const timeoutMs = options.timeoutMs ?? 10_000;
  const checks: ConformanceCheck[] = [];
  const env = options.env ? { ...options.env } : childEnv(DEFAULT_PASS_ENV, {});
  const client = new WireClient(options.command, options.args ?? [], { cwd: options.cwd, env });
  let seen = 0;
  const record = (name: ConformanceCheck["name"], ok: boolean, detail: string): void => {
    const fresh = client.violations.slice(seen);
    seen = client.violations.length;
    const check = fresh.length > 0 ? { name, ok: false, detail: `${detail}; protocol violation: ${fresh.join("; ")}` } : { name, ok, detail };
    checks.push(check);
    options.onLine?.(`${check.ok ? "PASS" : "FAIL"} ${name} — ${check.detail}`);
  };
  let ids = 0;
  const invoke = (tool: string, input: unknown): string => {
    const callId = `conf-${ids++}`;
    client.send({ type: "InvokeTool", call_id: callId, tool_name: tool, input, turn_id: `turn-${callId}` });
    return callId;
  };

  try {
    client.send({ type: "ToolHello", protocol_version: PROTOCOL_VERSION });
    // Start-up (and exit, below) get at least 10 s whatever the per-check timeout: interpreters are slow on a busy machine.
    const startMs = Math.max(timeoutMs, PROCESS_LIFECYCLE_MS);
    const reg = (await client.next((m) => m.type === "ToolRegister", startMs)) as ToolRegister | undefined;
    const first = reg?.tools[0];
    if (!reg || !first) {
      const why = reg
        ? "ToolRegister declared no tools"
        : client.running
          ? `no ToolRegister within ${startMs} ms`
          : "the process exited before its ToolRegister";
      record("handshake", false, `${why}${await stderrNote(client, options.env)}`);
      for (const name of CONFORMANCE_CHECKS.slice(1)) record(name, false, "not run: no handshake");
      return summary(checks);
    }
    const badNames = reg.tools.filter((t) => !/^[a-z][a-z0-9_]*$/.test(t.name)).map((t) => t.name);
    record(
      "handshake",
      badNames.length === 0,
      `${reg.tools.length} tool(s): ${reg.tools.map((t) => t.name).join(", ")}${badNames.length ? `; names must be lower-case words: ${badNames.join(", ")}` : ""}`,
    );

    const inputFor = (tool: DeclaredTool): unknown =>
      options.inputs && Object.hasOwn(options.inputs, tool.name) ? options.inputs[tool.name] : sample(tool.input_schema);
    const target = reg.tools.find((t) => options.inputs && Object.hasOwn(options.inputs, t.name)) ?? first;
    const goodInput = inputFor(target);

    {
      const answer = await client.terminal(invoke(target.name, goodInput), timeoutMs);
      record(
        "invocation",
        answer?.type === "ToolResult",
        `${target.name} answered ${describeFrame(answer)}${answer?.type === "ToolResult" ? "" : "; pass a valid input with --input"}`,
      );
    }
    {
      const answer = await client.terminal(invoke("toolgate_conformance_no_such_tool", {}), timeoutMs);
      record("unknown_tool", answer?.type === "ToolError" && answer.code === "unknown_tool", `answered ${describeFrame(answer)}`);
    }
    {
      const bad = [42, "not an object", null, [], { toolgate_conformance_unexpected: true }].find((v) => fits(target, v) === false);
      if (bad === undefined) record("bad_input", true, `${target.name}'s schema accepts every probe; nothing to refuse`);
      else {
        const answer = await client.terminal(invoke(target.name, bad), timeoutMs);
        record("bad_input", answer?.type === "ToolError" && client.running, `${target.name} given ${JSON.stringify(bad)} answered ${describeFrame(answer)}`);
      }
    }
    {
      const tool = options.slow?.tool ?? target.name;
      const callId = invoke(tool, options.slow ? options.slow.input : goodInput);
      if (options.slow) await client.next((m) => m.type === "ToolEvent" && m.call_id === callId, Math.min(500, timeoutMs));
      client.send({ type: "CancelInvocation", call_id: callId });
      const answer = await client.terminal(callId, timeoutMs);
      const cancelled = answer?.type === "ToolError" && answer.code === "cancelled";
      if (options.slow) record("cancellation", cancelled, `${tool} answered ${describeFrame(answer)} to CancelInvocation`);
      else
        record(
          "cancellation",
          answer !== undefined,
          `${tool} answered ${describeFrame(answer)}${cancelled ? "" : " (it finished first; name a slow tool with --slow to require cancelled)"}`,
        );
    }
    {
      client.send({ type: "ToolgateConformanceUnknownFrame", call_id: "conf-unknown", payload: { note: "a frame type from the future" } });
      const answer = await client.terminal(invoke(target.name, goodInput), timeoutMs);
      record("unknown_frame", answer?.type === "ToolResult", `after an unknown frame, ${target.name} answered ${describeFrame(answer)}`);
    }
    {
      const callIds = Array.from({ length: 8 }, () => invoke(target.name, goodInput));
      const answers = await Promise.all(callIds.map((id) => client.terminal(id, timeoutMs)));
      const results = answers.filter((a) => a?.type === "ToolResult").length;
      record("parallel_calls", results === callIds.length, `${results} of ${callIds.length} concurrent calls answered with ToolResult`);
    }
    {
      client.send({ type: "ToolShutdown" });
      // A process that exits promptly passes as soon as it has; only one that stays is waited out.
      const exitMs = Math.max(timeoutMs, PROCESS_LIFECYCLE_MS);
      let timer: NodeJS.Timeout | undefined;
      const exited = await Promise.race([client.exited.then(() => true), new Promise<boolean>((r) => (timer = setTimeout(() => r(false), exitMs)))]);
      clearTimeout(timer);
      record("shutdown", exited, exited ? "exited after ToolShutdown" : `still running ${exitMs} ms after ToolShutdown`);
    }
    return summary(checks);
  } finally {
    client.kill();
    await client.exited;
  }
}

/** The end of the child's stderr, redacted of the explicit environment's values, for a failed handshake: what the author needs to see. */
async function stderrNote(client: WireClient, env: ConformanceOptions["env"]): Promise<string> {
  // Whatever it wrote just before it failed is read first: wait (briefly) for its pipes to close.
  if (client.running) client.kill();
  await client.exited;
  const tail = client.stderrTail();
  const shown = stderrSummary(tail.text, childSecrets(env), tail.truncated);
  return shown === "" ? "; its stderr was empty" : `; its stderr ends: ${shown}`;
}

function summary(checks: readonly ConformanceCheck[]): ConformanceReport {
  const passed = checks.filter((c) => c.ok).length;
  return { passed, failed: checks.length - passed, checks };
}
