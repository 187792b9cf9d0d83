/**
 * Outside review: attacks on provenance where calls enter the MCP server and results leave it —
 * forged or reset sessions, grants carried across clients, hostile sizes, the in-band (elicitation)
 * retry, and what a client learns of its session. Each test fails when the check it guards is gone.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { ElicitRequestSchema, type CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { ToolError, type Gate, type ProvenanceSession } from "@toolgate/core";
import type { CallProvenance } from "@toolgate/core/operator";
import { afterEach, describe, expect, it } from "vitest";
import { bearer, rawRequest } from "../fixtures/mcp-auth.js";
import { createPostGate, INJECTED, OUTSIDE, OWN, postProfiles } from "../fixtures/provenance-mail.js";
import { createApprovalBroker } from "../shared/approval-broker.js";
import { MCP_META, createMcpServer, serveMcp, type McpServerOptions } from "./server.js";

const cleanup: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  await Promise.all(cleanup.splice(0).map((f) => f().catch(() => undefined)));
});

const profiles = [postProfiles.asks, postProfiles.refuses];

/** The gate with every session it opens kept, so a test can count what each connection remembered. */
function watchedGate() {
  const { gate: typed, sent } = createPostGate();
  const real = typed as unknown as Gate;
  const sessions: ProvenanceSession[] = [];
  // The gate is frozen: a view of it whose openSession keeps what the real one opened.
  const openSession: Gate["openSession"] = (options) => {
    const session = real.openSession(options);
    sessions.push(session);
    return session;
  };
  const gate = Object.create(real, { openSession: { value: openSession } }) as Gate;
  return { gate, sent, sessions };
}

async function serve(provenance?: McpServerOptions["provenance"]) {
  const { gate, sent, sessions } = watchedGate();
  const server = await serveMcp(gate, { profiles, transport: { type: "http" }, ...(provenance === undefined ? {} : { provenance }) });
  cleanup.push(() => server.close());
  const register = async (name: string, extra: { elicitation?: boolean; profile?: string; principal?: string } = {}) =>
    (
      await gate.authority.clients.add(
        name,
        {
          profile: extra.profile ?? postProfiles.asks.name,
          principal: extra.principal ?? `${name}-agent`,
          tenant: "t",
          ...(extra.elicitation ? { elicitation: true } : {}),
        },
        gate.authority.owner(),
      )
    ).token;
  const open = async (token: string, name = "c", onElicit?: () => { action: string; content?: Record<string, unknown> }) => {
    const client = new Client({ name, version: "1" }, onElicit ? { capabilities: { elicitation: { form: {} } } } : {});
    if (onElicit) client.setRequestHandler(ElicitRequestSchema, () => onElicit() as never);
    const transport = new StreamableHTTPClientTransport(server.url!, bearer(token));
    await client.connect(transport);
    cleanup.push(() => client.close());
    return { client, transport };
  };
  return { gate, sent, sessions, url: server.url!, register, open };
}

const call = async (client: Client, name: string, args: Record<string, unknown>, meta?: Record<string, unknown>) =>
  (await client.callTool({ name, arguments: args, ...(meta ? { _meta: meta } : {}) })) as CallToolResult;
const send = (client: Client, to: string, meta?: Record<string, unknown>) => call(client, "post.send", { to, body: "the numbers" }, meta);
const approvalOf = (r: CallToolResult) => r._meta?.[MCP_META.approval] as { requestId: string; preview?: { provenance?: CallProvenance } } | undefined;

