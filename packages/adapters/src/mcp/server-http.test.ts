import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { discoverOAuthProtectedResourceMetadata } from "@modelcontextprotocol/sdk/client/auth.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema, type CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { ToolError, type Gate } from "@toolgate/core";
import { afterEach, describe, expect, it } from "vitest";
import { INITIALIZE, MCP_POST_HEADERS, bearer, rawRequest } from "../fixtures/mcp-auth.js";
import { createNotesGate, profiles } from "../fixtures/notes-family.js";
import { MCP_META, createMcpServer, serveMcp, type McpServerHandle } from "./server.js";

const cleanup: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  await Promise.all(cleanup.splice(0).map((f) => f().catch(() => undefined)));
});

interface Served {
  gate: Gate;
  store: ReturnType<typeof createNotesGate>["store"];
  server: McpServerHandle;
  url: URL;
  /** Registers a client as the owner would (`toolgate mcp-clients add`); its token. */
  add(name: string, o?: { profile?: "writer" | "reader"; principal?: string; tenant?: string; elicitation?: boolean }): Promise<{ token: string; id: string }>;
  /** The SDK's own client with that token (none: no Authorization header at all). */
  connect(token: string | undefined, answer?: () => { action: "accept"; content: Record<string, unknown> }): Promise<Client>;
}

async function serve(): Promise<Served> {
  const notes = createNotesGate();
  const gate = notes.gate as unknown as Gate;
  const server = await serveMcp(gate, { profiles, transport: { type: "http" } });
  cleanup.push(() => server.close());
  return {
    gate,
    store: notes.store,
    server,
    url: server.url!,
    async add(name, o = {}) {
      const { client, token } = await gate.authority.clients.add(
        name,
        { profile: o.profile ?? "writer", principal: o.principal ?? `${name}-agent`, tenant: o.tenant ?? "tests", elicitation: o.elicitation ?? false },
        gate.authority.owner(),
      );
      return { token, id: client.id };
    },
    async connect(token, answer) {
      const client = new Client({ name: "t", version: "1" }, { capabilities: answer ? { elicitation: { form: {} } } : {} });
      if (answer) client.setRequestHandler(ElicitRequestSchema, answer);
      await client.connect(new StreamableHTTPClientTransport(server.url!, token === undefined ? {} : bearer(token)));
      cleanup.push(() => client.close());
      return client;
    },
  };
}

const call = async (client: Client, name: string, args: Record<string, unknown>, meta?: Record<string, unknown>) =>
  (await client.callTool({ name, arguments: args, ...(meta ? { _meta: meta } : {}) })) as CallToolResult;
const metaOf = (r: CallToolResult, key: string) => r._meta?.[key] as Record<string, unknown> | undefined;
const requestIdOf = (r: CallToolResult) => String(metaOf(r, MCP_META.approval)?.["requestId"]);
const post = (url: URL, headers: Record<string, string>, body = INITIALIZE) =>
  rawRequest(url, { method: "POST", headers: { ...MCP_POST_HEADERS, ...headers }, body });

