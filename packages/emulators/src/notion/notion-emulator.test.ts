import { APIErrorCode, APIResponseError, Client, collectPaginatedAPI, isFullPage, type PageObjectResponse } from "@notionhq/client";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { startNotionEmulator, type NotionEmulator } from "./index.js";

const TOKEN = "ntn_test_full_access_token_0001";
const READ_ONLY = "ntn_test_read_only_token_0002";
const SECRET_TITLE = "Acquisition plans (do not share)";

let emulator: NotionEmulator;
let ids: { shared: string; hidden: string; databaseId: string; dataSourceId: string };

const client = (auth: string, extra: Partial<ConstructorParameters<typeof Client>[0]> = {}) =>
  new Client({ auth, baseUrl: emulator.url, retry: false, logger: () => undefined, ...extra });

async function notionError(promise: Promise<unknown>): Promise<APIResponseError> {
  try {
    await promise;
  } catch (error) {
    if (APIResponseError.isAPIResponseError(error)) return error;
    throw error;
  }
  throw new Error("expected the request to fail");
}

beforeEach(async () => {
  emulator = await startNotionEmulator({
    seed: {
      integrations: [
        { id: "full", name: "Full", token: TOKEN },
        { id: "reader", name: "Reader", token: READ_ONLY, capabilities: ["read_content", "read_comments"] },
      ],
    },
  });
  const shared = emulator.seedPage({
    title: "Team notes",
    sharedWith: ["full", "reader"],
    children: [{ paragraph: { rich_text: [{ text: { content: "hello" } }] } }],
  });
  const hidden = emulator.seedPage({ title: SECRET_TITLE, children: [{ paragraph: { rich_text: [{ text: { content: "secret body" } }] } }] });
  const db = emulator.seedDatabase({
    title: "Tasks",
    parent: { pageId: shared.id },
    dataSource: {
      properties: {
        Name: { type: "title" },
        Priority: { type: "number" },
        Status: { type: "select", options: ["Open", "Done"] },
        Key: { type: "rich_text" },
      },
    },
  });
  ids = { shared: shared.id, hidden: hidden.id, ...db };
});

afterEach(async () => {
  await emulator.close();
});