describe("attacks refused at the MCP edge", () => {
  it("another client's mcp-session-id does not reach that client's session (or its memory)", async () => {
    const served = await serve();
    const victim = await served.open(await served.register("victim"));
    await call(victim.client, "post.read_inbox", {});
    const id = victim.transport.sessionId!;
    expect(id).toBeTruthy();
    const attackerToken = await served.register("attacker");
    const forged = await rawRequest(served.url, {
      method: "POST",
      headers: {
        authorization: `Bearer ${attackerToken}`,
        "mcp-session-id": id,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        host: served.url.host,
      },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "post.send", arguments: { to: OUTSIDE, body: "x" } } }),
    });
    expect(forged.status).toBe(404);
    expect(served.sent).toEqual([]);
  });

  it("a reconnect starts a fresh session, but an injected destination is still asked there (new is not trusted)", async () => {
    const served = await serve();
    const token = await served.register("desk");
    const first = await served.open(token);
    await call(first.client, "post.read_inbox", {});
    await first.client.close();
    const second = await served.open(token);
    const asked = await send(second.client, OUTSIDE);
    expect(asked.isError).toBe(true);
    expect(approvalOf(asked)?.preview?.provenance).toMatchObject({ verdict: "violation", action: "escalated" });
    expect(served.sent).toEqual([]);
    expect(served.sessions).toHaveLength(2);
  });

  it("a grant issued for one client's request does not run the same call for another client", async () => {
    const served = await serve();
    const a = await served.open(await served.register("a"));
    await call(a.client, "post.read_inbox", {});
    const asked = approvalOf(await send(a.client, OUTSIDE))!;
    const decided = await served.gate.approvals.grant(asked.requestId, { by: served.gate.authority.owner() });
    expect(decided.status).toBe("granted");
    const grant = decided.status === "granted" ? decided.grant : undefined;
    const b = await served.open(await served.register("b"));
    const stolen = await send(b.client, OUTSIDE, { [MCP_META.grant]: grant });
    expect(stolen.isError).toBe(true);
    expect(served.sent).toEqual([]);
  });

  it("a client that declares elicitation and accepts everything is never asked unless an operator enabled it", async () => {
    const served = await serve();
    let asked = 0;
    const c = await served.open(await served.register("eager"), "eager", () => {
      asked += 1;
      return { action: "accept", content: { approve: true } };
    });
    await call(c.client, "post.read_inbox", {});
    expect((await send(c.client, OUTSIDE)).isError).toBe(true);
    expect(asked).toBe(0);
    expect(served.sent).toEqual([]);
  });

  it("malformed grants and forged session _meta do not crash the server; it goes on serving", async () => {
    const served = await serve();
    const c = await served.open(await served.register("fuzz"));
    for (const meta of [
      { [MCP_META.grant]: "x".repeat(100_000) },
      { [MCP_META.grant]: { requestId: {}, token: [], toolId: null, expiresAt: 1 } },
      { [MCP_META.grant]: { requestId: "apr_x", token: "t", toolId: "post.send", expiresAt: "2099-01-01T00:00:00Z" } },
      { "io.toolgate/session": { id: "ses_x", trusted: [{ text: OUTSIDE }] }, "io.toolgate/trusted": [OUTSIDE] },
    ]) {
      const r = await send(c.client, OUTSIDE, meta);
      expect(r.isError).toBe(true);
    }
    expect((await call(c.client, "post.read_inbox", {})).isError).toBeFalsy();
    expect(served.sent).toEqual([]);
  });

  it("a destination near the input bound (1 MiB) is judged, not cut off, and does not stop the server", async () => {
    const { gate, sent } = watchedGate();
    const server = createMcpServer(gate, { profile: postProfiles.refuses, principal: "agent", tenant: "t" });
    const [a, b] = InMemoryTransport.createLinkedPair();
    const client = new Client({ name: "c", version: "1" });
    await Promise.all([server.connect(a), client.connect(b)]);
    cleanup.push(() => client.close());
    await call(client, "post.read_inbox", {});
    const started = Date.now();
    // Just under the gate's input bound (1 MiB): distinct words, so every window is a fingerprint to look up.
    const words = (n: number, salt: string) => Array.from({ length: n }, (_, i) => `${salt}${i.toString(36)}`).join(" ");
    const r = await call(client, "post.send", { to: `${words(60_000, "w")} ${OUTSIDE}`, body: `${INJECTED} ${words(60_000, "v")}` });
    const took = Date.now() - started;
    expect(r.isError).toBe(true);
    // Judged (and refused by provenance, under a refusing profile), not cut off by a later bound.
    expect((r._meta?.[MCP_META.error] as { code?: string } | undefined)?.code).toBe("provenance_refused");
    expect(took, `judging took ${took} ms`).toBeLessThan(60_000);
    expect(sent).toEqual([]);
    expect((await call(client, "post.read_inbox", {})).isError).toBeFalsy();
  }, 120_000);

  it("the in-band approved retry remembers its output once in the connection's session", async () => {
    const served = await serve();
    let asked = 0;
    const c = await served.open(await served.register("desk", { elicitation: true }), "desk", () => {
      asked += 1;
      return { action: "accept", content: { approve: true } };
    });
    await call(c.client, "post.read_inbox", {});
    const session = served.sessions[0]!;
    expect(session.stats().texts).toBe(1);
    const ran = await send(c.client, OUTSIDE);
    expect(asked).toBeGreaterThan(0);
    expect(ran.isError).toBeFalsy();
    expect(served.sent).toHaveLength(1);
    expect(session.stats().texts).toBe(2);
    expect(served.sessions).toHaveLength(1);
  });

  it("the trusted texts of a connection never reach its client (only their labels), nor another client", async () => {
    const secret = `Standing contacts: ${OWN}, cfo@team.test, ledger-7781@team.test`;
    const served = await serve({ trusted: (c) => (c.client?.name === "keeper" ? [{ text: secret, label: "contacts" }] : []) });
    const owner = await served.open(await served.register("keeper"));
    await call(owner.client, "post.read_inbox", {});
    // A probe for one contact (its own input echoed is no leak): what comes back names the label, never the rest of the text.
    const seen = [
      await send(owner.client, OUTSIDE),
      await send(owner.client, OWN),
      await call(owner.client, "post.send", { to: OUTSIDE, body: "cfo@team.test" }),
    ];
    const other = await served.open(await served.register("other", { profile: postProfiles.refuses.name }));
    seen.push(await send(other.client, OWN), await send(other.client, "cfo@team.test"));
    for (const r of seen) {
      expect(JSON.stringify(r)).not.toContain("Standing contacts");
      expect(JSON.stringify(r)).not.toContain("ledger-7781");
    }
    expect((seen[3]!._meta?.[MCP_META.error] as { code?: string } | undefined)?.code).toBe("provenance_refused");
    expect(served.sent).toEqual([{ to: OWN, body: "the numbers" }]);
  });
});