describe("serveMcp over HTTP: every request carries a registered client's bearer token", () => {
  it("no Authorization header: 401 with the challenge naming the resource metadata (the old server answered 200)", async () => {
    const s = await serve();
    const metadata = `${s.url.origin}/.well-known/oauth-protected-resource/mcp`;
    for (const method of ["POST", "GET", "DELETE"]) {
      const r = method === "POST" ? await post(s.url, {}) : await rawRequest(s.url, { method, headers: { accept: "text/event-stream" } });
      expect(r.status, method).toBe(401);
      expect(r.headers["www-authenticate"]).toBe(`Bearer resource_metadata="${metadata}"`);
      expect(JSON.parse(r.body)).toMatchObject({ jsonrpc: "2.0", error: { code: -32001 } });
    }
  });

  it("an unknown, altered, removed or non-Bearer credential: 401 (invalid_token when a token was given)", async () => {
    const s = await serve();
    const { token } = await s.add("alice");
    const altered = `${token.slice(0, -2)}${token.endsWith("AA") ? "BB" : "AA"}`;
    for (const value of [`Bearer ${altered}`, "Bearer tgc_nope", `Bearer ${token} extra`, `Bearer ${token}\u00a0`]) {
      const r = await post(s.url, { authorization: value });
      expect(r.status, value).toBe(401);
      expect(r.headers["www-authenticate"]).toMatch(
        /^Bearer error="invalid_token", error_description="[^"]+", resource_metadata="http:\/\/127\.0\.0\.1:\d+\/\.well-known\/oauth-protected-resource\/mcp"$/,
      );
    }
    for (const value of [`Basic ${Buffer.from(`x:${token}`).toString("base64")}`, token, `Token ${token}`]) {
      const r = await post(s.url, { authorization: value });
      expect(r.status, value).toBe(401);
      expect(r.headers["www-authenticate"]).not.toContain("error=");
    }
    expect((await post(s.url, { authorization: `bearer ${token}` })).status).toBe(200); // the scheme is case-insensitive
    await s.gate.authority.clients.remove("alice", s.gate.authority.owner());
    const removed = await post(s.url, { authorization: `Bearer ${token}` });
    expect(removed.status).toBe(401);
    expect(removed.headers["www-authenticate"]).toContain('error="invalid_token"');
  });

  it("the issue's route: the SDK's client without a token, auto-accepting elicitation, cannot connect, and nothing runs", async () => {
    const s = await serve();
    await expect(s.connect(undefined, () => ({ action: "accept", content: { approve: true } }))).rejects.toThrow();
    expect(s.store.writes).toBe(0);
    expect(await s.gate.approvals.list({ status: ["pending", "granted", "consumed"] })).toEqual([]);
  });

  it("a token in the URL is refused (400 invalid_request), even beside a valid header", async () => {
    const s = await serve();
    const { token } = await s.add("alice");
    for (const query of [`?access_token=${token}`, `?token=${token}`, `?x=${encodeURIComponent(token)}`, "?access_token="]) {
      const r = await post(new URL(`${s.url.href}${query}`), { authorization: `Bearer ${token}` });
      expect(r.status, query).toBe(400);
      expect(r.headers["www-authenticate"]).toContain('error="invalid_request"');
      expect(r.body).not.toContain(token);
    }
  });

  it("the protected-resource metadata (RFC 9728) needs no token and the SDK's discovery reads it", async () => {
    const s = await serve();
    const metadata = await discoverOAuthProtectedResourceMetadata(s.url);
    expect(metadata).toEqual({
      resource: s.url.href,
      bearer_methods_supported: ["header"],
      resource_name: "Toolgate MCP server",
      resource_documentation: `${s.url.origin}/.well-known/toolgate-mcp-clients`,
    });
    expect(metadata.authorization_servers).toBeUndefined();
    const root = await rawRequest(`${s.url.origin}/.well-known/oauth-protected-resource`);
    expect(JSON.parse(root.body)).toEqual(metadata);
    const docs = await rawRequest(metadata.resource_documentation!);
    expect(docs.status).toBe(200);
    expect(docs.body).toContain("toolgate mcp-clients add NAME --profile PROFILE");
    expect((await rawRequest(`${s.url.origin}/.well-known/oauth-protected-resource`, { method: "POST", body: "{}" })).status).toBe(405);
  });

  it("a foreign Host header is refused on every path, discovery included; the server binds loopback", async () => {
    const s = await serve();
    const { token } = await s.add("alice");
    expect(s.url.hostname).toBe("127.0.0.1");
    const evil = { host: "evil.example" };
    expect((await post(s.url, { ...evil, authorization: `Bearer ${token}` })).status).toBe(403);
    expect((await rawRequest(`${s.url.origin}/.well-known/oauth-protected-resource/mcp`, { headers: evil })).status).toBe(403);
  });

  it("each client runs as its own record: its principal, tenant and profile", async () => {
    const s = await serve();
    const alice = await s.add("alice", { profile: "writer", principal: "alice-agent", tenant: "acme" });
    const bob = await s.add("bob", { profile: "reader", principal: "bob-agent", tenant: "globex" });
    const a = await s.connect(alice.token);
    const b = await s.connect(bob.token);
    expect((await b.listTools()).tools.map((t) => t.name).sort()).toEqual(["notes.read_note", "notes.stats", "notes.word_count"]);
    expect((await a.listTools()).tools.map((t) => t.name)).toContain("notes.add_note");
    const refused = await call(b, "notes.add_note", { id: "x", text: "y" });
    expect(metaOf(refused, MCP_META.error)).toMatchObject({ code: "permission_denied" });
    const asked = await call(a, "notes.add_note", { id: "x", text: "y" });
    const request = await s.gate.approvals.get(requestIdOf(asked));
    expect(request).toMatchObject({ principal: "alice-agent", tenant: "acme", toolId: "notes.add_note" });
    expect(s.store.writes).toBe(0);
  });

  it("a client's server runs only as its record says (a server built for it under another principal, tenant or profile is refused)", async () => {
    const s = await serve();
    await s.add("alice", { principal: "alice-agent", tenant: "acme" });
    const [client] = await s.gate.authority.clients.list();
    const base = { profile: profiles.writer, principal: "alice-agent", tenant: "acme", client: client! };
    expect(() => createMcpServer(s.gate, base)).not.toThrow();
    for (const other of [{ principal: "root" }, { tenant: "globex" }, { profile: profiles.reader }]) {
      expect(() => createMcpServer(s.gate, { ...base, ...other })).toThrow(expect.objectContaining({ code: "config_invalid" }));
    }
    // The old typed approver name is refused outright, not silently recorded.
    expect(() => createMcpServer(s.gate, { ...base, approver: "mcp-elicitation" } as never)).toThrow(expect.objectContaining({ code: "config_invalid" }));
  });

  it("a session belongs to the client that opened it; a removed client is cut off on its next request", async () => {
    const s = await serve();
    const alice = await s.add("alice");
    const bob = await s.add("bob");
    const transport = new StreamableHTTPClientTransport(s.url, bearer(alice.token));
    const a = new Client({ name: "a", version: "1" });
    await a.connect(transport);
    cleanup.push(() => a.close());
    const list = JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/list", params: {} });
    const hijack = await post(
      s.url,
      { authorization: `Bearer ${bob.token}`, "mcp-session-id": transport.sessionId!, "mcp-protocol-version": "2025-06-18" },
      list,
    );
    expect(hijack.status).toBe(404);
    expect(hijack.body).not.toContain("notes.");
    expect((await a.listTools()).tools.length).toBeGreaterThan(0);
    await s.gate.authority.clients.remove("alice", s.gate.authority.owner());
    await expect(a.listTools()).rejects.toThrow();
  });

  it("a client whose profile this server does not have is refused; serving HTTP without profiles is a config error", async () => {
    const s = await serve();
    const { token } = await s.gate.authority.clients.add("eve", { profile: "nowhere" }, s.gate.authority.owner());
    const refused = await post(s.url, { authorization: `Bearer ${token}` });
    expect(refused.status).toBe(403);
    expect(refused.body).toContain("nowhere");
    const { gate } = createNotesGate();
    await expect(serveMcp(gate, { profile: profiles.writer, principal: "a", tenant: "t", transport: { type: "http" } } as never)).rejects.toSatisfy(
      (e: unknown) => ToolError.is(e, "config_invalid"),
    );
  });
});

