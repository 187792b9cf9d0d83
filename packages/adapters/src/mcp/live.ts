import type { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { ErrorCode, LoggingLevelSchema, McpError, type LoggingLevel, type Tool as McpTool } from "@modelcontextprotocol/sdk/types.js";
import { ToolError } from "@toolgate/core";
import { z } from "zod";

/** Levels in the order of RFC 5424 severity, least severe first (the MCP logging utility's order). */
const LEVELS: readonly LoggingLevel[] = LoggingLevelSchema.options;
const DEFAULT_LEVEL: LoggingLevel = "info";
/** How often a session looks for a change in its served tools, by default. */
export const DEFAULT_TOOLS_POLL_MS = 5_000;
/** `toolsPollMs` is 0 (never) or a whole number of ms within these bounds. */
export const TOOLS_POLL_MS_BOUNDS = { min: 10, max: 3_600_000 } as const;

/** `toolsPollMs` as given, or `config_invalid`: anything but 0 or a whole number within the bounds. */
export function checkToolsPollMs(value: unknown): number {
  if (value === undefined) return DEFAULT_TOOLS_POLL_MS;
  const { min, max } = TOOLS_POLL_MS_BOUNDS;
  if (value === 0 || (Number.isSafeInteger(value) && (value as number) >= min && (value as number) <= max)) return value as number;
  throw new ToolError("config_invalid", `toolsPollMs must be 0 (never) or a whole number of ms from ${min} to ${max}`);
}

// Parsed loosely so a bad level is answered here with invalid params, not by the parser as an internal error.
const SetLevelRequest = z.object({ method: z.literal("logging/setLevel"), params: z.looseObject({ level: z.unknown() }).optional() });

/** Sends `notifications/message` at or above the level the client set with `logging/setLevel`. */
export type McpLog = (level: LoggingLevel, data: Readonly<Record<string, unknown>>) => void;

/**
 * The `logging` capability: `logging/setLevel` sets this session's level (one server per session,
 * so the level is the server's); a level outside the eight of the spec is refused with invalid params.
 */
export function serveLogging(server: Server): McpLog {
  let level: LoggingLevel = DEFAULT_LEVEL;
  server.setRequestHandler(SetLevelRequest, (request) => {
    const asked = LoggingLevelSchema.safeParse(request.params?.level);
    if (!asked.success) throw new McpError(ErrorCode.InvalidParams, `level must be one of ${LEVELS.join(", ")}`);
    level = asked.data;
    return {};
  });
  return (at, data) => {
    if (LEVELS.indexOf(at) < LEVELS.indexOf(level)) return;
    server.notification({ method: "notifications/message", params: { level: at, logger: "toolgate", data } }).catch(() => undefined);
  };
}

/** The served tools now; throws when they cannot be known (the kill switches could not be read). */
export type ListServed = () => Promise<readonly McpTool[]>;

/**
 * Once the client is initialized, looks at the served tools every `pollMs` and sends
 * `notifications/tools/list_changed` when they differ from what was last seen (a tool switched off
 * or on, added or changed): one timer per session, one look at a time, stopped when the session
 * closes; nothing is sent while the set stays the same. `pollMs` 0: never.
 */
export function watchServedTools(server: Server, list: ListServed, pollMs: number, log: McpLog): void {
  if (checkToolsPollMs(pollMs) === 0) return;
  let seen: Map<string, string> | undefined;
  let looking = false;
  let timer: NodeJS.Timeout | undefined;
  const look = async () => {
    if (looking) return;
    looking = true;
    try {
      const now = new Map((await list()).map((t) => [t.name, JSON.stringify(t)]));
      const before = seen;
      seen = now;
      if (!before || sameTools(before, now)) return;
      log("info", { event: "tools_changed", added: [...now.keys()].filter((n) => !before.has(n)), removed: [...before.keys()].filter((n) => !now.has(n)) });
      await server.sendToolListChanged();
    } catch {
      // Unknown now (journal unreadable, session closing): keep what was seen and look again.
    } finally {
      looking = false;
    }
  };
  const initialized = server.oninitialized;
  server.oninitialized = () => {
    initialized?.();
    if (timer) return;
    void look();
    timer = setInterval(() => void look(), pollMs);
    timer.unref();
  };
  const closed = server.onclose;
  server.onclose = () => {
    clearInterval(timer);
    closed?.();
  };
}

function sameTools(a: ReadonlyMap<string, string>, b: ReadonlyMap<string, string>): boolean {
  if (a.size !== b.size) return false;
  for (const [name, definition] of a) if (b.get(name) !== definition) return false;
  return true;
}