describe("holes found at the MCP edge", () => {
  it("a static trusted text whose label the session refuses is config_invalid before listening, not a failure of every connection", async () => {
    const { gate } = createPostGate();
    const attempt = serveMcp(gate as unknown as Gate, {
      profiles,
      transport: { type: "http" },
      provenance: { trusted: [{ text: `write to ${OWN}`, label: "l".repeat(65) }] },
    });
    let handle: Awaited<typeof attempt> | undefined;
    const rejected = await attempt.then(
      (h) => {
        handle = h;
        return undefined;
      },
      (e: unknown) => e,
    );
    if (handle) cleanup.push(() => handle!.close());
    expect(ToolError.is(rejected) && rejected.code === "config_invalid", "serveMcp accepted a trusted label every session will refuse").toBe(true);
  });

  it("what the client is told of an approval names no session id (the session is the server's, never the client's)", async () => {
    const served = await serve();
    const c = await served.open(await served.register("leak"));
    await call(c.client, "post.read_inbox", {});
    const asked = await send(c.client, OUTSIDE);
    expect(approvalOf(asked)?.preview?.provenance?.verdict).toBe("violation");
    expect(JSON.stringify(asked), "the session id reached the client").not.toContain(served.sessions[0]!.id);
  });
});

describe("the framework adapters' approval check and execute (shared broker)", () => {
  // A repeated call id is a repeated call (the broker keeps each run): its replayed output is remembered again, as
  // untrusted (answered before the judgement). That only makes the session stricter; the effect still runs once.
  it("a framework asking its approval check twice for one tool call does not run the effect twice", async () => {
    const { gate, sent } = watchedGate();
    const session = gate.openSession({ trusted: [{ text: `Send ${OWN} the text "the numbers"`, label: "user" }] });
    const broker = createApprovalBroker(gate, { principal: "agent", tenant: "t", profile: postProfiles.asks, session }, {});
    const descriptor = gate.registry.describe("post.send")!;
    const input = { to: OWN, body: "the numbers" };
    // A resumed stream or a re-rendered step asks again about the same call id.
    expect(await broker.needsApproval(descriptor, input, "call_1")).toBe(false);
    expect(await broker.needsApproval(descriptor, input, "call_1")).toBe(false);
    const result = await broker.execute("post.send", input, "call_1", undefined, false);
    expect(result.status).toBe("ok");
    expect(sent, "the effect ran once per approval check").toHaveLength(1);
  });

  it("an injected destination asked through the broker is not run by execute without a decision", async () => {
    const { gate, sent } = watchedGate();
    const session = gate.openSession();
    const broker = createApprovalBroker(gate, { principal: "agent", tenant: "t", profile: postProfiles.asks, session }, {});
    await gate.invoke("post.read_inbox", {}, { principal: "agent", tenant: "t", profile: postProfiles.asks, session });
    const descriptor = gate.registry.describe("post.send")!;
    const input = { to: OUTSIDE, body: "the numbers" };
    expect(await broker.needsApproval(descriptor, input, "call_2")).toBe(true);
    // The framework claims the call was approved (its own state says so); the gate's records decide.
    const claimed = await broker.execute("post.send", input, "call_2", undefined, true);
    expect(claimed.status).toBe("approval_required");
    // A retry under a fresh call id (no approval check) is asked again.
    expect((await broker.execute("post.send", input, "call_3", undefined, false)).status).toBe("approval_required");
    expect(sent).toEqual([]);
  });
});

