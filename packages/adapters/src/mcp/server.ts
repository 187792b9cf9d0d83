import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Readable, Writable } from "node:stream";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import {
  CallToolRequestSchema,
  ElicitResultSchema,
  ListToolsRequestSchema,
  type CallToolResult,
  type Tool as McpTool,
} from "@modelcontextprotocol/sdk/types.js";
import {
  ToolError,
  type AnyToolManifest,
  type ApprovalGrant,
  type ApprovalRequiredResult,
  type CallOptions,
  type Gate,
  type InvokeResult,
  type Profile,
  type ProgressEvent,
  type ToolDescriptor,
} from "@toolgate/core";
import { approvalFacts, approvalText, refusalFacts, refusalText } from "../shared/describe-result.js";
import { bareSchema, profileReaches, reachableTools, type ExposeOptions } from "../shared/reachable.js";

/** `_meta` keys this server reads and writes. */
export const MCP_META = {
  /** On a tools/list entry: the manifest facts an operator cares about. */
  tool: "io.toolgate/tool",
  /** On a result: status, invocation id, untrusted flag. */
  result: "io.toolgate/result",
  /** On an `approval_required` result: request id, preview, expiry. */
  approval: "io.toolgate/approval",
  /** On a refusal: typed code, effect boundary, schema issues. */
  error: "io.toolgate/error",
  /** On a tools/call request: an `ApprovalGrant` a human obtained out of band. */
  grant: "io.toolgate/grant",
} as const;

/** Options for the MCP server that fronts a gate. */
export interface McpServerOptions extends ExposeOptions {
  /** The profile every call runs under; `tools/list` shows only what it can reach. */
  readonly profile: Profile;
  /** Who the calls are made as (the agent), journaled with each call. */
  readonly principal: string;
  readonly tenant: string;
  /** The server's name and version in `initialize`; default `toolgate` and `0.1.0`. */
  readonly name?: string;
  readonly version?: string;
  /**
   * Ask the human through MCP elicitation when a call needs approval and the client supports it;
   * default true. Without it (or without client support) the approval comes back as a result.
   */
  readonly elicitation?: boolean;
  /** How long to wait for the human's answer to an elicitation; default 10 minutes. */
  readonly elicitationTimeoutMs?: number;
  /** Recorded as the grant's approver when the human approves through elicitation; default `mcp-elicitation`. */
  readonly approver?: string;
}

/** Where `serveMcp` listens. HTTP binds 127.0.0.1 only. */
export type McpTransportOption =
  | "stdio"
  | { readonly type: "stdio"; readonly stdin?: Readable; readonly stdout?: Writable }
  | { readonly type: "http"; readonly port?: number; readonly path?: string };

export interface ServeMcpOptions extends McpServerOptions {
  readonly transport: McpTransportOption;
}

/** A running MCP server. */
export interface McpServerHandle {
  readonly transport: "stdio" | "http";
  /** For HTTP: the endpoint, e.g. `http://127.0.0.1:41234/mcp`. */
  readonly url: URL | undefined;
  /** Stop accepting calls and close every session. */
  close(): Promise<void>;
}

const DEFAULT_ELICITATION_TIMEOUT_MS = 10 * 60_000;

/**
 * An MCP server (the SDK's low-level `Server`, not yet connected) whose tools are the gate's tools
 * the profile can reach. Every `tools/call` goes through `gate.invoke`:
 * - `ok` → text content (fenced when untrusted) and, for trusted output only, `structuredContent` when the tool has an object output schema;
 * - `approval_required` → an elicitation when the client supports it (approve → the grant is
 *   obtained with `approver` and the call made again), otherwise an `isError` result carrying the
 *   preview and request id in text and in `_meta["io.toolgate/approval"]`;
 * - `denied` / `error` → an `isError` result with the typed code (`_meta["io.toolgate/error"]`).
 * A request's progress token gets progress notifications; MCP cancellation aborts the gate's signal.
 * A grant obtained out of band may be passed back in the request's `_meta["io.toolgate/grant"]`.
 */
