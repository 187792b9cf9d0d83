import { z } from "zod";

/**
 * The tool-process protocol, version 0.1: the wire between a host and a tool process. Every
 * message is one frame: a 4-byte big-endian length, then that many bytes of UTF-8 JSON, an object
 * tagged by `type`.
 *
 * Host → tool: `ToolHello`, `InvokeTool`, `CancelInvocation`, `ToolShutdown`.
 * Tool → host: `ToolRegister` (exactly once, after the hello), `ToolEvent`, `ToolResult`,
 * `ToolError`, `RequiresEscalation`, `DispatchNotification`. `ToolResult`, `ToolError` and
 * `RequiresEscalation` are terminal: nothing should follow them for the same `call_id`, and the host
 * drops what does (a cancel that crossed a result). Frames of unknown `type` are skipped.
 *
 * Types come from these schemas; they are never written twice.
 */
export const PROTOCOL_VERSION = "0.1";

/** Largest frame body either side accepts: 16 MiB. Checked from the header, before buffering. */
export const MAX_FRAME_BYTES = 16 * 1024 * 1024;

const callId = z.string().min(1).max(256);

// ---------- host → tool ----------

/** First frame the host sends; the tool answers with exactly one `ToolRegister`. */
export const toolHelloSchema = z.object({ type: z.literal("ToolHello"), protocol_version: z.string() });

/**
 * Run one tool. `turn_id` identifies the host's invocation (the gate's invocation id).
 * `escalation_approved` is a Toolgate extension a tool may ignore: true only when a human granted
 * the escalation this tool asked for on an identical earlier call.
 */
export const invokeToolSchema = z.object({
  type: z.literal("InvokeTool"),
  call_id: callId,
  tool_name: z.string(),
  input: z.unknown(),
  turn_id: z.string(),
  escalation_approved: z.boolean().optional(),
});

/** Ask the tool to stop one call; it answers with `ToolError { code: "cancelled" }` (or its result, if it had finished). */
export const cancelInvocationSchema = z.object({ type: z.literal("CancelInvocation"), call_id: callId });

/** Ask the tool to exit. The host kills it after a grace period. */
export const toolShutdownSchema = z.object({ type: z.literal("ToolShutdown") });

// ---------- tool → host ----------

/** One tool a process declares. `required_scope` is self-declared; the operator may only narrow it. */
export const declaredToolSchema = z.object({
  name: z.string().min(1).max(128),
  description: z.string().max(16_384),
  input_schema: z.union([z.record(z.string(), z.unknown()), z.boolean()]),
  required_scope: z.string().max(256).nullish(),
});

/** The tool's one answer to `ToolHello`. */
export const toolRegisterSchema = z.object({
  type: z.literal("ToolRegister"),
  tool_process_name: z.string().max(256),
  tools: z.array(declaredToolSchema).max(256),
});

/** What a tool reports while a call runs; becomes a gate progress event. */
export const toolEventBodySchema = z.discriminatedUnion("kind", [
  z.object({ kind: z.literal("Status"), status: z.string() }),
  z.object({ kind: z.literal("OutputChunk"), chunk: z.string() }),
  z.object({ kind: z.literal("Log"), level: z.string(), message: z.string() }),
]);

export const toolEventSchema = z.object({ type: z.literal("ToolEvent"), call_id: callId, event: z.unknown() });

export const VERIFICATION_STATES = ["Verified", "Unverified", "NotApplicable"] as const;

/** Terminal: the call's output. */
export const toolResultSchema = z.object({
  type: z.literal("ToolResult"),
  call_id: callId,
  verified: z.enum(VERIFICATION_STATES),
  output: z.json(),
});

/** Codes a tool process may send; any other code counts as `invocation_failed`. */
export const WIRE_ERROR_CODES = ["cancelled", "unknown_tool", "invocation_failed"] as const;