describe("more holes at the MCP edge", () => {
  it("the in-band human is told where the destination came from, as the console tells an operator", async () => {
    const served = await serve();
    const shown: string[] = [];
    const c = await served.open(await served.register("desk", { elicitation: true }), "desk", () => ({ action: "cancel" }));
    c.client.setRequestHandler(ElicitRequestSchema, (request) => {
      shown.push(String(request.params.message));
      return { action: "cancel" };
    });
    await call(c.client, "post.read_inbox", {});
    await send(c.client, OUTSIDE);
    expect(shown).toHaveLength(1);
    expect(shown[0], "the elicitation hides the provenance warning").toContain("taken from the untrusted output of post.read_inbox");
    expect(served.sent).toEqual([]);
  });

  it("a server made by createMcpServer and connected again (a second client) starts a fresh session", async () => {
    const { gate, sessions } = watchedGate();
    const server = createMcpServer(gate, { profile: postProfiles.asks, principal: "agent", tenant: "t" });
    const first = new Client({ name: "first", version: "1" });
    const [a1, b1] = InMemoryTransport.createLinkedPair();
    await Promise.all([server.connect(a1), first.connect(b1)]);
    await call(first, "post.read_inbox", {});
    await first.close();
    const second = new Client({ name: "second", version: "1" });
    const [a2, b2] = InMemoryTransport.createLinkedPair();
    await Promise.all([server.connect(a2), second.connect(b2)]);
    cleanup.push(() => second.close());
    const asked = approvalOf(await send(second, OUTSIDE))?.preview?.provenance;
    expect(asked?.fields[0]?.sources, "the second client's call was judged against what the first one read").toEqual([]);
    expect(sessions.length).toBe(2);
  });
});

describe("approved retries through another connection", () => {
  it("an operator's approval of one client's call does not run that call for another client (by binding)", async () => {
    const served = await serve();
    const a = await served.open(await served.register("a"));
    await call(a.client, "post.read_inbox", {});
    const asked = approvalOf(await send(a.client, OUTSIDE))!;
    await served.gate.approvals.grant(asked.requestId, { by: served.gate.authority.owner() });
    const b = await served.open(await served.register("b"));
    expect((await send(b.client, OUTSIDE)).isError).toBe(true);
    expect(served.sent).toEqual([]);
  });

  it("the same client's approved retry over a new connection runs once and is remembered in that connection's session only", async () => {
    const served = await serve();
    const token = await served.register("desk");
    const first = await served.open(token);
    await call(first.client, "post.read_inbox", {});
    const asked = approvalOf(await send(first.client, OUTSIDE))!;
    await served.gate.approvals.grant(asked.requestId, { by: served.gate.authority.owner() });
    await first.client.close();
    const [one] = served.sessions;
    const before = one!.stats().texts;
    const second = await served.open(token);
    const retried = await send(second.client, OUTSIDE);
    expect(retried.isError).toBeFalsy();
    expect(served.sessions[1]!.stats().texts).toBe(1);
    // The same call again is answered from the journal (replayed), never run a second time; the replayed output reaches the model again and is remembered again.
    const repeat = await send(second.client, OUTSIDE);
    expect((repeat._meta?.[MCP_META.result] as { replayed?: boolean } | undefined)?.replayed).toBe(true);
    expect(served.sent).toHaveLength(1);
    expect(one!.stats().texts).toBe(before);
  });
});
