import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { ToolError, type Gate, type Profile } from "@toolgate/core";
import { authenticateRequest, serveDiscovery, writeRefusal, type Endpoint } from "./http-auth.js";
import type { McpServerHandle, McpServerOptions } from "./server.js";

/** Profiles by name, as a composition defines them: a list, a name → profile map, or a resolver. */
export type McpProfiles = readonly Profile[] | Readonly<Record<string, Profile>> | ((name: string) => Profile | undefined);

/** What the HTTP endpoint needs besides the gate: how to build one client's server. */
export type HttpServerOptions = Omit<McpServerOptions, "profile" | "principal" | "tenant" | "client"> & {
  /** Each authenticated client's profile, looked up by the name in its record. */
  readonly profiles: McpProfiles;
};

type CreateServer = (gate: Gate, options: McpServerOptions) => Server;

/** The profile named `name`, wherever `profiles` keeps it. */
export function profileNamed(profiles: McpProfiles, name: string): Profile | undefined {
  if (typeof profiles === "function") return profiles(name);
  if (Array.isArray(profiles)) return (profiles as readonly Profile[]).find((p) => p.name === name);
  const byName = profiles as Readonly<Record<string, Profile>>;
  return Object.prototype.hasOwnProperty.call(byName, name) ? byName[name] : Object.values(byName).find((p) => p.name === name);
}

/**
 * Streamable HTTP on 127.0.0.1. Every request is authenticated by its bearer token (a registered
 * MCP client, `gate.authority.clients`); a session belongs to the client that opened it and runs
 * under that client's profile, principal and tenant; a request with another client's token (or
 * after the client was removed) does not reach it. The discovery documents need no token.
 */
export async function serveHttp(gate: Gate, options: HttpServerOptions, port: number, path: string, createMcpServer: CreateServer): Promise<McpServerHandle> {
  if (options.profiles === undefined || options.profiles === null) {
    throw new ToolError(
      "config_invalid",
      "over HTTP each MCP client authenticates with its own token and runs under the profile its record names: pass `profiles` (tokens come from `toolgate mcp-clients add NAME --profile P`)",
    );
  }
  const { profiles, ...serverOptions } = options;
  const sessions = new Map<string, { transport: StreamableHTTPServerTransport; server: Server; clientId: string }>();
  let endpoint: Endpoint = { origin: "http://127.0.0.1", path };
  let allowedHosts: string[] = [];

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    // DNS rebinding: a page elsewhere that resolves its own name to 127.0.0.1 sends its own Host.
    if (!allowedHosts.includes(req.headers.host ?? "")) return jsonRpcError(res, 403, "forbidden host");
    // The resource as this client reached it (127.0.0.1 or localhost): RFC 9728 metadata must name it.
    const here: Endpoint = { origin: `http://${req.headers.host}`, path: endpoint.path };
    const pathname = new URL(req.url ?? "/", here.origin).pathname;
    if (serveDiscovery(pathname, req, res, here)) return;
    if (pathname !== path) return plain(res, 404, "not found");
    const auth = await authenticateRequest(gate, req, here);
    if (!auth.ok) return writeRefusal(res, auth);
    const client = auth.client;
    const sessionId = req.headers["mcp-session-id"];
    if (typeof sessionId === "string") {
      const session = sessions.get(sessionId);
      // Another client's session is as unknown as a closed one: no hint that it exists.
      if (!session || session.clientId !== client.id) return jsonRpcError(res, 404, "unknown or closed session");
      return session.transport.handleRequest(req, res);
    }
    if (req.method !== "POST") return jsonRpcError(res, 400, "no session: send initialize first");
    const profile = profileNamed(profiles, client.profile);
    if (!profile) return jsonRpcError(res, 403, `this server has no profile named ${JSON.stringify(client.profile)} for client ${client.name}`);
    const server = createMcpServer(gate, { ...serverOptions, profile, principal: client.principal, tenant: client.tenant, client });
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      enableDnsRebindingProtection: true,
      allowedHosts,
      onsessioninitialized: (id) => {
        sessions.set(id, { transport, server, clientId: client.id });
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
  endpoint = { origin: `http://127.0.0.1:${bound}`, path };
  return {
    transport: "http",
    url: new URL(`${endpoint.origin}${path}`),
    async close() {
      await Promise.all([...sessions.values()].map((s) => s.server.close().catch(() => undefined)));
      sessions.clear();
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}

function plain(res: ServerResponse, status: number, text: string): void {
  res.writeHead(status, { "content-type": "text/plain" }).end(text);
}

function jsonRpcError(res: ServerResponse, status: number, message: string): void {
  res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify({ jsonrpc: "2.0", error: { code: -32000, message }, id: null }));
}
