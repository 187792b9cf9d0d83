import type { AccessGrant } from "@toolgate/core/connectors";
import { startNotionEmulator, type NotionEmulator } from "@toolgate/emulators";
import { resolveRetry, type CallPolicy } from "@toolgate/provider-call";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { callNotion, createNotionConnector, NOTION_CAPABILITIES } from "./index.js";

const TOKEN = "ntn_agent_integration_secret_4f1c9a7e2b";
let emulator: NotionEmulator;
let waits: number[];

beforeEach(async () => {
  emulator = await startNotionEmulator({
    seed: { integrations: [{ id: "agent", name: "Agent", token: TOKEN, capabilities: ["read_content", "insert_comments"] }] },
  });
  waits = [];
});
afterEach(() => emulator.close());

/** The client a tool gets for one call, from the connector itself. */
async function client() {
  const grant: AccessGrant = {
    connectionId: "notion-agent",
    provider: "notion",
    accessToken: TOKEN,
    tokenType: "Bearer",
    scopes: [...NOTION_CAPABILITIES],
    expiresAt: Number.MAX_SAFE_INTEGER,
  };
  const access = await createNotionConnector({ baseUrl: emulator.url }).createClient(grant);
  return access.client(new AbortController().signal);
}

const policy = (write: boolean): CallPolicy => ({
  method: write ? "comment on the page" : "read the page",
  repeatable: !write,
  write,
  signal: new AbortController().signal,
  retry: resolveRetry({ sleep: async (ms) => void waits.push(ms) }, { maxDelayMs: 30_000 }),
});

describe("callNotion: Notion's failures as Toolgate's codes", () => {
  it("answers a page not shared with the integration as not_found, in the connector's words, keeping Notion's error as cause", async () => {
    const hidden = emulator.seedPage({ title: "Acquisition shortlist" });
    const error = await callNotion(policy(false), async () => (await client()).pages.retrieve({ page_id: hidden.id })).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "not_found", boundary: "effect_not_started", details: { status: 404, reason: "object_not_found" } });
    expect((error as Error).message).toContain("not shared with this connection's integration");
    expect((error as Error).message).not.toContain("Acquisition");
    expect((error as Error).cause).toBeDefined();
  });

  it("maps restricted_resource to scope_missing: the integration lacks the capability", async () => {
    const page = emulator.seedPage({ title: "Notes", sharedWith: ["agent"] });
    await expect(callNotion(policy(true), async () => (await client()).pages.update({ page_id: page.id, in_trash: true }))).rejects.toMatchObject({
      code: "scope_missing",
      boundary: "effect_not_started",
    });
  });

  it("retries a write Notion rate-limited after its Retry-After: Notion applied nothing", async () => {
    const page = emulator.seedPage({ title: "Notes", sharedWith: ["agent"] });
    emulator.fault({ kind: "rate_limit", retryAfterSeconds: 2, method: "POST", path: "/comments" });
    const comment = await callNotion(policy(true), async () =>
      (await client()).comments.create({ parent: { page_id: page.id }, rich_text: [{ text: { content: "hello" } }] }),
    );
    expect(comment.id).toBeTruthy();
    expect(waits).toEqual([2000]);
    expect(emulator.world.comments).toHaveLength(1);
  });

  it("never repeats a write after a 5xx: its effect is unknown", async () => {
    const page = emulator.seedPage({ title: "Notes", sharedWith: ["agent"] });
    emulator.fault({ kind: "server_error", status: 503, method: "POST", path: "/comments" });
    await expect(
      callNotion(policy(true), async () => (await client()).comments.create({ parent: { page_id: page.id }, rich_text: [{ text: { content: "hello" } }] })),
    ).rejects.toMatchObject({
      code: "provider_unavailable",
      boundary: "effect_state_unknown",
      retryable: false,
    });
    expect(emulator.requests.filter((r) => r.path === "/comments")).toHaveLength(1);
    expect(waits).toEqual([]);
  });

  it("retries a read after a 5xx with backoff", async () => {
    const page = emulator.seedPage({ title: "Notes", sharedWith: ["agent"] });
    emulator.fault({ kind: "server_error", status: 502, path: `/pages/${page.id}`, times: 2 });
    const read = await callNotion(policy(false), async () => (await client()).pages.retrieve({ page_id: page.id }));
    expect(read.id).toBe(page.id);
    expect(waits).toEqual([250, 500]);
  });

  it("passes Notion's message on for a validation error, where it says what to fix", async () => {
    emulator.fault({ kind: "validation_error", method: "POST", path: "/comments", message: "body.rich_text should be defined" });
    await expect(
      callNotion(policy(true), async () => (await client()).comments.create({ parent: { page_id: "00000000-0000-4000-8000-000000000001" }, rich_text: [] })),
    ).rejects.toMatchObject({
      code: "provider_rejected",
      message: expect.stringContaining("Notion refused the request: body.rich_text should be defined"),
    });
  });
});