/** Terminal: the call failed. `code` is open-ended on the wire. */
export const toolErrorSchema = z.object({
  type: z.literal("ToolError"),
  call_id: callId,
  code: z.string().max(128),
  message: z.string(),
});

/** Terminal: the tool will not act without a human's approval. */
export const requiresEscalationSchema = z.object({ type: z.literal("RequiresEscalation"), call_id: callId, reason: z.string() });

/**
 * Something the tool wants the host to know outside any call's answer (a reminder, a finished
 * background job). Its fields other than `type` are the tool's own and open-ended; `call_id`, when
 * present, names the call it relates to. Never terminal; the host delivers it as a notification.
 */
export const dispatchNotificationSchema = z.looseObject({ type: z.literal("DispatchNotification"), call_id: callId.optional() });

export type ToolHello = z.infer<typeof toolHelloSchema>;
export type InvokeTool = z.infer<typeof invokeToolSchema>;
export type CancelInvocation = z.infer<typeof cancelInvocationSchema>;
export type ToolShutdown = z.infer<typeof toolShutdownSchema>;
export type DeclaredTool = z.infer<typeof declaredToolSchema>;
export type ToolRegister = z.infer<typeof toolRegisterSchema>;
export type ToolEventBody = z.infer<typeof toolEventBodySchema>;
export type ToolEvent = z.infer<typeof toolEventSchema>;
export type VerificationState = (typeof VERIFICATION_STATES)[number];
export type ToolResult = z.infer<typeof toolResultSchema>;
export type ToolErrorFrame = z.infer<typeof toolErrorSchema>;
export type RequiresEscalation = z.infer<typeof requiresEscalationSchema>;
export type DispatchNotification = z.infer<typeof dispatchNotificationSchema>;

/** Frames a host sends. */
export type HostMessage = ToolHello | InvokeTool | CancelInvocation | ToolShutdown;
/** Frames a tool sends. */
export type ToolMessage = ToolRegister | ToolEvent | ToolResult | ToolErrorFrame | RequiresEscalation | DispatchNotification;

export const toolMessageSchemas = {
  ToolRegister: toolRegisterSchema,
  ToolEvent: toolEventSchema,
  ToolResult: toolResultSchema,
  ToolError: toolErrorSchema,
  RequiresEscalation: requiresEscalationSchema,
  DispatchNotification: dispatchNotificationSchema,
} as const;

export const hostMessageSchemas = {
  ToolHello: toolHelloSchema,
  InvokeTool: invokeToolSchema,
  CancelInvocation: cancelInvocationSchema,
  ToolShutdown: toolShutdownSchema,
} as const;

/** How one decoded frame reads: a known message, a frame of a type to skip, or a malformed known frame. */
export type Classified<T> =
  | { readonly kind: "message"; readonly message: T }
  | { readonly kind: "unknown"; readonly type: string }
  | { readonly kind: "malformed"; readonly problem: string };

/** A call id as `callId` reads it. */
const isCallId = (value: unknown): value is string => typeof value === "string" && value.length >= 1 && value.length <= 256;

/**
 * Bounds of the fast reading, each at most what `jsonBoundsProblem` allows by default (depth 128,
 * 1,000,000 values, 100,000 entries, 16 Mi characters): a frame within them is within those.
 * A frame outside them is not refused here, only left to the full check.
 */
const FAST_MAX_DEPTH = 64;
const FAST_MAX_VALUES = 100_000;
const FAST_MAX_ENTRIES = 10_000;
const FAST_MAX_CHARS = 1024 * 1024;

/**
 * True when the whole frame is what `z.json()` accepts (strings, finite numbers, booleans, null,
 * dense arrays, plain objects with string keys, all the way down) and within the fast bounds.
 * JSON.parse makes nothing else but non-finite numbers (`1e309`), which fail here. Iterative;
 * false (never a throw) for anything else, which then goes to the full check and the schema.
 */