describe("notion emulator: refusals first", () => {
  it("answers a page that is not shared exactly like a missing one, without its title", async () => {
    const hidden = await notionError(client(TOKEN).pages.retrieve({ page_id: ids.hidden }));
    const missing = await notionError(client(TOKEN).pages.retrieve({ page_id: "0f0f0f0f-0f0f-4f0f-8f0f-0f0f0f0f0f0f" }));
    expect(hidden.code).toBe(APIErrorCode.ObjectNotFound);
    expect(hidden.status).toBe(404);
    expect(hidden.body).not.toContain("Acquisition");
    expect(hidden.message.replace(ids.hidden, "ID")).toBe(missing.message.replace("0f0f0f0f-0f0f-4f0f-8f0f-0f0f0f0f0f0f", "ID"));
    const children = await notionError(client(TOKEN).blocks.children.list({ block_id: ids.hidden }));
    expect(children.code).toBe(APIErrorCode.ObjectNotFound);
    const search = await client(TOKEN).search({ query: "Acquisition" });
    expect(search.results).toHaveLength(0);
  });

  it("refuses a missing or revoked token with unauthorized", async () => {
    expect((await notionError(client("ntn_not_a_token").users.me({}))).code).toBe(APIErrorCode.Unauthorized);
    emulator.revokeToken(TOKEN);
    expect((await notionError(client(TOKEN).users.me({}))).code).toBe(APIErrorCode.Unauthorized);
  });

  it("requires the Notion-Version header", async () => {
    const response = await fetch(`${emulator.url}/v1/users/me`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(response.status).toBe(400);
    expect(((await response.json()) as { code: string }).code).toBe("missing_version");
  });

  it("enforces capabilities with restricted_resource, before any effect", async () => {
    const reader = client(READ_ONLY);
    const update = await notionError(reader.pages.update({ page_id: ids.shared, in_trash: true }));
    expect(update.code).toBe(APIErrorCode.RestrictedResource);
    expect(update.status).toBe(403);
    const append = await notionError(reader.blocks.children.append({ block_id: ids.shared, children: [{ paragraph: { rich_text: [] } }] }));
    expect(append.code).toBe(APIErrorCode.RestrictedResource);
    const comment = await notionError(reader.comments.create({ parent: { page_id: ids.shared }, rich_text: [{ text: { content: "hi" } }] }));
    expect(comment.code).toBe(APIErrorCode.RestrictedResource);
    expect(emulator.world.pages.get(ids.shared)!.page.in_trash).toBe(false);
    expect(emulator.pageChildren(ids.shared)).toHaveLength(1);
  });

  it("refuses rich text over 2,000 characters and more than 100 children with validation_error, storing nothing", async () => {
    const long = await notionError(
      client(TOKEN).blocks.children.append({ block_id: ids.shared, children: [{ paragraph: { rich_text: [{ text: { content: "x".repeat(2001) } }] } }] }),
    );
    expect(long.code).toBe(APIErrorCode.ValidationError);
    expect(long.message).toContain("2000");
    const many = Array.from({ length: 101 }, () => ({ paragraph: { rich_text: [{ text: { content: "p" } }] } }));
    const tooMany = await notionError(client(TOKEN).blocks.children.append({ block_id: ids.shared, children: many }));
    expect(tooMany.code).toBe(APIErrorCode.ValidationError);
    expect(emulator.pageChildren(ids.shared)).toHaveLength(1);
  });

  it("answers an injected 429 with Retry-After, and 5xx, 409 and 400 with Notion's codes", async () => {
    emulator.fault({ kind: "rate_limit", retryAfterSeconds: 7 });
    const limited = await notionError(client(TOKEN).users.me({}));
    expect(limited.code).toBe(APIErrorCode.RateLimited);
    expect(limited.status).toBe(429);
    expect(new Headers(limited.headers as Headers).get("retry-after")).toBe("7");
    emulator.fault({ kind: "server_error", status: 503 });
    expect((await notionError(client(TOKEN).users.me({}))).code).toBe(APIErrorCode.ServiceUnavailable);
    emulator.fault({ kind: "conflict", method: "PATCH" });
    expect((await notionError(client(TOKEN).pages.update({ page_id: ids.shared, properties: {} }))).code).toBe(APIErrorCode.ConflictError);
    emulator.fault({ kind: "validation_error", method: "PATCH", message: "body failed validation: refused `x`." });
    const refused = await notionError(client(TOKEN).pages.update({ page_id: ids.shared, properties: {} }));
    expect([refused.code, refused.message]).toEqual([APIErrorCode.ValidationError, "body failed validation: refused `x`."]);
    expect((await client(TOKEN).users.me({})).type).toBe("bot");
  });

  it("drops the connection after the effect when told to", async () => {
    emulator.fault({ kind: "drop_after_effect", method: "POST", path: "/pages" });
    await expect(
      client(TOKEN).pages.create({ parent: { data_source_id: ids.dataSourceId }, properties: { Name: { title: [{ text: { content: "Dropped" } }] } } }),
    ).rejects.toThrow();
    const rows = await client(TOKEN).dataSources.query({ data_source_id: ids.dataSourceId });
    expect(rows.results).toHaveLength(1);
    expect(emulator.requests.at(-2)?.status).toBe("dropped");
  });

  it("refuses property edits to a page in the trash", async () => {
    await client(TOKEN).pages.update({ page_id: ids.shared, in_trash: true });
    const edit = await notionError(client(TOKEN).pages.update({ page_id: ids.shared, properties: { title: { title: [{ text: { content: "x" } }] } } }));
    expect(edit.code).toBe(APIErrorCode.ValidationError);
  });
});

describe("notion emulator: endpoints through @notionhq/client", () => {
  it("users.me answers the bot", async () => {
    const me = await client(TOKEN).users.me({});
    expect(me.type).toBe("bot");
    expect(me.name).toBe("Full");
  });

  it("exchanges an authorization code and rotates refresh tokens (OAuth)", async () => {
    emulator.addIntegration({ id: "public", name: "Public", oauth: { clientId: "client-1", clientSecret: "client-secret-value" } });
    emulator.share(ids.shared, "public");
    const code = emulator.authorize("public", { redirectUri: "http://127.0.0.1/callback" });
    const anonymous = new Client({ baseUrl: emulator.url, retry: false, logger: () => undefined });
    const tokens = await anonymous.oauth.token({
      client_id: "client-1",
      client_secret: "client-secret-value",
      grant_type: "authorization_code",
      code,
      redirect_uri: "http://127.0.0.1/callback",
    });
    expect(tokens.token_type).toBe("bearer");
    const page = await client(tokens.access_token).pages.retrieve({ page_id: ids.shared });
    expect(page.id).toBe(ids.shared);
    await expect(
      anonymous.oauth.token({
        client_id: "client-1",
        client_secret: "client-secret-value",
        grant_type: "authorization_code",
        code,
        redirect_uri: "http://127.0.0.1/callback",
      }),
    ).rejects.toMatchObject({ status: 400 });
    const refreshed = await anonymous.oauth.token({
      client_id: "client-1",
      client_secret: "client-secret-value",
      grant_type: "refresh_token",
      refresh_token: tokens.refresh_token!,
    });
    expect(refreshed.access_token).not.toBe(tokens.access_token);
    await expect(
      anonymous.oauth.token({ client_id: "client-1", client_secret: "client-secret-value", grant_type: "refresh_token", refresh_token: tokens.refresh_token! }),
    ).rejects.toMatchObject({ status: 400 });
    await expect(
      anonymous.oauth.token({ client_id: "client-1", client_secret: "wrong", grant_type: "refresh_token", refresh_token: "x" }),
    ).rejects.toMatchObject({
      status: 401,
    });
  });

  it("creates, retrieves, updates and trashes a page in a data source", async () => {
    const notion = client(TOKEN);
    const created = await notion.pages.create({
      parent: { data_source_id: ids.dataSourceId },
      properties: { Name: { title: [{ text: { content: "Write tests" } }] }, Priority: { number: 2 }, Status: { select: { name: "Open" } } },
      children: [{ heading_1: { rich_text: [{ text: { content: "Plan" } }] } }],
    });
    expect(isFullPage(created)).toBe(true);
    const page = (await notion.pages.retrieve({ page_id: created.id })) as PageObjectResponse;
    expect(page.parent).toMatchObject({ type: "data_source_id", data_source_id: ids.dataSourceId });
    expect(page.properties["Priority"]).toMatchObject({ type: "number", number: 2 });
    const updated = (await notion.pages.update({ page_id: created.id, properties: { Status: { select: { name: "Done" } } } })) as PageObjectResponse;
    expect(updated.properties["Status"]).toMatchObject({ select: { name: "Done" } });
    const trashed = (await notion.pages.update({ page_id: created.id, in_trash: true })) as PageObjectResponse;
    expect(trashed.in_trash).toBe(true);
    const bad = await notionError(notion.pages.create({ parent: { data_source_id: ids.dataSourceId }, properties: { Nope: { rich_text: [] } } }));
    expect(bad.code).toBe(APIErrorCode.ValidationError);
  });

  it("pages through block children with start_cursor", async () => {
    const notion = client(TOKEN);
    const children = Array.from({ length: 60 }, (_, i) => ({ paragraph: { rich_text: [{ text: { content: `line ${i}` } }] } }));
    await notion.blocks.children.append({ block_id: ids.shared, children });
    await notion.blocks.children.append({ block_id: ids.shared, children });
    const first = await notion.blocks.children.list({ block_id: ids.shared, page_size: 50 });
    expect(first.results).toHaveLength(50);
    expect(first.has_more).toBe(true);
    const all = await collectPaginatedAPI(notion.blocks.children.list, { block_id: ids.shared, page_size: 50 });
    expect(all).toHaveLength(121);
  });

  it("creates a page under a page, listed as a child_page block with its own children", async () => {
    const notion = client(TOKEN);
    const child = await notion.pages.create({
      parent: { page_id: ids.shared },
      properties: { title: { title: [{ text: { content: "Child" } }] } },
      children: [{ to_do: { rich_text: [{ text: { content: "task" } }], checked: true } }],
    });
    const listed = await notion.blocks.children.list({ block_id: ids.shared });
    expect(listed.results.at(-1)).toMatchObject({ id: child.id, type: "child_page", child_page: { title: "Child" } });
    expect(await notion.blocks.retrieve({ block_id: child.id })).toMatchObject({ type: "child_page", has_children: true });
    const content = await notion.blocks.children.list({ block_id: child.id });
    expect(content.results).toMatchObject([{ type: "to_do", to_do: { checked: true } }]);
    const bad = await notionError(notion.pages.create({ parent: { page_id: ids.shared }, properties: { Other: { rich_text: [] } } as never }));
    expect(bad.code).toBe(APIErrorCode.ValidationError);
  });

  it("retrieves, updates and deletes a block", async () => {
    const notion = client(TOKEN);
    const [block] = (await notion.blocks.children.list({ block_id: ids.shared })).results;
    const got = await notion.blocks.retrieve({ block_id: block!.id });
    expect(got).toMatchObject({ type: "paragraph" });
    const updated = await notion.blocks.update({ block_id: block!.id, paragraph: { rich_text: [{ text: { content: "changed" } }] } });
    expect(updated).toMatchObject({ paragraph: { rich_text: [{ plain_text: "changed" }] } });
    const deleted = await notion.blocks.delete({ block_id: block!.id });
    expect(deleted).toMatchObject({ in_trash: true });
  });

  it("queries a data source with filters and sorts", async () => {
    const notion = client(TOKEN);
    for (const [name, priority, status] of [
      ["a", 3, "Open"],
      ["b", 1, "Done"],
      ["c", 2, "Open"],
    ] as const) {
      await notion.pages.create({
        parent: { data_source_id: ids.dataSourceId },
        properties: { Name: { title: [{ text: { content: name } }] }, Priority: { number: priority }, Status: { select: { name: status } } },
      });
    }
    const open = await notion.dataSources.query({
      data_source_id: ids.dataSourceId,
      filter: { property: "Status", select: { equals: "Open" } },
      sorts: [{ property: "Priority", direction: "descending" }],
    });
    expect(open.results.map((p) => (p as PageObjectResponse).properties["Priority"])).toMatchObject([{ number: 3 }, { number: 2 }]);
    const compound = await notion.dataSources.query({
      data_source_id: ids.dataSourceId,
      filter: {
        or: [
          { property: "Priority", number: { less_than: 2 } },
          { property: "Name", title: { equals: "c" } },
        ],
      },
    });
    expect(compound.results).toHaveLength(2);
    const database = await notion.databases.retrieve({ database_id: ids.databaseId });
    expect(database).toMatchObject({ data_sources: [{ id: ids.dataSourceId }] });
    const bad = await notionError(notion.dataSources.query({ data_source_id: ids.dataSourceId, filter: { property: "Missing", number: { equals: 1 } } }));
    expect(bad.code).toBe(APIErrorCode.ValidationError);
  });

  it("searches shared pages and data sources by title", async () => {
    const found = await client(TOKEN).search({ query: "team" });
    expect(found.results.map((r) => r.id)).toEqual([ids.shared]);
    const sources = await client(TOKEN).search({ filter: { property: "object", value: "data_source" } });
    expect(sources.results.map((r) => r.id)).toEqual([ids.dataSourceId]);
  });

  it("lists and creates comments", async () => {
    const notion = client(TOKEN);
    const comment = await notion.comments.create({ parent: { page_id: ids.shared }, rich_text: [{ text: { content: "Looks good" } }] });
    await notion.comments.create({ discussion_id: (comment as { discussion_id: string }).discussion_id, rich_text: [{ text: { content: "Thanks" } }] });
    const listed = await client(READ_ONLY).comments.list({ block_id: ids.shared });
    expect(listed.results).toHaveLength(2);
  });
});
