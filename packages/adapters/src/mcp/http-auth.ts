/**
 * Bearer authentication for the MCP endpoint over HTTP, as the MCP authorization spec has a
 * resource server do it: `Authorization: Bearer <token>` on every request, a 401 with
 * `WWW-Authenticate: Bearer resource_metadata="…"` otherwise, and the protected-resource metadata
 * document (RFC 9728) that names the resource. Tokens are issued by an operator
 * (`toolgate mcp-clients add NAME --profile P`), not by an OAuth authorization server.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Gate } from "@toolgate/core";
import type { McpClient } from "@toolgate/core/operator";

/** RFC 9728's well-known path; the resource's own path is appended to it (section 3.1). */
export const PROTECTED_RESOURCE_METADATA_PATH = "/.well-known/oauth-protected-resource";
/** The plain-text page `resource_documentation` points at: how a client gets a token here. */
export const RESOURCE_DOCUMENTATION_PATH = "/.well-known/toolgate-mcp-clients";

/** Where the endpoint lives: its origin and path, e.g. `http://127.0.0.1:41234` and `/mcp`. */
export interface Endpoint {
  readonly origin: string;
  readonly path: string;
}

/** The outcome of authenticating one request. */
export type Authenticated =
  { readonly ok: true; readonly client: McpClient } | { readonly ok: false; readonly status: number; readonly challenge: string; readonly message: string };

const TOKEN68 = /^[A-Za-z0-9\-._~+/]+=*$/;

/**
 * Who sent this request, from its `Authorization: Bearer` header only (RFC 6750 section 2.1). A
 * token in the query string (`access_token`, or anything that looks like a client token) is refused
 * whatever the header says: URLs end up in logs and histories. The token is looked up by its hash
 * in the journal (`gate.authority.clients.authenticate`), so no comparison leaks its bytes by time.
 */
export async function authenticateRequest(gate: Gate, req: IncomingMessage, endpoint: Endpoint): Promise<Authenticated> {
  const metadata = metadataUrl(endpoint);
  const url = new URL(req.url ?? "/", endpoint.origin);
  if (url.searchParams.has("access_token") || /tgc_/i.test(decodeSafely(url.search))) {
    return refuse(400, metadata, "invalid_request", "a token is accepted only in the Authorization header, never in the URL");
  }
  const header = req.headers.authorization;
  if (typeof header !== "string" || header === "") return refuse(401, metadata, undefined, "this MCP endpoint needs Authorization: Bearer <token>");
  const scheme = /^Bearer(?: +|$)/i.exec(header);
  if (!scheme) return refuse(401, metadata, undefined, "this MCP endpoint accepts only Authorization: Bearer <token>");
  const token = header.slice(scheme[0].length);
  const client = TOKEN68.test(token) ? await gate.authority.clients.authenticate(token) : undefined;
  if (!client || client.status !== "active") return refuse(401, metadata, "invalid_token", "the token is unknown, or its client was removed");
  return { ok: true, client };
}

/** The RFC 9728 metadata document's URL for this endpoint (the path-suffixed form of section 3.1). */
export function metadataUrl(endpoint: Endpoint): string {
  return `${endpoint.origin}${PROTECTED_RESOURCE_METADATA_PATH}${endpoint.path === "/" ? "" : endpoint.path}`;
}

/**
 * The protected-resource metadata (RFC 9728 section 2). `authorization_servers` is left out (the
 * field is optional there): no OAuth authorization server issues tokens for this resource, an
 * operator does, and listing none keeps clients from starting an OAuth flow that cannot succeed.
 * `resource_documentation` says how a token is obtained instead.
 */
export function protectedResourceMetadata(endpoint: Endpoint): Record<string, unknown> {
  return {
    resource: `${endpoint.origin}${endpoint.path}`,
    bearer_methods_supported: ["header"],
    resource_name: "Toolgate MCP server",
    resource_documentation: `${endpoint.origin}${RESOURCE_DOCUMENTATION_PATH}`,
  };
}

const DOCUMENTATION = [
  "This MCP endpoint serves governed tools. Every request needs Authorization: Bearer <token>.",
  "There is no OAuth authorization server: an operator issues each client its own token with",
  "  toolgate mcp-clients add NAME --profile PROFILE [--principal ID] [--tenant ID]",
  "which prints the token once. Each client's calls run under its own profile, principal and tenant.",
  "Calls that need approval return approval_required with a request id; once an operator approves it,",
  "the same call made again runs once.",
  "",
].join("\n");

/** Answer the unauthenticated discovery paths; false when `pathname` is not one of them. */
export function serveDiscovery(pathname: string, req: IncomingMessage, res: ServerResponse, endpoint: Endpoint): boolean {
  const metadataPaths = [PROTECTED_RESOURCE_METADATA_PATH, new URL(metadataUrl(endpoint)).pathname];
  const isMetadata = metadataPaths.includes(pathname);
  if (!isMetadata && pathname !== RESOURCE_DOCUMENTATION_PATH) return false;
  if (req.method !== "GET" && req.method !== "HEAD") {
    res.writeHead(405, { allow: "GET, HEAD", "content-type": "text/plain" }).end("method not allowed");
    return true;
  }
  const [type, body] = isMetadata ? ["application/json", JSON.stringify(protectedResourceMetadata(endpoint))] : ["text/plain; charset=utf-8", DOCUMENTATION];
  res.writeHead(200, { "content-type": type, "cache-control": "no-store" }).end(req.method === "HEAD" ? undefined : body);
  return true;
}

/** Write a refusal: the status, its `WWW-Authenticate` challenge and a JSON-RPC error body. */
export function writeRefusal(res: ServerResponse, refusal: Extract<Authenticated, { ok: false }>): void {
  res
    .writeHead(refusal.status, { "content-type": "application/json", "www-authenticate": refusal.challenge, "cache-control": "no-store" })
    .end(JSON.stringify({ jsonrpc: "2.0", error: { code: -32001, message: refusal.message }, id: null }));
}

function refuse(status: number, metadata: string, error: "invalid_request" | "invalid_token" | undefined, message: string): Authenticated {
  // RFC 6750 section 3.1: no error code when the request carried no authentication at all.
  const params = error ? [`error="${error}"`, `error_description="${message}"`] : [];
  return { ok: false, status, challenge: `Bearer ${[...params, `resource_metadata="${metadata}"`].join(", ")}`, message };
}

function decodeSafely(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}