function isBoundedJson(frame: object): boolean {
  const values: unknown[] = [frame];
  const depths: number[] = [0];
  let count = 0;
  try {
    while (values.length > 0) {
      const current = values.pop();
      const depth = depths.pop()!;
      if (++count > FAST_MAX_VALUES) return false;
      switch (typeof current) {
        case "string":
          if (current.length > FAST_MAX_CHARS) return false;
          continue;
        case "boolean":
          continue;
        case "number":
          if (!Number.isFinite(current)) return false;
          continue;
        case "object": {
          if (current === null) continue;
          if (depth >= FAST_MAX_DEPTH) return false;
          if (Array.isArray(current)) {
            if (current.length > FAST_MAX_ENTRIES) return false;
            for (let i = 0; i < current.length; i++) {
              values.push(current[i]);
              depths.push(depth + 1);
            }
            continue;
          }
          const prototype = Object.getPrototypeOf(current) as unknown;
          if (prototype !== Object.prototype && prototype !== null) return false;
          const keys = Reflect.ownKeys(current);
          if (keys.length > FAST_MAX_ENTRIES) return false;
          for (const key of keys) {
            // A "__proto__" key: the schema's copy drops it, so such a frame is left to the schema.
            if (typeof key !== "string" || key.length > FAST_MAX_CHARS || key === "__proto__") return false;
            values.push((current as Record<string, unknown>)[key]);
            depths.push(depth + 1);
          }
          continue;
        }
        default:
          return false;
      }
    }
  } catch {
    return false;
  }
  return true;
}

/**
 * The frames every call carries (and the host's few control frames), read without the bounds walk and the schema's walk: on a frame
 * `isBoundedJson` passed, each returns the message only when the frame is one its schema accepts
 * (with the same fields), and otherwise undefined, so the full check and the schema read it and
 * name what is wrong. Never more lenient than they are.
 */
const fastReaders: Readonly<Record<string, (frame: Record<string, unknown>) => ToolMessage | HostMessage | undefined>> = {
  ToolResult: ({ call_id, verified, output }) =>
    isCallId(call_id) && (VERIFICATION_STATES as readonly unknown[]).includes(verified) && output !== undefined
      ? { type: "ToolResult", call_id, verified: verified as VerificationState, output: output as ToolResult["output"] }
      : undefined,
  ToolHello: ({ protocol_version }) => (typeof protocol_version === "string" ? { type: "ToolHello", protocol_version } : undefined),
  CancelInvocation: ({ call_id }) => (isCallId(call_id) ? { type: "CancelInvocation", call_id } : undefined),
  ToolShutdown: () => ({ type: "ToolShutdown" }),
  InvokeTool: ({ call_id, tool_name, input, turn_id, escalation_approved }) =>
    isCallId(call_id) &&
    typeof tool_name === "string" &&
    input !== undefined &&
    typeof turn_id === "string" &&
    (escalation_approved === undefined || typeof escalation_approved === "boolean")
      ? { type: "InvokeTool", call_id, tool_name, input, turn_id, ...(escalation_approved === undefined ? {} : { escalation_approved }) }
      : undefined,
};

/**
 * The message `frame` is, read without the bounds walk and the schema when it is a frame of
 * `schemas` that the fast reading accepts; otherwise undefined, and the full check must read it
 * (`classifyToolMessage` / `classifyHostMessage`). Needs nothing from core: a tool process written
 * with the SDK loads the full check only when a frame needs it.
 */
export function readFast<T>(schemas: Readonly<Record<string, z.ZodType>>, frame: unknown): T | undefined {
  if (frame === null || typeof frame !== "object" || Array.isArray(frame)) return undefined;
  const type = (frame as { type?: unknown }).type;
  if (typeof type !== "string" || !Object.hasOwn(schemas, type) || !Object.hasOwn(fastReaders, type) || !isBoundedJson(frame)) return undefined;
  return fastReaders[type]!(frame as Record<string, unknown>) as T | undefined;
}
