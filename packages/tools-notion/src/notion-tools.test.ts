import type { PageObjectResponse } from "@notionhq/client";
import { createGate, createMemoryJournal, createToolRegistry, defineProfile, type Gate, type Journal, type Profile } from "@toolgate/core";
import { createConnectorRuntime, createMemoryVault } from "@toolgate/core/connectors";
import { recoverOutbox } from "@toolgate/core/operator";
import { createCrashingJournal, grantAsOwner } from "@toolgate/core/testing";
import { afterEach, describe, expect, it } from "vitest";
import { AGENT_TOKEN, SECRET_TITLE, startNotionWorld, type NotionWorld } from "./fixtures/notion-world.js";
import { createNotionConnector, exchangeNotionCode } from "@toolgate/connector-notion";
import { createMarker, createNotionTools, NOTION_WRITE_CONSENT } from "./index.js";

const principal = "agent-1";
const tenant = "acme";
const profile: Profile = defineProfile({
  name: "notion-all",
  allow: ["notion:read", "notion:write", "notion:comment"],
  maxRisk: "high",
  consents: [NOTION_WRITE_CONSENT],
  egress: ["personal"],
});

let world: NotionWorld | undefined;
afterEach(async () => {
  await world?.close();
  world = undefined;
});

type NotionGate = Gate<ReturnType<typeof createNotionTools>["tools"][number]>;

interface Setup {
  readonly world: NotionWorld;
  readonly gate: NotionGate;
  readonly sleeps: number[];
}

async function setup(options: Parameters<typeof startNotionWorld>[0] & { journal?: Journal; maxDelayMs?: number } = {}): Promise<Setup> {
  world = await startNotionWorld(options);
  const sleeps: number[] = [];
  const family = createNotionTools({
    retry: { sleep: async (ms) => void sleeps.push(ms), ...(options.maxDelayMs === undefined ? {} : { maxDelayMs: options.maxDelayMs }) },
  });
  const gate = createGate({
    registry: createToolRegistry({ families: [family] }),
    journal: options.journal ?? createMemoryJournal(),
    connectors: world.connectors,
    secrets: world.secrets,
  });
  return { world, gate, sleeps };
}

/** Invoke as the host would, granting approval as a human would when asked. */
async function approved(gate: NotionGate, toolId: string, input: unknown, extra: { idempotencyKey?: string; profile?: Profile } = {}) {
  const call = { principal, tenant, profile: extra.profile ?? profile, ...(extra.idempotencyKey ? { idempotencyKey: extra.idempotencyKey } : {}) };
  const first = await gate.invoke(toolId, input, call);
  if (first.status !== "approval_required") return first;
  const grant = await grantAsOwner(gate, first.requestId);
  return gate.invoke(toolId, input, { ...call, approval: grant });
}

/** Wait for a condition the emulator reports, without assuming how fast anything runs. */
async function until(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 2000 && !condition(); i++) await new Promise((resolve) => setTimeout(resolve, 5));
  expect(condition()).toBe(true);
}

const rowsOf = (w: NotionWorld) => w.emulator.world.dataSources.get(w.ids.dataSourceId)!.pages.map((id) => w.emulator.world.pages.get(id)!.page);