describe("serveMcp over HTTP: approval without elicitation", () => {
  it("retries return one stable request; after an operator approves it the same call runs once; other input does not", async () => {
    const s = await serve();
    const client = await s.connect((await s.add("alice")).token);
    const input = { id: "n1", text: "hello" };
    const first = await call(client, "notes.add_note", input);
    const id = requestIdOf(first);
    expect(id).toMatch(/^apr_/);
    expect((first.content as { text: string }[]).map((c) => c.text).join("\n")).toContain(id);
    for (let i = 0; i < 3; i++) expect(requestIdOf(await call(client, "notes.add_note", input))).toBe(id);
    expect(await s.gate.approvals.list({ status: ["pending"] })).toHaveLength(1);

    const decided = await s.gate.approvals.grant(id, { by: s.gate.authority.owner() });
    expect(decided.status).toBe("granted");
    const other = await call(client, "notes.add_note", { id: "n1", text: "evil" });
    expect(metaOf(other, MCP_META.approval)?.["requestId"]).not.toBe(id);
    expect(s.store.writes).toBe(0);

    const ran = await call(client, "notes.add_note", input);
    expect(ran.isError).toBeFalsy();
    expect(s.store.notes.get("n1")).toBe("hello");
    expect(s.store.writes).toBe(1);
    // Spent: the next identical call asks again instead of running twice.
    const again = await call(client, "notes.add_note", input);
    expect(metaOf(again, MCP_META.approval)?.["requestId"]).not.toBe(id);
    expect(s.store.writes).toBe(1);
    expect(await s.gate.approvals.get(id)).toMatchObject({ status: "consumed", decidedBy: "owner" });
  });

  it("another client's retry of the same input does not pick up the grant (it is bound to the principal)", async () => {
    const s = await serve();
    const alice = await s.connect((await s.add("alice")).token);
    const mallory = await s.connect((await s.add("mallory")).token);
    const input = { id: "n1", text: "hello" };
    const id = requestIdOf(await call(alice, "notes.add_note", input));
    await s.gate.approvals.grant(id, { by: s.gate.authority.owner() });
    const stolen = await call(mallory, "notes.add_note", input);
    expect(metaOf(stolen, MCP_META.approval)?.["requestId"]).not.toBe(id);
    expect(s.store.writes).toBe(0);
  });

  it("a grant obtained out of band can be passed back in _meta; a forged one is refused", async () => {
    const s = await serve();
    const client = await s.connect((await s.add("alice")).token);
    const input = { id: "n2", text: "later" };
    const id = requestIdOf(await call(client, "notes.add_note", input));
    const forged = await call(client, "notes.add_note", input, {
      [MCP_META.grant]: { requestId: id, token: "guess", toolId: "notes.add_note", expiresAt: "2999-01-01T00:00:00.000Z" },
    });
    expect(metaOf(forged, MCP_META.error)).toMatchObject({ status: "denied" });
    expect(s.store.writes).toBe(0);
    const decided = await s.gate.approvals.grant(id, { by: s.gate.authority.owner() });
    if (decided.status !== "granted") throw new Error("expected a grant");
    const other = await call(client, "notes.add_note", { id: "n2", text: "changed" }, { [MCP_META.grant]: { ...decided.grant } });
    expect(metaOf(other, MCP_META.error)).toMatchObject({ status: "denied" });
    const ok = await call(client, "notes.add_note", input, { [MCP_META.grant]: { ...decided.grant } });
    expect(ok.isError).toBeFalsy();
    expect(s.store.notes.get("n2")).toBe("later");
  });
});

