import { jsonBoundsProblem } from "@toolgate/core/boundary";
import type { z } from "zod";
import { hostMessageSchemas, readFast, toolMessageSchemas, type Classified, type HostMessage, type ToolMessage } from "./frames.js";

// The protocol's frames and schemas live in frames.ts (which needs nothing from core); the full
// check of a decoded frame, bounds first, is here.
export * from "./frames.js";

function classify<T>(schemas: Readonly<Record<string, z.ZodType>>, frame: unknown): Classified<T> {
  if (frame === null || typeof frame !== "object" || Array.isArray(frame)) return { kind: "malformed", problem: "a frame must be a JSON object" };
  const type = (frame as { type?: unknown }).type;
  if (typeof type !== "string") return { kind: "malformed", problem: 'a frame needs a string "type"' };
  const fast = readFast<T>(schemas, frame);
  if (fast) return { kind: "message", message: fast };
  const schema = Object.hasOwn(schemas, type) ? schemas[type] : undefined;
  // Bounded before the schema's recursive walk: a value nested 100,000 deep must not overflow the stack.
  const outOfBounds = jsonBoundsProblem(frame);
  if (outOfBounds) return { kind: "malformed", problem: `${type.slice(0, 64)} frame holds ${outOfBounds}` };
  if (!schema) return { kind: "unknown", type: type.slice(0, 64) };
  const parsed = schema.safeParse(frame);
  if (!parsed.success) {
    const issues = parsed.error.issues.slice(0, 5).map((i) => `${i.path.map(String).join(".") || "(root)"}: ${i.message}`);
    return { kind: "malformed", problem: `${type} frame is malformed: ${issues.join("; ")}` };
  }
  return { kind: "message", message: parsed.data as T };
}

/** Read a decoded frame as a tool → host message. */
export function classifyToolMessage(frame: unknown): Classified<ToolMessage> {
  return classify<ToolMessage>(toolMessageSchemas, frame);
}

/** Read a decoded frame as a host → tool message (what a tool process, or the SDK, receives). */
export function classifyHostMessage(frame: unknown): Classified<HostMessage> {
  return classify<HostMessage>(hostMessageSchemas, frame);
}