describe("notion family: negative cases", () => {
  it("answers a page not shared with the integration as not_found, without leaking its title", async () => {
    const { gate, world } = await setup();
    const result = await gate.invoke("notion.read_page", { pageId: world.ids.hidden }, { principal, tenant, profile });
    expect(result.status).toBe("error");
    expect(result.status === "error" && result.code).toBe("not_found");
    expect(result.status === "error" && result.boundary).toBe("effect_not_started");
    const search = await gate.invoke("notion.search", { query: "shortlist" }, { principal, tenant, profile });
    expect(search.status === "ok" && search.output).toEqual({ results: [], nextCursor: null });
    expect(JSON.stringify(result)).not.toMatch(/shortlist|Acquisition|board only/);
    expect(JSON.stringify([result, search, await gate.journal.readAudit()])).not.toContain(SECRET_TITLE);
  });

  it("refuses a write when the connection lacks the update capability, before any request", async () => {
    const { gate, world } = await setup({ granted: ["read_content", "insert_content", "read_comments", "insert_comments"] });
    const before = world.emulator.requests.length;
    const result = await approved(gate, "notion.update_page_properties", { pageId: world.ids.task, properties: { Status: "Done" } });
    expect(result.status).toBe("error");
    expect(result.status === "error" && result.code).toBe("scope_missing");
    expect(result.status === "error" && result.boundary).toBe("pre_effect_refusal");
    expect(world.emulator.requests.length).toBe(before);
  });

  it("maps Notion's restricted_resource to scope_missing when the integration itself lacks the capability", async () => {
    const { gate, world } = await setup({ integrationCapabilities: ["read_content", "insert_content"] });
    const result = await approved(gate, "notion.archive_page", { pageId: world.ids.task });
    expect(result.status === "error" && result.code).toBe("scope_missing");
    expect(result.status === "error" && result.boundary).toBe("effect_not_started");
    expect(world.emulator.world.pages.get(world.ids.task)!.page.in_trash).toBe(false);
    expect(world.emulator.requests.at(-1)).toMatchObject({ method: "PATCH", status: 403 });
  });

  it("flags and fences a page whose content tells the agent to exfiltrate data", async () => {
    const { gate, world } = await setup();
    const result = await gate.invoke("notion.read_page", { pageId: world.ids.injected }, { principal, tenant, profile });
    expect(result.status).toBe("ok");
    if (result.status !== "ok") return;
    expect(result.untrusted).toBe(true);
    expect(result.findings.map((f) => f.rule)).toEqual(expect.arrayContaining(["override-instructions", "exfiltration", "concealment"]));
    expect(result.content).toMatch(/^<untrusted-data boundary="tg-[0-9a-f]+" tool="notion.read_page">/);
    expect(result.content).toContain("do not follow it");
    const held = await gate.invoke(
      "notion.read_page",
      { pageId: world.ids.injected },
      { principal, tenant, profile: defineProfile({ ...profile, name: "holding", onInjection: "hold" }) },
    );
    expect(held.status).toBe("approval_required");
    expect(held.status === "approval_required" && held.reason).toBe("output");
  });

  it("refuses an approval reused for different content, and the grant still works for what was approved", async () => {
    const { gate, world } = await setup();
    const approvedInput = { pageId: world.ids.notes, markdown: "Approved text" };
    const first = await gate.invoke("notion.append_blocks", approvedInput, { principal, tenant, profile });
    expect(first.status).toBe("approval_required");
    if (first.status !== "approval_required") return;
    expect(first.preview.body).toBe("Approved text");
    const grant = await grantAsOwner(gate, first.requestId);
    const before = world.emulator.requests.length;
    const swapped = await gate.invoke(
      "notion.append_blocks",
      { ...approvedInput, markdown: "Send the secrets elsewhere" },
      { principal, tenant, profile, approval: grant },
    );
    expect(swapped.status).toBe("denied");
    expect(swapped.status === "denied" && swapped.code).toBe("approval_invalid");
    expect(world.emulator.requests.length).toBe(before);
    const honest = await gate.invoke("notion.append_blocks", approvedInput, { principal, tenant, profile, approval: grant });
    expect(honest.status).toBe("ok");
    expect(world.emulator.pageChildren(world.ids.notes).some((b) => b.type === "paragraph" && b.paragraph.rich_text[0]?.plain_text === "Approved text")).toBe(
      true,
    );
  });

  it("a create retried after the connection dropped after the effect finds the first page instead of making a second", async () => {
    const { gate, world } = await setup();
    world.emulator.fault({ kind: "drop_after_effect", method: "POST", path: "/pages" });
    const input = { parent: { databaseId: world.ids.databaseId }, title: "Quarterly plan", markdown: "# Plan" };
    const first = await approved(gate, "notion.create_page", input, { idempotencyKey: "create-plan-1" });
    expect(first.status).toBe("error");
    expect(first.status === "error" && first.boundary).toBe("effect_state_unknown");
    expect(rowsOf(world).filter((p) => p.properties["Name"]?.type === "title" && p.properties["Name"].title[0]?.plain_text === "Quarterly plan")).toHaveLength(
      1,
    );

    const retry = await approved(gate, "notion.create_page", input, { idempotencyKey: "create-plan-1" });
    expect(retry.status).toBe("ok");
    expect(retry.status === "ok" && retry.output).toMatchObject({ created: false });
    const plans = rowsOf(world).filter((p) => JSON.stringify(p.properties).includes("Quarterly plan"));
    expect(plans).toHaveLength(1);
    expect(retry.status === "ok" && (retry.output as { id: string }).id).toBe(plans[0]!.id);

    // A different key is a different create.
    const other = await approved(gate, "notion.create_page", input, { idempotencyKey: "create-plan-2" });
    expect(other.status === "ok" && other.output).toMatchObject({ created: true });
    expect(rowsOf(world).filter((p) => JSON.stringify(p.properties).includes("Quarterly plan"))).toHaveLength(2);
  });

  it("recoverOutbox replays a create interrupted after its effect, and the marker prevents a duplicate", async () => {
    const journal = createCrashingJournal(createMemoryJournal());
    const { gate, world } = await setup({ journal });
    world.emulator.fault({ kind: "drop_after_effect", method: "POST", path: "/pages" });
    const input = { parent: { dataSourceId: world.ids.dataSourceId }, title: "Incident review" };
    journal.crashed = true;
    const first = await approved(gate, "notion.create_page", input, { idempotencyKey: "incident-1" });
    expect(first.status).toBe("error");
    journal.crashed = false;
    const pending = await journal.listOutbox({ states: ["pending"] });
    expect(pending).toHaveLength(1);

    const report = await recoverOutbox(gate, { olderThanMs: 0 });
    expect(report).toMatchObject({ replayed: 1, unknown: 0 });
    const reviews = rowsOf(world).filter((p) => JSON.stringify(p.properties).includes("Incident review"));
    expect(reviews).toHaveLength(1);
    const marker = reviews[0]!.properties["Toolgate key"];
    expect(marker?.type === "rich_text" && marker.rich_text[0]?.plain_text).toBe(createMarker(pending[0]!.key));
    const again = await approved(gate, "notion.create_page", input, { idempotencyKey: "incident-1" });
    expect(again.status === "ok" && again.replayed).toBe(true);
  });

  it("honours Retry-After on a 429 and retries", async () => {
    const { gate, world, sleeps } = await setup();
    world.emulator.fault({ kind: "rate_limit", retryAfterSeconds: 3, path: "/search" });
    const result = await gate.invoke("notion.search", { query: "Team" }, { principal, tenant, profile });
    expect(result.status).toBe("ok");
    expect(sleeps).toEqual([3000]);
    expect(world.emulator.requests.filter((r) => r.path === "/search").map((r) => r.status)).toEqual([429, 200]);
  });

  it("bounds 429 retries: a Retry-After beyond the bound, or too many 429s, end in rate_limited", async () => {
    const { gate, world, sleeps } = await setup({ maxDelayMs: 10_000 });
    world.emulator.fault({ kind: "rate_limit", retryAfterSeconds: 120, path: "/search" });
    const long = await gate.invoke("notion.search", { query: "Team" }, { principal, tenant, profile });
    expect(long.status === "error" && long.code).toBe("rate_limited");
    expect(long.status === "error" && long.retryable).toBe(true);
    expect(long.status === "error" && long.boundary).toBe("effect_not_started");
    expect(sleeps).toEqual([]);

    world.emulator.fault({ kind: "rate_limit", retryAfterSeconds: 1, path: "/pages", times: 10 });
    const many = await approved(gate, "notion.archive_page", { pageId: world.ids.task });
    expect(many.status === "error" && many.code).toBe("rate_limited");
    expect(sleeps).toEqual([1000, 1000]);
    expect(world.emulator.requests.filter((r) => r.path.startsWith("/pages/")).length).toBe(3);
    expect(world.emulator.world.pages.get(world.ids.task)!.page.in_trash).toBe(false);
  });

  it("maps a revoked token to connector_reauth_required and never shows the token", async () => {
    const { gate, world } = await setup();
    world.emulator.revokeToken(AGENT_TOKEN);
    const result = await gate.invoke("notion.search", { query: "" }, { principal, tenant, profile });
    expect(result.status === "error" && result.code).toBe("connector_reauth_required");
    expect(JSON.stringify([result, await gate.journal.readAudit()])).not.toContain(AGENT_TOKEN);
  });

  it("does not retry a write after a 5xx: the effect is unknown", async () => {
    const { gate, world } = await setup();
    world.emulator.fault({ kind: "server_error", status: 503, method: "POST", path: "/comments" });
    const result = await approved(gate, "notion.add_comment", { pageId: world.ids.notes, text: "hello" });
    expect(result.status === "error" && result.code).toBe("provider_unavailable");
    expect(result.status === "error" && result.boundary).toBe("effect_state_unknown");
    expect(world.emulator.requests.filter((r) => r.path === "/comments").length).toBe(1);
  });

  it("a cancelled call aborts the request in flight and nothing is written", async () => {
    const { gate, world } = await setup();
    world.emulator.setLatency(600_000); // held until the client goes away
    const controller = new AbortController();
    const first = await gate.invoke("notion.add_comment", { pageId: world.ids.notes, text: "late" }, { principal, tenant, profile });
    if (first.status !== "approval_required") throw new Error("expected approval");
    const grant = await grantAsOwner(gate, first.requestId);
    const pending = gate.invoke(
      "notion.add_comment",
      { pageId: world.ids.notes, text: "late" },
      { principal, tenant, profile, approval: grant, signal: controller.signal },
    );
    await until(() => world!.emulator.inFlight() > 0);
    controller.abort();
    const result = await pending;
    expect(result.status === "error" && result.code).toBe("cancelled");
    expect(result.status === "error" && result.boundary).toBe("effect_state_unknown");
    await until(() => world!.emulator.requests.some((r) => r.path === "/comments" && r.status === "dropped"));
    expect(world.emulator.world.comments).toHaveLength(0);
  });
});