export function createMcpServer<TTool extends AnyToolManifest>(typedGate: Gate<TTool>, options: McpServerOptions): Server {
  const gate = typedGate as unknown as Gate;
  const call: CallOptions = { principal: options.principal, tenant: options.tenant, profile: options.profile };
  const served = new Map<string, ToolDescriptor>(reachableTools(gate, options.profile, options).map((d) => [d.id, d]));
  const tools: McpTool[] = [...served.values()].map(toMcpTool);
  const objectOutput = new Set(tools.filter((t) => t.outputSchema).map((t) => t.name));
  const approver = options.approver ?? "mcp-elicitation";
  const elicitationTimeoutMs = options.elicitationTimeoutMs ?? DEFAULT_ELICITATION_TIMEOUT_MS;

  const server = new Server({ name: options.name ?? "toolgate", version: options.version ?? "0.1.0" }, { capabilities: { tools: { listChanged: false } } });

  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools }));

  server.setRequestHandler(CallToolRequestSchema, async (request, extra): Promise<CallToolResult> => {
    const name = request.params.name;
    const input = request.params.arguments ?? {};
    const known = gate.registry.describe(name);
    // Reachable but not served (hidden or advanced): refuse here. Anything else goes to the gate,
    // which journals the refusal of an unknown or unreachable tool.
    if (known && !served.has(name) && profileReaches(known, options.profile)) {
      return errorResult({ status: "error", code: "unknown_tool", message: `${name} is not served to this client`, toolId: name });
    }
    const progressToken = request.params._meta?.progressToken;
    let sent = 0;
    // Progress must reach the client before the result, after which it would be dropped.
    const notifications: Promise<unknown>[] = [];
    const onProgress =
      progressToken === undefined
        ? undefined
        : (event: ProgressEvent) => {
            sent = nextProgress(sent, event.fraction);
            const params = { progressToken, progress: sent, ...(event.fraction === undefined ? {} : { total: 100 }), message: event.message };
            notifications.push(extra.sendNotification({ method: "notifications/progress", params }).catch(() => undefined));
          };
    const grant = grantFrom(request.params._meta?.[MCP_META.grant]);
    const thisCall: CallOptions = { ...call, signal: extra.signal, ...(onProgress ? { onProgress } : {}), ...(grant ? { approval: grant } : {}) };
    const invoke = async (options: CallOptions) => {
      const outcome = await gate.invoke(name, input, options);
      await Promise.all(notifications.splice(0));
      return outcome;
    };
    const result = await invoke(thisCall);
    if (result.status !== "approval_required") return toCallResult(result, objectOutput.has(name));

    if (options.elicitation === false || !supportsFormElicitation(server) || extra.signal.aborted) return approvalResult(result);
    let answer;
    try {
      answer = await extra.sendRequest(
        {
          method: "elicitation/create",
          params: {
            mode: "form",
            message: approvalText(result),
            requestedSchema: {
              type: "object",
              properties: { approve: { type: "boolean", title: "Approve", description: `Run ${name} as shown above` } },
              required: ["approve"],
            },
          },
        },
        ElicitResultSchema,
        { signal: extra.signal, timeout: elicitationTimeoutMs },
      );
    } catch {
      // No answer (timeout, cancellation, a client that failed): the request stays pending.
      return approvalResult(result);
    }
    if (answer.action === "cancel") return approvalResult(result);
    if (answer.action === "accept" && answer.content?.["approve"] === true) {
      let granted: ApprovalGrant;
      try {
        granted = await gate.approvals.grant(result.requestId, { approver });
      } catch (cause) {
        return errorResult({ status: "denied", code: ToolError.is(cause) ? cause.code : "approval_unknown", message: (cause as Error).message, toolId: name });
      }
      const second = await invoke({ ...thisCall, approval: granted });
      return second.status === "approval_required" ? approvalResult(second) : toCallResult(second, objectOutput.has(name));
    }
    try {
      await gate.approvals.deny(result.requestId, { approver, reason: "declined through MCP elicitation" });
    } catch {
      // Already decided or expired: the refusal below stands either way.
    }
    return errorResult({ status: "denied", code: "approval_denied", message: `the human declined ${name} (request ${result.requestId})`, toolId: name });
  });

  return server;
}

/**
 * Serve the gate over MCP: stdio (the process's stdin/stdout unless given) or Streamable HTTP on
 * 127.0.0.1 (a fresh session, with its own server, per client; DNS-rebinding protection on).
 */
export async function serveMcp<TTool extends AnyToolManifest>(typedGate: Gate<TTool>, options: ServeMcpOptions): Promise<McpServerHandle> {
  const gate = typedGate as unknown as Gate;
  const transport = options.transport;
  if (transport === "stdio" || transport.type === "stdio") {
    const streams: { stdin?: Readable; stdout?: Writable } = transport === "stdio" ? {} : transport;
    const server = createMcpServer(gate, options);
    await server.connect(new StdioServerTransport(streams.stdin, streams.stdout));
    return { transport: "stdio", url: undefined, close: () => server.close() };
  }
  if (transport.type !== "http") throw new ToolError("config_invalid", 'transport must be "stdio", { type: "stdio" } or { type: "http" }');
  return serveHttp(gate, options, transport.port ?? 0, transport.path ?? "/mcp");
}

