import type { Readable, Writable } from "node:stream";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { CallToolRequestSchema, ListToolsRequestSchema, type CallToolResult, type Tool as McpTool } from "@modelcontextprotocol/sdk/types.js";
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
import type { McpClient } from "@toolgate/core/operator";
import { editableOf } from "../shared/approval-broker.js";
import { approvalFacts, approvalText, editedFacts, refusalFacts, refusalText } from "../shared/describe-result.js";
import { bareSchema, profileReaches, reachableTools, type ExposeOptions } from "../shared/reachable.js";
import { askThroughElicitation } from "./elicit.js";
import { serveHttp, type HttpServerOptions } from "./http.js";
import type { ImportedMcpServer } from "./import-options.js";
import { checkToolsPollMs, serveLogging, watchServedTools } from "./live.js";
import { checkProvenanceOption, connectionSession, type McpProvenanceOption } from "./provenance.js";

/** `_meta` keys this server reads and writes. */
export const MCP_META = {
  /** On a tools/list entry: the manifest facts an operator cares about. */
  tool: "io.toolgate/tool",
  /** On a result: status, invocation id, untrusted flag. */
  result: "io.toolgate/result",
  /** On an `approval_required` result: request id, preview, expiry, what an approver may edit. */
  approval: "io.toolgate/approval",
  /** On an `ok` result of a call an approver edited before it ran: request id, version, changed JSON Pointers. */
  edited: "io.toolgate/edited",
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
   * The registered MCP client these calls come from (`gate.authority.clients`); over HTTP, the one
   * whose token opened the session. Elicitation is used only for a client whose record an operator
   * enabled it for (`toolgate mcp-clients add NAME --elicitation`): the decision then records that
   * client (`mcp:<clientId>`) as the approver. Without one, approval comes back as a result.
   */
  readonly client?: McpClient;
  /** `false`: never ask through elicitation, even a client whose record allows it. Off by default for every other client. */
  readonly elicitation?: boolean;
  /** How long to wait for the human's answer to an elicitation; default 10 minutes. */
  readonly elicitationTimeoutMs?: number;
  /**
   * How often (ms) a session looks for a change in the tools it serves (a kill switch thrown or
   * lifted, an imported tool's approval revoked or given again) and sends
   * `notifications/tools/list_changed`; default 5000, 0 never, else 10 to 3600000 (`config_invalid` otherwise).
   */
  readonly toolsPollMs?: number;
  /**
   * Imported MCP servers (`importMcpServer` handles) among the gate's families: a tool of theirs whose
   * approval is not current (its definition drifted from the approved one as last seen, or the
   * operator revoked it) leaves tools/list, and comes back once re-approved; each change is
   * announced as above. Called anyway, such a tool is refused by its import (`provider_rejected`).
   */
  readonly imported?: readonly Pick<ImportedMcpServer, "unapproved">[];
  /**
   * One provenance session per connection (`gate.openSession`), passed on every call it makes;
   * default on, with no trusted text. `{ trusted }` declares what the host vouches for, for every
   * connection or per connection; `false` serves calls outside any session. See `McpProvenanceOption`.
   */
  readonly provenance?: McpProvenanceOption;
}

/** Where `serveMcp` listens. HTTP binds 127.0.0.1 only. */
export type McpTransportOption =
  | "stdio"
  | { readonly type: "stdio"; readonly stdin?: Readable; readonly stdout?: Writable }
  | { readonly type: "http"; readonly port?: number; readonly path?: string };

/**
 * Over stdio the calls run as the options say (or as the named `client`'s record says); over HTTP
 * each client authenticates with its own bearer token and runs under its record's profile
 * (resolved in `profiles`), principal and tenant.
 */
