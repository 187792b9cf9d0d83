/**
 * The connection to an imported MCP server: the SDK's client over a {@link BoundedTransport}, opened
 * again when the last one closed (a server that broke the protocol is started afresh on the next
 * call), and failures turned into typed errors with the server's own text kept out of the message.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { FetchLike, Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { JsonSchemaValidator, jsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/types.js";
import { ErrorCode, McpError, ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { ToolError, type EffectBoundary } from "@toolgate/core";
import type { SandboxLimitName } from "@toolgate/core/boundary";
import { BOUNDS_ERROR_CODE, BoundedTransport, DEFAULT_MAX_MESSAGE_BYTES, DEFAULT_MCP_BOUNDS } from "./bounded-transport.js";
import type { ImportMcpServerOptions } from "./import-options.js";
import { fencedRemoteText, type TextRedactor } from "./remote-output.js";
import type { StdioLaunch } from "./remote-sandbox.js";
import { StdioClientLineTransport } from "./stdio-transport.js";

/** A connected client and the transport it reads through. */
export interface LiveConnection {
  readonly client: Client;
  readonly transport: BoundedTransport;
  /** Counts connections: a new one means the server was started (or reached) again. */
  readonly generation: number;
  /**
   * The sandbox limit a stdio server hit, once it has ended on its own (the host did not stop it):
   * from its exit status and its cgroup, or a message over `outputBytes` when that bound the line.
   */
  limitHit(): LimitHit | undefined;
}

/** A sandbox limit the server hit, and its value. */
export interface LimitHit {
  readonly limit: SandboxLimitName;
  readonly value: number;
}

export interface RemoteConnection {
  /** The open connection, or a new one when the last closed; `provider_unavailable` when none can be made. */
  current(): Promise<LiveConnection>;
  close(): Promise<void>;
}

/**
 * The SDK's client compiles each tool's output schema into a validator and runs it on every result.
 * The remote's schema is the remote's claim, compiled into code and run recursively on its own
 * output: the gate validates output against the operator's schema instead, so the client's check
 * accepts everything.
 */
const acceptAll: jsonSchemaValidator = {
  getValidator<T>(): JsonSchemaValidator<T> {
    return (input: unknown) => ({ valid: true, data: input as T, errorMessage: undefined });
  },
};

export function createRemoteConnection(options: ImportMcpServerOptions, launch: StdioLaunch | undefined, onListChanged: () => void): RemoteConnection {
  let live: Promise<LiveConnection> | undefined;
  let generation = 0;
  let closing = false;

  const open = async (): Promise<LiveConnection> => {
    const client = new Client({ name: `toolgate-import-${options.name}`, version: "0.1.0" }, { jsonSchemaValidator: acceptAll });
    const maxMessageBytes = options.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES;
    // A sandboxed server's output limit bounds its messages too, where it is the tighter bound.
    const outputBytes = launch?.limits?.outputBytes;
    const outputBinds = outputBytes !== undefined && outputBytes < maxMessageBytes;
    const maxBytes = outputBinds ? outputBytes : maxMessageBytes;
    let transport: BoundedTransport | undefined;
    let limitHit: () => LimitHit | undefined = () => undefined;
    let inner: Transport;
    if (launch) {
      const stdio = stdioTransport(options, launch, maxBytes);
      inner = stdio.transport;
      limitHit = () => {
        const hit = stdio.hits()[0];
        if (hit !== undefined) return { limit: hit, value: launch.limits![hit] };
        return outputBinds && stdio.transport.lineTooLong ? { limit: "outputBytes", value: outputBytes } : undefined;
      };
    } else {
      inner = new StreamableHTTPClientTransport(new URL(options.url!), {
        fetch: limitedFetch(maxBytes, () => transport?.breakProtocol("the server sent a response longer than the limit")),
      });
    }
    transport = new BoundedTransport(inner, { ...DEFAULT_MCP_BOUNDS, ...options.bounds }, launch !== undefined);
    client.setNotificationHandler(ToolListChangedNotificationSchema, onListChanged);
    try {
      await client.connect(transport);
    } catch (cause) {
      await client.close().catch(() => undefined);
      const hit = limitHit();
      if (hit !== undefined) throw limitFailure(options.name, "while it started", hit, "effect_not_started", cause);
      throw new ToolError("provider_unavailable", `could not connect to MCP server ${options.name}`, {
        cause,
        boundary: "effect_not_started",
        retryable: true,
      });
    }
    return { client, transport, generation: ++generation, limitHit };
  };

  return {
    async current() {
      for (;;) {
        if (closing) throw new ToolError("provider_unavailable", `the import of MCP server ${options.name} is closed`, { boundary: "effect_not_started" });
        const pending = live;
        const last = pending === undefined ? undefined : await pending.catch(() => undefined);
        if (last && !last.transport.closed) return last;
        // Another call started the next connection while this one waited: use that one.
        if (live !== pending) continue;
        if (last) void last.client.close().catch(() => undefined);
        live = open();
        return live;
      }
    },
    async close() {
      closing = true;
      const last = live === undefined ? undefined : await live.catch(() => undefined);
      await last?.client.close();
    },
  };

  /** A transport over a fresh start of the server, and the limits that start hit once it ended on its own. */
  function stdioTransport(o: ImportMcpServerOptions, how: StdioLaunch, maxLineBytes: number) {
    const run = how.start();
    const [command, ...args] = run.argv as [string, ...string[]];
    let hits: readonly SandboxLimitName[] = [];
    const transport = new StdioClientLineTransport({
      command,
      args,
      env: run.env,
      stderr: o.stderr ?? "ignore",
      maxLineBytes,
      descriptors: run.descriptors,
      onExit: (exit) => {
        const hit = run.finish(exit);
        // A server the host stopped (a broken protocol, the import closed) did not end by a limit.
        if (!exit.stopped) hits = hit;
      },
      ...(o.cwd === undefined ? {} : { cwd: o.cwd }),
    });
    return { transport, hits: () => hits };
  }
}