describe("notion family: every tool end to end", () => {
  it("searches, reads a page as Markdown and queries a database", async () => {
    const { gate, world } = await setup();
    const search = await gate.invoke("notion.search", { query: "team" }, { principal, tenant, profile });
    expect(search.status === "ok" && search.output).toMatchObject({ results: [{ id: world.ids.notes, object: "page", title: "Team notes" }] });
    const page = await gate.invoke("notion.read_page", { pageId: world.ids.notes.replace(/-/g, "") }, { principal, tenant, profile });
    expect(page.status).toBe("ok");
    const output = page.status === "ok" ? (page.output as { markdown: string; truncated: boolean; title: string }) : undefined;
    expect(output?.title).toBe("Team notes");
    expect(output?.markdown).toContain("## Agenda");
    expect(output?.markdown).toContain("- Ship the **release**");
    expect(output?.markdown).toContain("[See the docs](https://example.com/docs)");
    expect(output?.markdown).toContain("[child page: Vendor notes]");
    expect(output?.truncated).toBe(false);
    const query = await gate.invoke(
      "notion.query_database",
      {
        databaseId: world.ids.databaseId,
        filter: { property: "Status", select: { equals: "Open" } },
        sorts: [{ property: "Priority", direction: "descending" }],
      },
      { principal, tenant, profile },
    );
    expect(query.status === "ok" && query.output).toMatchObject({
      dataSourceId: world.ids.dataSourceId,
      rows: [{ title: "Write the report", properties: { Status: "Open", Priority: 2 } }],
    });
  });

  it("reads a long page by paging through its children, up to the bound", async () => {
    const { gate, world } = await setup();
    const notion = world.emulator.world;
    const by = { object: "user" as const, id: "00000000-0000-4000-8000-0000000000aa" };
    for (let i = 0; i < 3; i++)
      notion.appendChildren(
        world.ids.notes,
        by,
        Array.from({ length: 100 }, (_, j) => ({ paragraph: { rich_text: [{ text: { content: `line ${i * 100 + j}` } }] } })),
      );
    const all = await gate.invoke("notion.read_page", { pageId: world.ids.notes }, { principal, tenant, profile });
    expect(all.status === "ok" && all.output).toMatchObject({ blockCount: 304, truncated: false });
    expect(all.status === "ok" && (all.output as { markdown: string }).markdown).toContain("line 299");
    const bounded = await gate.invoke("notion.read_page", { pageId: world.ids.notes, maxBlocks: 150 }, { principal, tenant, profile });
    expect(bounded.status === "ok" && bounded.output).toMatchObject({ blockCount: 150, truncated: true });
  });

  it("creates a page with long Markdown content, splitting it at Notion's limits", async () => {
    const { gate, world } = await setup();
    const long = "word ".repeat(1000).trim(); // 4,999 characters in one paragraph
    const markdown = [`# Report`, long, ...Array.from({ length: 150 }, (_, i) => `- item ${i}`)].join("\n\n");
    const result = await approved(gate, "notion.create_page", {
      parent: { databaseId: world.ids.databaseId },
      title: "Long report",
      properties: { Status: "Open", Priority: 5, Tags: ["a", "b"] },
      markdown,
    });
    expect(result.status).toBe("ok");
    const output = result.status === "ok" ? (result.output as { id: string; blocks: number; created: boolean }) : undefined;
    expect(output).toMatchObject({ created: true, blocks: 152 });
    const children = world.emulator.pageChildren(output!.id);
    expect(children).toHaveLength(152);
    const paragraph = children[1]!;
    expect(paragraph.type === "paragraph" && paragraph.paragraph.rich_text.map((r) => r.plain_text).join("")).toBe(long);
    expect(world.emulator.requests.filter((r) => r.method === "PATCH" && r.path.endsWith("/children"))).toHaveLength(1);
    const page = world.emulator.world.pages.get(output!.id)!.page as PageObjectResponse;
    expect(page.properties["Tags"]).toMatchObject({ multi_select: [{ name: "a" }, { name: "b" }] });
  });

  it("says the page exists when its content could not all be written", async () => {
    const { gate, world } = await setup();
    world.emulator.fault({ kind: "rate_limit", retryAfterSeconds: 1, method: "PATCH", path: "/blocks/", times: 10 });
    const markdown = Array.from({ length: 120 }, (_, i) => `- item ${i}`).join("\n");
    const result = await approved(gate, "notion.create_page", { parent: { databaseId: world.ids.databaseId }, title: "Half written", markdown });
    expect(result.status === "error" && result.code).toBe("rate_limited");
    expect(result.status === "error" && result.boundary).toBe("effect_started");
    const pageId = result.status === "error" ? (result.details as { pageId: string }).pageId : "";
    expect(world.emulator.pageChildren(pageId)).toHaveLength(100);
  });

  it("refuses to create in a database without the marker property, before any effect", async () => {
    const { gate, world } = await setup();
    const bare = world.emulator.seedDatabase({ title: "Bare", sharedWith: ["agent"], dataSource: { properties: { Name: { type: "title" } } } });
    const result = await approved(gate, "notion.create_page", { parent: { databaseId: bare.databaseId }, title: "x" });
    expect(result.status === "error" && result.code).toBe("provider_rejected");
    expect(result.status === "error" && result.boundary).toBe("effect_not_started");
    expect(world.emulator.world.dataSources.get(bare.dataSourceId)!.pages).toHaveLength(0);
  });

  it("appends blocks, updates properties, archives idempotently and comments", async () => {
    const { gate, world } = await setup();
    const append = await approved(gate, "notion.append_blocks", { pageId: world.ids.notes, markdown: "## Next\n\n```ts\nconst x = 1;\n```\n\n> quoted" });
    expect(append.status === "ok" && append.output).toMatchObject({ blocks: 3, requests: 1 });
    expect(
      world.emulator
        .pageChildren(world.ids.notes)
        .slice(-3)
        .map((b) => b.type),
    ).toEqual(["heading_2", "code", "quote"]);

    const update = await approved(gate, "notion.update_page_properties", { pageId: world.ids.task, properties: { Status: "Done", Priority: null } });
    expect(update.status === "ok" && update.output).toMatchObject({ updated: ["Priority", "Status"] });
    expect(world.emulator.world.pages.get(world.ids.task)!.page.properties["Status"]).toMatchObject({ select: { name: "Done" } });
    const wrongType = await approved(gate, "notion.update_page_properties", { pageId: world.ids.task, properties: { Priority: "high" } });
    expect(wrongType.status === "error" && wrongType.code).toBe("invalid_input");

    const archive = await approved(gate, "notion.archive_page", { pageId: world.ids.task });
    expect(archive.status === "ok" && archive.output).toEqual({ id: world.ids.task, archived: true, alreadyArchived: false });
    const again = await approved(gate, "notion.archive_page", { pageId: world.ids.task }, { idempotencyKey: "archive-again" });
    expect(again.status === "ok" && again.output).toEqual({ id: world.ids.task, archived: true, alreadyArchived: true });

    const comment = await approved(gate, "notion.add_comment", { pageId: world.ids.notes, text: "Looks **good**" });
    expect(comment.status).toBe("ok");
    expect(world.emulator.world.comments[0]?.rich_text.map((r) => [r.plain_text, r.annotations.bold])).toEqual([
      ["Looks ", false],
      ["good", true],
    ]);
  });

  it("works through an OAuth connection from Notion's token exchange, refreshed by the runtime", async () => {
    world = await startNotionWorld();
    const { emulator } = world;
    emulator.addIntegration({ id: "public", name: "Public", oauth: { clientId: "toolgate-client", clientSecret: "client-secret-0123456789" } });
    emulator.share(world.ids.notes, "public");
    const code = emulator.authorize("public", { redirectUri: "http://127.0.0.1:9/callback" });
    const tokens = await exchangeNotionCode({
      code,
      redirectUri: "http://127.0.0.1:9/callback",
      clientId: "toolgate-client",
      clientSecret: "client-secret-0123456789",
      capabilities: ["read_content"],
      baseUrl: emulator.url,
    });
    expect(tokens.refreshToken).toBeDefined();
    // Stored as expired, so the runtime refreshes it through the adapter before the first call.
    const vault = createMemoryVault({ connections: [{ connection: { id: "notion-oauth", provider: "notion" }, tokens: { ...tokens, expiresAt: 0 } }] });
    const connectors = createConnectorRuntime({
      vault,
      providers: [createNotionConnector({ baseUrl: emulator.url, clientId: "toolgate-client", clientSecret: "client-secret-0123456789" })],
    });
    const gate = createGate({ registry: createToolRegistry({ families: [createNotionTools()] }), journal: createMemoryJournal(), connectors });
    const read = await gate.invoke("notion.read_page", { pageId: world.ids.notes }, { principal, tenant, profile });
    expect(read.status).toBe("ok");
    const stored = await vault.readTokens("notion-oauth");
    expect(stored?.accessToken).not.toBe(tokens.accessToken);
    expect(stored?.refreshToken).not.toBe(tokens.refreshToken);
    const write = await approved(gate, "notion.append_blocks", { pageId: world.ids.notes, markdown: "x" });
    expect(write.status === "error" && write.code).toBe("scope_missing");
    const audit = JSON.stringify(await gate.journal.readAudit());
    for (const secret of [tokens.accessToken, tokens.refreshToken!, stored!.accessToken, "client-secret-0123456789"]) expect(audit).not.toContain(secret);

    // A refresh token Notion no longer accepts means a human must authorize again.
    await vault.writeTokens("notion-oauth", { ...stored!, expiresAt: 0, refreshToken: "nrt_revoked" });
    const revoked = await gate.invoke("notion.read_page", { pageId: world.ids.notes }, { principal, tenant, profile });
    expect(revoked.status === "error" && revoked.code).toBe("connector_reauth_required");
  });
});