export type ServeMcpOptions =
  | (McpServerOptions & { readonly transport: Exclude<McpTransportOption, { readonly type: "http" }> })
  | (HttpServerOptions & { readonly transport: Extract<McpTransportOption, { readonly type: "http" }> });

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
 * - `approval_required` → an `isError` result carrying the preview and the stable request id in
 *   text and in `_meta["io.toolgate/approval"]` (with `editable`: what an approver may change);
 *   once an operator approves that request, the same call made again runs (once) — an approver's
 *   edit of it, if they made one: its text then starts with the gate's notice, and
 *   `_meta["io.toolgate/edited"]` names the request, version and changed paths. Only for a
 *   `client` whose record an operator enabled elicitation for is the human asked in band, edits
 *   included (see `askThroughElicitation`);
 * - `denied` / `error` → an `isError` result with the typed code (`_meta["io.toolgate/error"]`).
 * A request's progress token gets progress notifications; MCP cancellation aborts the gate's signal.
 * A grant obtained out of band may be passed back in the request's `_meta["io.toolgate/grant"]`.
 * `tools/list` leaves out tools an operator switched off, and a change in the served tools is sent as
 * `notifications/tools/list_changed` (see `toolsPollMs`); `logging/setLevel` sets the session's log level.
 */
export function createMcpServer<TTool extends AnyToolManifest>(typedGate: Gate<TTool>, options: McpServerOptions): Server {
  const gate = typedGate as unknown as Gate;
  if ((options as { approver?: unknown }).approver !== undefined) {
    throw new ToolError(
      "config_invalid",
      "serveMcp no longer takes a typed approver: decisions are made by operators (console, toolgate approvals approve), or in band by a client an operator enabled elicitation for (toolgate mcp-clients add NAME --elicitation)",
    );
  }
  const client = options.client;
  if (client && (client.principal !== options.principal || client.tenant !== options.tenant || client.profile !== options.profile.name)) {
    throw new ToolError(
      "config_invalid",
      `MCP client ${client.name} runs as its record says: profile ${client.profile}, principal ${client.principal}, tenant ${client.tenant}`,
    );
  }
  const toolsPollMs = checkToolsPollMs(options.toolsPollMs);
  const imported = checkImported(options.imported);
  // One connection, one agent run: the session is this server's, never named by a request; a server
  // connected again (a second client on the same object) starts a new one.
  const connection = { profile: options.profile, principal: options.principal, tenant: options.tenant, ...(client ? { client } : {}) };
  const callFor = (session: ReturnType<typeof connectionSession>): CallOptions => ({
    principal: options.principal,
    tenant: options.tenant,
    profile: options.profile,
    ...(session ? { session } : {}),
  });
  let call = callFor(connectionSession(gate, options.provenance, connection));
  let connections = 0;
  // Served by visibility and profile; a tool an operator switched off, or an imported tool not
  // approved now, is left out of the list but still goes to the gate when called, which refuses it
  // (tool_disabled, provider_rejected) and journals that.
  const servedNow = () => new Map<string, ToolDescriptor>(reachableTools(gate, options.profile, options).map((d) => [d.id, d]));
  const listed = async (): Promise<McpTool[]> => {
    const off = new Set((await gate.authority.switches.list()).map((s) => s.target));
    for (const server of imported) for (const id of server.unapproved()) off.add(`tool:${id}`);
    return [...servedNow().values()].filter((d) => !off.has(`tool:${d.id}`) && !off.has(`family:${d.id.slice(0, d.id.indexOf("."))}`)).map(toMcpTool);
  };
  const elicitationTimeoutMs = options.elicitationTimeoutMs ?? DEFAULT_ELICITATION_TIMEOUT_MS;

  const server = new Server(
    { name: options.name ?? "toolgate", version: options.version ?? "0.1.0" },
    { capabilities: { tools: { listChanged: true }, logging: {} } },
  );
  const log = serveLogging(server);
  const initialized = server.oninitialized;
  server.oninitialized = () => {
    if (++connections > 1) call = callFor(connectionSession(gate, options.provenance, connection));
    initialized?.();
  };
  watchServedTools(server, listed, toolsPollMs, log);

  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: await listed() }));

  server.setRequestHandler(CallToolRequestSchema, async (request, extra): Promise<CallToolResult> => {
    const name = request.params.name;
    const input = request.params.arguments ?? {};
    const known = gate.registry.describe(name);
    const served = servedNow();
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
    const structured = (d: ToolDescriptor | undefined) => d !== undefined && toMcpTool(d).outputSchema !== undefined;
    const result = await invoke(thisCall);
    if (result.status === "denied" || result.status === "error")
      log("warning", { event: "call_refused", toolId: name, status: result.status, code: result.code });
    if (result.status !== "approval_required") return toCallResult(result, structured(served.get(name)));
    const pending = result.reason === "call" ? await gate.approvals.get(result.requestId).catch(() => undefined) : undefined;

    const asked = await askThroughElicitation(
      {
        gate,
        server,
        client: options.client,
        enabled: options.elicitation,
        timeoutMs: elicitationTimeoutMs,
        signal: extra.signal,
        sendRequest: extra.sendRequest,
      },
      result,
      pending,
    );
    if (asked.kind === "pending") return approvalResult(result, editableOf(pending));
    if (asked.kind === "refused") return errorResult({ status: "denied", code: asked.code, message: asked.message, toolId: name });
    const second = await invoke({ ...thisCall, approval: asked.grant });
    if (second.status !== "approval_required") return toCallResult(second, structured(served.get(name)));
    return approvalResult(second, second.reason === "call" ? editableOf(await gate.approvals.get(second.requestId).catch(() => undefined)) : false);
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
    const server = createMcpServer(gate, options as McpServerOptions);
    await server.connect(new StdioServerTransport(streams.stdin, streams.stdout));
    return { transport: "stdio", url: undefined, close: () => server.close() };
  }
  if (transport.type !== "http") throw new ToolError("config_invalid", 'transport must be "stdio", { type: "stdio" } or { type: "http" }');
  // Checked before listening: over HTTP each session's server is made only when a client comes.
  checkToolsPollMs(options.toolsPollMs);
  checkImported(options.imported);
  checkProvenanceOption(options.provenance);
  return serveHttp(gate, options as HttpServerOptions, transport.port ?? 0, transport.path ?? "/mcp", createMcpServer);
}