async function serveHttp(gate: Gate, options: McpServerOptions, port: number, path: string): Promise<McpServerHandle> {
  const sessions = new Map<string, { transport: StreamableHTTPServerTransport; server: Server }>();
  let allowedHosts: string[] = [];
  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    if (new URL(req.url ?? "/", "http://127.0.0.1").pathname !== path) return plain(res, 404, "not found");
    const sessionId = req.headers["mcp-session-id"];
    if (typeof sessionId === "string") {
      const session = sessions.get(sessionId);
      if (!session) return jsonRpcError(res, 404, "unknown or closed session");
      return session.transport.handleRequest(req, res);
    }
    if (req.method !== "POST") return jsonRpcError(res, 400, "no session: send initialize first");
    const server = createMcpServer(gate, options);
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      enableDnsRebindingProtection: true,
      allowedHosts,
      onsessioninitialized: (id) => {
        sessions.set(id, { transport, server });
      },
    });
    transport.onclose = () => {
      if (transport.sessionId) sessions.delete(transport.sessionId);
    };
    await server.connect(transport);
    await transport.handleRequest(req, res);
    if (transport.sessionId === undefined) await server.close();
  };
  const http: HttpServer = createServer((req, res) => {
    handle(req, res).catch(() => {
      if (!res.headersSent) jsonRpcError(res, 500, "internal error");
      else res.end();
    });
  });
  await new Promise<void>((resolve, reject) => {
    http.once("error", reject);
    http.listen(port, "127.0.0.1", () => resolve());
  });
  const bound = (http.address() as AddressInfo).port;
  allowedHosts = [`127.0.0.1:${bound}`, `localhost:${bound}`];
  return {
    transport: "http",
    url: new URL(`http://127.0.0.1:${bound}${path}`),
    async close() {
      await Promise.all([...sessions.values()].map((s) => s.server.close().catch(() => undefined)));
      sessions.clear();
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}

/**
 * Manifest facts as MCP annotations. Hints describe; the gate enforces.
 *
 * A tool with untrusted output declares no `outputSchema`, and its results carry no
 * `structuredContent`: a client that hands `structuredContent` to the model (many prefer it to the
 * text) would hand over someone else's words outside the fence. The fenced text is the whole result.
 */
export function toMcpTool(d: ToolDescriptor): McpTool {
  const outputSchema = d.outputSchema["type"] === "object" && !d.untrustedOutput ? (bareSchema(d.outputSchema) as McpTool["outputSchema"]) : undefined;
  return {
    name: d.id,
    title: d.title,
    description: d.description,
    inputSchema: { type: "object", ...bareSchema(d.inputSchema) } as McpTool["inputSchema"],
    ...(outputSchema ? { outputSchema } : {}),
    annotations: {
      title: d.title,
      readOnlyHint: d.effect === "none" || d.effect === "read",
      destructiveHint: d.effect === "destructive",
      idempotentHint: d.idempotent,
      openWorldHint: d.provider !== null,
    },
    _meta: {
      [MCP_META.tool]: {
        effect: d.effect,
        risk: d.risk,
        approval: d.approval,
        actionType: d.actionType,
        untrustedOutput: d.untrustedOutput,
        sovereignty: d.sovereignty,
      },
    },
  };
}

function toCallResult(result: Exclude<InvokeResult, ApprovalRequiredResult>, structured: boolean): CallToolResult {
  if (result.status !== "ok") return errorResult(result);
  const output = result.output;
  return {
    content: [{ type: "text", text: result.content }],
    // `structured` only for tools that declare an output schema: never one with untrusted output (see toMcpTool).
    ...(structured && isRecord(output) ? { structuredContent: output } : {}),
    _meta: {
      [MCP_META.result]: {
        status: "ok",
        toolId: result.toolId,
        invocationId: result.invocationId,
        untrusted: result.untrusted,
        findings: result.findings.length,
        replayed: result.replayed,
      },
    },
  };
}

function approvalResult(result: ApprovalRequiredResult): CallToolResult {
  return { isError: true, content: [{ type: "text", text: approvalText(result) }], _meta: { [MCP_META.approval]: approvalFacts(result) } };
}

function errorResult(
  result: Parameters<typeof refusalFacts>[0] | { status: "denied" | "error"; code: string; message: string; toolId: string },
): CallToolResult {
  const full = "invocationId" in result;
  return {
    isError: true,
    content: [{ type: "text", text: full ? refusalText(result) : `${result.code}: ${result.message}` }],
    _meta: { [MCP_META.error]: full ? refusalFacts(result) : { ...result, boundary: "pre_effect_refusal" } },
  };
}

/** MCP progress must increase: fractions map onto 0–100, plain messages step by one. */
function nextProgress(previous: number, fraction: number | undefined): number {
  if (fraction !== undefined && Number.isFinite(fraction)) {
    const scaled = Math.min(100, Math.max(0, fraction * 100));
    if (scaled > previous) return scaled;
  }
  return previous + 1;
}

function supportsFormElicitation(server: Server): boolean {
  const elicitation = server.getClientCapabilities()?.elicitation as Record<string, unknown> | undefined;
  // An empty capability object predates modes and means form.
  return elicitation !== undefined && (elicitation["form"] !== undefined || Object.keys(elicitation).length === 0);
}

function grantFrom(raw: unknown): ApprovalGrant | undefined {
  if (!isRecord(raw)) return undefined;
  const { requestId, token, toolId, expiresAt } = raw;
  if (typeof requestId !== "string" || typeof token !== "string" || typeof toolId !== "string" || typeof expiresAt !== "string") return undefined;
  return { requestId, token, toolId, expiresAt };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

function plain(res: ServerResponse, status: number, text: string): void {
  res.writeHead(status, { "content-type": "text/plain" }).end(text);
}

function jsonRpcError(res: ServerResponse, status: number, message: string): void {
  res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify({ jsonrpc: "2.0", error: { code: -32000, message }, id: null }));
}
