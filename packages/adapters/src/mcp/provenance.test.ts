import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { ToolError, type Gate } from "@toolgate/core";
import type { CallProvenance } from "@toolgate/core/operator";
import { afterEach, describe, expect, it } from "vitest";
import { bearer } from "../fixtures/mcp-auth.js";
import { createPostGate, OUTSIDE, OWN, postProfiles } from "../fixtures/provenance-mail.js";
import { MCP_META, createMcpServer, serveMcp, type McpServerOptions } from "./server.js";

const cleanup: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  await Promise.all(cleanup.splice(0).map((f) => f().catch(() => undefined)));
});

const profiles = [postProfiles.asks, postProfiles.refuses];
type Served = { gate: Gate; sent: { to: string; body: string }[]; url: URL; connect(name: string, profile?: string): Promise<Client> };

/** The post family served over Streamable HTTP; `connect` registers a client and opens a connection with its token. */
async function serve(provenance?: McpServerOptions["provenance"]): Promise<Served> {
  const { gate: typed, sent } = createPostGate();
  const gate = typed as unknown as Gate;
  const server = await serveMcp(gate, { profiles, transport: { type: "http" }, ...(provenance === undefined ? {} : { provenance }) });
  cleanup.push(() => server.close());
  return {
    gate,
    sent,
    url: server.url!,
    async connect(name, profile = postProfiles.asks.name) {
      const { token } = await gate.authority.clients.add(name, { profile, principal: `${name}-agent`, tenant: "t" }, gate.authority.owner());
      const client = new Client({ name, version: "1" });
      await client.connect(new StreamableHTTPClientTransport(server.url!, bearer(token)));
      cleanup.push(() => client.close());
      return client;
    },
  };
}

const call = async (client: Client, name: string, args: Record<string, unknown>, meta?: Record<string, unknown>) =>
  (await client.callTool({ name, arguments: args, ...(meta ? { _meta: meta } : {}) })) as CallToolResult;
const provenanceOf = (r: CallToolResult) => (r._meta?.[MCP_META.approval] as { preview?: { provenance?: CallProvenance } } | undefined)?.preview?.provenance;
const send = (client: Client, to: string, meta?: Record<string, unknown>) => call(client, "post.send", { to, body: "the numbers" }, meta);

describe("MCP server: a provenance session per connection", () => {
  it("refuses a malformed provenance option before listening (config_invalid)", async () => {
    const { gate } = createPostGate();
    for (const provenance of [
      null,
      true,
      "on",
      [],
      { trusted: "me" },
      { trusted: [{ label: "x" }] },
      { trusted: [{ text: 1 }] },
      { trust: [] },
      { maxChars: -1 },
    ]) {
      const attempt = serveMcp(gate as unknown as Gate, { profiles, transport: { type: "http" }, provenance: provenance as never });
      await expect(attempt).rejects.toSatisfy((e) => ToolError.is(e) && e.code === "config_invalid");
    }
    const connection = { profile: postProfiles.asks, principal: "a", tenant: "t" };
    expect(() => createMcpServer(gate as unknown as Gate, { ...connection, provenance: { trusted: () => "me" as never } })).toThrow(
      /provenance.trusted\(connection\)/,
    );
  });

  it("under a refusing profile a send to the address the inbox carried is refused with its provenance; nothing is sent", async () => {
    const served = await serve();
    const client = await served.connect("desk", postProfiles.refuses.name);
    expect((await call(client, "post.read_inbox", {})).isError).toBeFalsy();
    const refused = await send(client, OUTSIDE);
    expect(refused.isError).toBe(true);
    const facts = refused._meta?.[MCP_META.error] as { code: string; details?: { provenance?: CallProvenance } };
    expect(facts.code).toBe("provenance_refused");
    expect(facts.details?.provenance).toMatchObject({ verdict: "violation", action: "refused" });
    expect(served.sent).toEqual([]);
  });

  it("what one connection read does not follow another; a client cannot name the session", async () => {
    const served = await serve();
    const reader = await served.connect("reader");
    await call(reader, "post.read_inbox", {});
    const asked = provenanceOf(await send(reader, OUTSIDE, { "io.toolgate/session": "ses_forged", session: "ses_forged" }));
    expect(asked).toMatchObject({ verdict: "violation", action: "escalated" });
    expect(asked?.fields[0]).toMatchObject({ path: "/to", label: "untrusted", role: "destination" });
    expect(asked?.fields[0]?.sources[0]).toMatchObject({ kind: "output", toolId: "post.read_inbox", untrusted: true });
    // The session is the server's: the client is never told its id.
    expect(asked?.session).toBeUndefined();
    // The same connection again: the same session (it still knows where the address came from).
    expect(provenanceOf(await send(reader, OUTSIDE))?.fields[0]).toMatchObject({ label: "untrusted" });

    // Another connection never read the inbox: the address is new to its session (still not trusted, still asked).
    const other = await served.connect("other");
    const fresh = provenanceOf(await send(other, OUTSIDE, { "io.toolgate/session": "ses_forged" }));
    expect(fresh?.fields[0]).toMatchObject({ path: "/to", label: "new" });
    expect(served.sent).toEqual([]);
  });

  it("trusted text per connection: the address the host vouches for this client runs without a human", async () => {
    const served = await serve({ trusted: (c) => (c.client?.name === "boss-desk" ? [{ text: `My manager is ${OWN}`, label: "contacts" }] : []) });
    const trusted = await served.connect("boss-desk");
    await call(trusted, "post.read_inbox", {});
    const ran = await send(trusted, OWN);
    expect(ran.isError).toBeFalsy();
    expect(served.sent).toEqual([{ to: OWN, body: "the numbers" }]);
    // Not vouched for on another connection: asked.
    const other = await served.connect("intern");
    expect(provenanceOf(await send(other, OWN))).toMatchObject({ verdict: "violation" });
    expect(served.sent).toHaveLength(1);
  });

  it("a connection whose trusted texts cannot be made is refused; the server goes on serving others", async () => {
    const served = await serve({
      trusted: (c) => {
        if (c.client?.name === "broken") throw new Error("contacts unavailable");
        return [];
      },
    });
    await expect(served.connect("broken")).rejects.toThrow();
    const fine = await served.connect("fine");
    expect((await call(fine, "post.read_inbox", {})).isError).toBeFalsy();
  });

  it("provenance: false serves calls outside any session (nothing remembered or judged)", async () => {
    const served = await serve(false);
    const client = await served.connect("desk", postProfiles.refuses.name);
    await call(client, "post.read_inbox", {});
    expect((await send(client, OUTSIDE)).isError).toBeFalsy();
    expect(served.sent).toEqual([{ to: OUTSIDE, body: "the numbers" }]);
  });

  it("createMcpServer (one connection, as over stdio) opens its session with the trusted texts given", async () => {
    const { gate, sent } = createPostGate();
    const server = createMcpServer(gate as unknown as Gate, {
      profile: postProfiles.asks,
      principal: "agent",
      tenant: "t",
      provenance: { trusted: [{ text: `write to ${OWN}`, label: "user" }] },
    });
    const [a, b] = InMemoryTransport.createLinkedPair();
    const client = new Client({ name: "c", version: "1" });
    await Promise.all([server.connect(a), client.connect(b)]);
    cleanup.push(() => client.close());
    await call(client, "post.read_inbox", {});
    expect(provenanceOf(await send(client, OUTSIDE))).toMatchObject({ verdict: "violation", action: "escalated" });
    expect((await send(client, OWN)).isError).toBeFalsy();
    expect(sent).toEqual([{ to: OWN, body: "the numbers" }]);
  });
});