/**
 * `fetch` whose response to a POST (a request's answer, JSON or an event stream) ends in an error
 * once it passes `maxBytes`, before the SDK has parsed it; `onOver` breaks the connection.
 */
function limitedFetch(maxBytes: number, onOver: () => void): FetchLike {
  return async (url, init) => {
    const response = await fetch(url, init);
    if (init?.method !== "POST" || response.body === null) return response;
    let seen = 0;
    const limited = response.body.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, controller) {
          seen += chunk.byteLength;
          if (seen > maxBytes) {
            onOver();
            controller.error(new Error("response over the limit"));
          } else controller.enqueue(chunk);
        },
      }),
    );
    return new Response(limited, { status: response.status, statusText: response.statusText, headers: response.headers });
  };
}

/** A sandbox limit the server hit: the call ends with `limit_exceeded`, naming the limit and its value. */
export function limitFailure(server: string, during: string, hit: LimitHit, boundary: EffectBoundary, cause?: unknown): ToolError {
  return new ToolError(
    "limit_exceeded",
    `MCP server ${server} hit its sandbox limit ${hit.limit} (${hit.value}) ${during}; it ended, and is started again on the next call`,
    { cause, boundary, details: { limit: hit.limit, value: hit.value } },
  );
}

/** What a failed listing before a call becomes: the call never started. */
export function listFailure(server: string, live: LiveConnection | undefined, cause: unknown): ToolError {
  if (cause instanceof ToolError && cause.code === "limit_exceeded") return cause;
  const broken =
    (cause instanceof ToolError && cause.code === "protocol_error") ||
    (cause instanceof McpError && cause.code === BOUNDS_ERROR_CODE) ||
    live?.transport.broken !== undefined;
  return broken
    ? new ToolError("protocol_error", `MCP server ${server} broke the protocol while listing its tools; the call was not made`, {
        cause,
        boundary: "effect_not_started",
      })
    : new ToolError("provider_unavailable", `MCP server ${server} could not be reached or did not list its tools`, {
        cause,
        boundary: "effect_not_started",
        retryable: true,
      });
}

const LOCAL_CODES = new Set<number>([ErrorCode.ConnectionClosed, ErrorCode.RequestTimeout]);

/**
 * What a failed `tools/call` becomes. The message is the host's own words; text the server wrote
 * (a JSON-RPC error's message) is redacted, scanned and fenced into `details.remoteError`.
 */
export function callFailure(server: string, tool: string, toolId: string, live: LiveConnection, cause: unknown, redactor: TextRedactor | undefined): ToolError {
  // The server ended mid-call by a limit: what it did before is not known.
  const hit = live.limitHit();
  if (hit !== undefined) return limitFailure(server, `during ${tool}`, hit, "effect_state_unknown", cause);
  if (live.transport.broken !== undefined) {
    return new ToolError(
      "protocol_error",
      `MCP server ${server} broke the protocol during ${tool}: ${live.transport.broken}; the connection was closed and the server is started again on the next call`,
      { cause, boundary: "effect_state_unknown" },
    );
  }
  if (cause instanceof Error && Array.isArray((cause as { issues?: unknown }).issues)) {
    // The SDK could not read the result as a tool result (a wrong type in a field).
    return new ToolError("protocol_error", `MCP server ${server} answered ${tool} with what is not an MCP tool result`, {
      cause,
      boundary: "effect_state_unknown",
    });
  }
  if (cause instanceof McpError && cause.code === BOUNDS_ERROR_CODE) {
    return new ToolError(
      "protocol_error",
      `MCP server ${server} answered ${tool} with a result over the bounds: ${String(cause.message).replace(/^MCP error -?\d+: /, "")}`,
      {
        cause,
        boundary: "effect_state_unknown",
      },
    );
  }
  if (cause instanceof McpError && !LOCAL_CODES.has(cause.code)) {
    const text = String(cause.message).replace(/^MCP error -?\d+: /, "");
    return new ToolError("provider_rejected", `MCP server ${server} answered ${tool} with JSON-RPC error ${cause.code}`, {
      cause,
      boundary: "effect_state_unknown",
      details: fencedRemoteText(toolId, text, redactor),
    });
  }
  return new ToolError(
    "provider_unavailable",
    `MCP server ${server} failed on ${tool}${cause instanceof McpError && cause.code === ErrorCode.RequestTimeout ? " (no answer in time)" : ""}`,
    {
      cause,
      boundary: "effect_state_unknown",
    },
  );
}