function checkImported(imported: unknown): readonly Pick<ImportedMcpServer, "unapproved">[] {
  if (imported === undefined) return [];
  if (!Array.isArray(imported) || !imported.every((i) => typeof (i as { unapproved?: unknown } | null)?.unapproved === "function"))
    throw new ToolError("config_invalid", "imported must be a list of importMcpServer handles");
  return imported as readonly Pick<ImportedMcpServer, "unapproved">[];
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
  // The text (`content`) carries the gate's notice of an approver's edit; `_meta` the facts, for clients that show `structuredContent`.
  const edited = editedFacts(result);
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
      ...(edited ? { [MCP_META.edited]: edited } : {}),
    },
  };
}

/** The request and what to do next: the id is stable, so an operator's approval reaches the retry. */
function approvalResult(result: ApprovalRequiredResult, editable: false | readonly string[]): CallToolResult {
  const next = `Once an operator approves request ${result.requestId} (in the console, or toolgate approvals approve ${result.requestId}), make this same call again with the same input: it runs once (as the approver may have changed it; the result then says what changed).`;
  return {
    isError: true,
    content: [
      { type: "text", text: approvalText(result) },
      { type: "text", text: next },
    ],
    _meta: { [MCP_META.approval]: approvalFacts(result, editable) },
  };
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

function grantFrom(raw: unknown): ApprovalGrant | undefined {
  if (!isRecord(raw)) return undefined;
  const { requestId, token, toolId, expiresAt } = raw;
  if (typeof requestId !== "string" || typeof token !== "string" || typeof toolId !== "string" || typeof expiresAt !== "string") return undefined;
  return { requestId, token, toolId, expiresAt };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}