describe("serveMcp over HTTP: elicitation only where an operator enabled it", () => {
  it("the decision records the client as the approver (mcp:<clientId>, via elicitation), never a typed name", async () => {
    const s = await serve();
    const desk = await s.add("desk", { elicitation: true });
    const client = await s.connect(desk.token, () => ({ action: "accept", content: { approve: true } }));
    const result = await call(client, "notes.add_note", { id: "n3", text: "by the person at the desk" });
    expect(result.isError).toBeFalsy();
    const [request] = await s.gate.approvals.list({ status: ["consumed"] });
    expect(request).toMatchObject({ decidedBy: `mcp:${desk.id}`, decidedVia: "elicitation" });
    expect(JSON.stringify(request)).not.toContain("mcp-elicitation");
  });

  it("an auto-accepting client without that record gets approval_required, and nothing runs (the old server ran it)", async () => {
    const s = await serve();
    let asked = 0;
    const client = await s.connect((await s.add("bot")).token, () => (asked++, { action: "accept", content: { approve: true } }));
    const result = await call(client, "notes.add_note", { id: "n4", text: "self-approved" });
    expect(metaOf(result, MCP_META.approval)).toMatchObject({ status: "approval_required" });
    expect(asked).toBe(0);
    expect(s.store.writes).toBe(0);
  });

  it("no token reaches the journal, a response or an error", async () => {
    const s = await serve();
    const { token } = await s.add("alice");
    const client = await s.connect(token);
    await call(client, "notes.add_note", { id: "n5", text: "x" });
    await post(s.url, { authorization: `Bearer ${token}x` });
    const audit = JSON.stringify(await s.gate.journal.readAudit({ limit: 1000 }));
    expect(audit).not.toContain(token);
    expect(audit).not.toContain(token.slice(4, 24));
  });
});
