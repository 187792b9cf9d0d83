import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { randomBytes, randomUUID, timingSafeEqual } from "node:crypto";
import type {
  AppendBlockChildrenResponse,
  BlockObjectResponse,
  CommentObjectResponse,
  GetSelfResponse,
  ListBlockChildrenResponse,
  ListCommentsResponse,
  OauthTokenResponse,
  PageObjectResponse,
  QueryDataSourceResponse,
  SearchResponse,
  DataSourceObjectResponse,
} from "@notionhq/client";
import { blockFromRequest, normalizeId, pageTitle, plainText, richTextFromRequest, textRich } from "./convert.js";
import { invalid, NotionApiError, notFound, restricted } from "./errors.js";
import { compileFilter, sortPages } from "./query.js";
import {
  NotionWorld,
  type DatabaseSeed,
  type IntegrationSeed,
  type NotionCapability,
  type NotionIntegration,
  type PageSeed,
} from "./world.js";

/** The Notion-Version values the emulator accepts. */
export const NOTION_VERSIONS = ["2022-06-28", "2025-09-03", "2026-03-11"] as const;

/** What the emulator starts with. */
export interface NotionSeed {
  readonly integrations?: readonly IntegrationSeed[];
  readonly databases?: readonly DatabaseSeed[];
  readonly pages?: readonly PageSeed[];
}

export interface NotionEmulatorOptions {
  /** Port on 127.0.0.1; default an ephemeral one. */
  readonly port?: number;
  readonly seed?: NotionSeed;
  /** Milliseconds since the epoch, for timestamps; default `Date.now`. */
  readonly clock?: () => number;
  /** Wait this long before handling each request (a client that gives up first changes nothing). */
  readonly latencyMs?: number;
}

/**
 * A fault the emulator injects into the next matching requests.
 * - `rate_limit`: 429 `rate_limited` with `Retry-After: retryAfterSeconds` (default 1), no effect.
 * - `server_error`: `status` (default 500) with Notion's code for it, no effect.
 * - `conflict`: 409 `conflict_error`, no effect.
 * - `drop_after_effect`: the request takes effect, then the connection is destroyed unanswered.
 * - `latency`: wait `latencyMs` before handling.
 */
export interface NotionFault {
  readonly kind: "rate_limit" | "server_error" | "conflict" | "drop_after_effect" | "latency";
  /** Only requests with this method (upper case). */
  readonly method?: string;
  /** Only requests whose path (after `/v1`) starts with this string or matches this pattern. */
  readonly path?: string | RegExp;
  /** How many matching requests it hits; default 1. */
  readonly times?: number;
  readonly retryAfterSeconds?: number;
  readonly status?: 500 | 502 | 503 | 504;
  readonly latencyMs?: number;
}

/** One request the emulator saw, for tests to inspect. Never holds the token. */
export interface NotionRequestRecord {
  readonly method: string;
  /** The path after `/v1`, without the query. */
  readonly path: string;
  readonly status: number | "dropped";
  readonly integrationId: string | undefined;
  readonly fault: NotionFault["kind"] | undefined;
}

/** A running Notion emulator. */
export interface NotionEmulator {
  /** `http://127.0.0.1:<port>`: pass as `baseUrl` to `new Client({ auth, baseUrl })`. */
  readonly url: string;
  readonly port: number;
  /** The state, in the client's own response shapes. */
  readonly world: NotionWorld;
  /** Every request seen, oldest first. */
  readonly requests: readonly NotionRequestRecord[];
  addIntegration(seed: IntegrationSeed): NotionIntegration;
  seedDatabase(seed: DatabaseSeed): { databaseId: string; dataSourceId: string };
  seedPage(seed: PageSeed): PageObjectResponse;
  share(id: string, integrationId: string): void;
  unshare(id: string, integrationId: string): void;
  /** A one-time authorization code for an OAuth integration, as Notion's consent screen would redirect with. */
  authorize(integrationId: string, options?: { readonly redirectUri?: string }): string;
  /** Make a bearer token (internal or OAuth) stop working. */
  revokeToken(token: string): void;
  /** Change an integration's capabilities, as its owner would in its settings. */
  setCapabilities(integrationId: string, capabilities: readonly NotionCapability[]): void;
  fault(rule: NotionFault): void;
  clearFaults(): void;
  setLatency(ms: number): void;
  /** The blocks directly under a page or block, in order, for assertions. */
  pageChildren(id: string): BlockObjectResponse[];
  /** Requests received and not yet answered (held by latency, say). */
  inFlight(): number;
  close(): Promise<void>;
}

interface Caller {
  readonly integration: NotionIntegration;
}

interface Route {
  readonly method: string;
  readonly pattern: RegExp;
  readonly capability: NotionCapability | undefined;
  readonly handle: (caller: Caller, params: string[], body: Record<string, unknown>, query: URLSearchParams) => object;
}

const isRecord = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === "object" && !Array.isArray(value);

/**
 * Start a Notion API emulator on 127.0.0.1, speaking enough of the public API for the Toolgate
 * Notion family: bearer integration and OAuth tokens, the `Notion-Version` header, capabilities per
 * integration, sharing, search, pages, blocks, data sources, comments and `users/me`, with
 * Notion's own error codes. State lives in memory; `fault()` injects 429s, 5xx, conflicts, latency
 * and dropped connections after an effect.
 */
export async function startNotionEmulator(options: NotionEmulatorOptions = {}): Promise<NotionEmulator> {
  const world = new NotionWorld(options.clock ?? Date.now);
  const requests: NotionRequestRecord[] = [];
  const faults: { rule: NotionFault; left: number }[] = [];
  let latencyMs = options.latencyMs ?? 0;

  for (const integration of options.seed?.integrations ?? []) world.addIntegration(integration);
  for (const database of options.seed?.databases ?? []) world.seedDatabase(database);
  for (const page of options.seed?.pages ?? []) world.seedPage(page);

  const requirePage = (caller: Caller, id: string) => world.page(caller.integration.id, id);
  const by = (caller: Caller) => world.bot(caller.integration.id);

  const routes: Route[] = [
    {
      method: "GET",
      pattern: /^\/users\/me$/,
      capability: undefined,
      handle: (caller) => {
        const self: GetSelfResponse = {
          object: "user",
          id: caller.integration.botId,
          name: caller.integration.name,
          avatar_url: null,
          type: "bot",
          bot: {
            owner: { type: "workspace", workspace: true },
            workspace_name: world.workspaceName,
            workspace_id: world.workspaceId,
            workspace_limits: { max_file_upload_size_in_bytes: 5_242_880 },
          },
        };
        return self;
      },
    },
    {
      method: "POST",
      pattern: /^\/search$/,
      capability: "read_content",
      handle: (caller, _params, body) => {
        const query = typeof body["query"] === "string" ? body["query"].toLowerCase() : "";
        const filter = isRecord(body["filter"]) ? body["filter"] : {};
        if (filter["value"] !== undefined && filter["value"] !== "page" && filter["value"] !== "data_source") {
          throw invalid('body failed validation: body.filter.value should be `"page"` or `"data_source"`.');
        }
        const inTrash = filter["in_trash"] === true;
        const results: (PageObjectResponse | DataSourceObjectResponse)[] = [];
        if (filter["value"] !== "data_source") {
          for (const { page } of world.pages.values()) {
            if (page.in_trash !== inTrash || !world.canSee(caller.integration.id, page.id)) continue;
            if (pageTitle(page).toLowerCase().includes(query)) results.push(page);
          }
        }
        if (filter["value"] !== "page") {
          for (const { dataSource } of world.dataSources.values()) {
            if (dataSource.in_trash !== inTrash || !world.canSee(caller.integration.id, dataSource.id)) continue;
            if (plainText(dataSource.title).toLowerCase().includes(query)) results.push(dataSource);
          }
        }
        const sort = isRecord(body["sort"]) ? body["sort"] : {};
        const sign = sort["direction"] === "ascending" ? 1 : -1;
        results.sort((a, b) => (a.last_edited_time < b.last_edited_time ? -1 : a.last_edited_time > b.last_edited_time ? 1 : 0) * sign);
        const page = paginate(results, body["start_cursor"], body["page_size"]);
        const response: SearchResponse = { object: "list", type: "page_or_data_source", page_or_data_source: {}, ...page };
        return response;
      },
    },
    {
      method: "GET",
      pattern: /^\/pages\/([^/]+)$/,
      capability: "read_content",
      handle: (caller, [id]) => requirePage(caller, id!).page,
    },
    {
      method: "POST",
      pattern: /^\/pages$/,
      capability: "insert_content",
      handle: (caller, _params, body) => {
        const parent = body["parent"];
        if (!isRecord(parent)) throw invalid("body failed validation: body.parent should be defined, instead was `undefined`.");
        const properties = isRecord(body["properties"]) ? body["properties"] : {};
        const children = Array.isArray(body["children"]) ? (body["children"] as unknown[]) : [];
        if (typeof parent["page_id"] === "string") {
          const holder = requirePage(caller, parent["page_id"]);
          if (holder.page.in_trash) throw invalid("Can't edit block that is archived. You must unarchive the block before editing.");
          for (const name of Object.keys(properties)) {
            if (name !== "title") throw invalid(`Invalid property identifier for a page whose parent is a page: ${name}. Only "title" is allowed.`);
          }
          return world.createPage(by(caller), { pageId: holder.page.id }, properties, children);
        }
        let dataSourceId: string | undefined;
        if (typeof parent["data_source_id"] === "string") dataSourceId = world.dataSource(caller.integration.id, parent["data_source_id"]).dataSource.id;
        else if (typeof parent["database_id"] === "string") {
          const database = world.database(caller.integration.id, parent["database_id"]).database;
          if (database.data_sources.length !== 1) throw invalid("Databases with multiple data sources need a data_source_id parent.");
          dataSourceId = database.data_sources[0]!.id;
        } else {
          throw invalid("body failed validation: body.parent should have page_id, data_source_id or database_id.");
        }
        return world.createPage(by(caller), { dataSourceId }, properties, children);
      },
    },
    {
      method: "PATCH",
      pattern: /^\/pages\/([^/]+)$/,
      capability: "update_content",
      handle: (caller, [id], body) => {
        const stored = requirePage(caller, id!);
        const properties = body["properties"] === undefined ? undefined : isRecord(body["properties"]) ? body["properties"] : undefined;
        if (body["properties"] !== undefined && properties === undefined) throw invalid("body failed validation: body.properties should be an object.");
        const trash = body["in_trash"] ?? body["archived"];
        if (trash !== undefined && typeof trash !== "boolean") throw invalid("body failed validation: body.in_trash should be a boolean.");
        return world.updatePage(stored, by(caller), properties, trash);
      },
    },
    {
      method: "GET",
      pattern: /^\/blocks\/([^/]+)\/children$/,
      capability: "read_content",
      handle: (caller, [id], _body, query) => {
        const holder = world.block(caller.integration.id, id!);
        const blocks = holder.children.map((childId) => world.blocks.get(childId)!.block);
        const page = paginate(blocks, query.get("start_cursor") ?? undefined, query.has("page_size") ? Number(query.get("page_size")) : undefined);
        const response: ListBlockChildrenResponse = { object: "list", type: "block", block: {}, ...page };
        return response;
      },
    },
    {
      method: "PATCH",
      pattern: /^\/blocks\/([^/]+)\/children$/,
      capability: "insert_content",
      handle: (caller, [id], body) => {
        const holder = world.block(caller.integration.id, id!);
        const target = "page" in holder ? holder.page : holder.block;
        if (target.in_trash) throw invalid("Can't edit block that is archived. You must unarchive the block before editing.");
        if (!Array.isArray(body["children"])) throw invalid("body failed validation: body.children should be defined, instead was `undefined`.");
        const created = world.appendChildren(target.id, by(caller), body["children"] as unknown[]);
        const response: AppendBlockChildrenResponse = { object: "list", type: "block", block: {}, next_cursor: null, has_more: false, results: created };
        return response;
      },
    },
    {
      method: "GET",
      pattern: /^\/blocks\/([^/]+)$/,
      capability: "read_content",
      handle: (caller, [id]) => blockOf(world.block(caller.integration.id, id!)),
    },
    {
      method: "PATCH",
      pattern: /^\/blocks\/([^/]+)$/,
      capability: "update_content",
      handle: (caller, [id], body) => {
        const holder = world.block(caller.integration.id, id!);
        if ("page" in holder) {
          const trash = body["in_trash"] ?? body["archived"];
          return blockOf(world.pages.get(holder.page.id)!, typeof trash === "boolean" ? world.updatePage(holder, by(caller), undefined, trash) : undefined);
        }
        const block = holder.block;
        const trash = body["in_trash"] ?? body["archived"];
        if (block.in_trash && trash !== false) throw invalid("Can't edit block that is archived. You must unarchive the block before editing.");
        if (isRecord(body[block.type])) {
          const { block: next } = blockFromRequest({ type: block.type, [block.type]: body[block.type] }, "body", {
            id: block.id,
            parent: block.parent,
            at: world.now(),
            by: by(caller),
          });
          holder.block = { ...next, created_time: block.created_time, created_by: block.created_by, has_children: block.has_children };
        } else if (trash === undefined) {
          throw invalid(`body failed validation: body.${block.type} should be defined, instead was \`undefined\`.`);
        }
        if (typeof trash === "boolean") {
          holder.block.in_trash = trash;
          holder.block.archived = trash;
        }
        holder.block.last_edited_time = world.now();
        return holder.block;
      },
    },
    {
      method: "DELETE",
      pattern: /^\/blocks\/([^/]+)$/,
      capability: "update_content",
      handle: (caller, [id]) => {
        const holder = world.block(caller.integration.id, id!);
        if ("page" in holder) return blockOf(holder, world.updatePage(holder, by(caller), undefined, true));
        holder.block.in_trash = true;
        holder.block.archived = true;
        holder.block.last_edited_time = world.now();
        return holder.block;
      },
    },
    {
      method: "GET",
      pattern: /^\/databases\/([^/]+)$/,
      capability: "read_content",
      handle: (caller, [id]) => world.database(caller.integration.id, id!).database,
    },
    {
      method: "GET",
      pattern: /^\/data_sources\/([^/]+)$/,
      capability: "read_content",
      handle: (caller, [id]) => world.dataSource(caller.integration.id, id!).dataSource,
    },
    {
      method: "POST",
      pattern: /^\/data_sources\/([^/]+)\/query$/,
      capability: "read_content",
      handle: (caller, [id], body) => {
        const stored = world.dataSource(caller.integration.id, id!);
        const schema = stored.dataSource.properties;
        const predicate = compileFilter(body["filter"], schema);
        const inTrash = (body["in_trash"] ?? body["archived"]) === true;
        const rows = stored.pages.map((pageId) => world.pages.get(pageId)!.page).filter((p) => p.in_trash === inTrash && predicate(p));
        const sorted = sortPages(rows, body["sorts"], schema);
        const page = paginate(sorted, body["start_cursor"], body["page_size"]);
        const response: QueryDataSourceResponse = { object: "list", type: "page_or_data_source", page_or_data_source: {}, ...page };
        return response;
      },
    },
    {
      method: "GET",
      pattern: /^\/comments$/,
      capability: "read_comments",
      handle: (caller, _params, _body, query) => {
        const blockId = query.get("block_id");
        if (!blockId) throw invalid("query failed validation: block_id should be defined, instead was `undefined`.");
        const holder = world.block(caller.integration.id, blockId);
        const id = "page" in holder ? holder.page.id : holder.block.id;
        const comments = world.comments.filter((c) => (c.parent.type === "page_id" ? c.parent.page_id : c.parent.block_id) === id);
        const page = paginate(comments, query.get("start_cursor") ?? undefined, query.has("page_size") ? Number(query.get("page_size")) : undefined);
        const response: ListCommentsResponse = { object: "list", type: "comment", comment: {}, ...page };
        return response;
      },
    },
    {
      method: "POST",
      pattern: /^\/comments$/,
      capability: "insert_comments",
      handle: (caller, _params, body) => {
        let parent: CommentObjectResponse["parent"];
        let discussionId: string;
        if (typeof body["discussion_id"] === "string") {
          const existing = world.comments.find((c) => c.discussion_id === normalizeId(body["discussion_id"] as string));
          if (!existing) throw notFound("comment", body["discussion_id"]);
          parent = existing.parent;
          discussionId = existing.discussion_id;
        } else if (isRecord(body["parent"]) && (typeof body["parent"]["page_id"] === "string" || typeof body["parent"]["block_id"] === "string")) {
          const raw = (body["parent"]["page_id"] ?? body["parent"]["block_id"]) as string;
          const holder = world.block(caller.integration.id, raw);
          parent = "page" in holder ? { type: "page_id", page_id: holder.page.id } : { type: "block_id", block_id: holder.block.id };
          discussionId = randomUUID();
        } else {
          throw invalid("body failed validation: body.parent or body.discussion_id should be defined.");
        }
        const richText =
          typeof body["markdown"] === "string" ? textRich(body["markdown"]) : richTextFromRequest(body["rich_text"], "body.rich_text");
        if (richText.length === 0) throw invalid("body failed validation: body.rich_text should not be empty.");
        const at = world.now();
        const comment: CommentObjectResponse = {
          object: "comment",
          id: randomUUID(),
          parent,
          discussion_id: discussionId,
          created_time: at,
          last_edited_time: at,
          created_by: by(caller),
          rich_text: richText,
          display_name: { type: "integration", resolved_name: caller.integration.name },
        };
        world.comments.push(comment);
        return comment;
      },
    },
  ];

  const blockOf = (stored: ReturnType<NotionWorld["block"]>, page?: PageObjectResponse): BlockObjectResponse => {
    if (!("page" in stored)) return stored.block;
    const p = page ?? stored.page;
    const child = world.blocks.get(p.id);
    if (child) return child.block;
    return {
      object: "block",
      id: p.id,
      type: "child_page",
      child_page: { title: pageTitle(p) },
      parent: p.parent,
      created_time: p.created_time,
      created_by: p.created_by,
      last_edited_time: p.last_edited_time,
      last_edited_by: p.last_edited_by,
      has_children: stored.children.length > 0,
      in_trash: p.in_trash,
      archived: p.in_trash,
    };
  };

  const takeFault = (method: string, path: string, kinds: readonly NotionFault["kind"][]): NotionFault | undefined => {
    for (const entry of faults) {
      const { rule } = entry;
      if (entry.left <= 0 || !kinds.includes(rule.kind)) continue;
      if (rule.method !== undefined && rule.method.toUpperCase() !== method) continue;
      if (rule.path !== undefined && !(typeof rule.path === "string" ? path.startsWith(rule.path) : rule.path.test(path))) continue;
      entry.left--;
      return rule;
    }
    return undefined;
  };

  const oauthToken = (req: IncomingMessage, body: Record<string, unknown>): { status: number; body: object } => {
    const header = req.headers.authorization ?? "";
    const basic = /^Basic\s+(.+)$/i.exec(header);
    const decoded = basic ? Buffer.from(basic[1]!, "base64").toString("utf8") : "";
    const colon = decoded.indexOf(":");
    const clientId = colon < 0 ? "" : decoded.slice(0, colon);
    const clientSecret = colon < 0 ? "" : decoded.slice(colon + 1);
    const integration = [...world.integrations.values()].find((i) => i.oauth?.clientId === clientId);
    if (!integration?.oauth || !sameSecret(integration.oauth.clientSecret, clientSecret)) {
      return { status: 401, body: { error: "invalid_client", error_description: "Client authentication failed." } };
    }
    let integrationId: string | undefined;
    if (body["grant_type"] === "authorization_code") {
      const code = typeof body["code"] === "string" ? world.codes.get(body["code"]) : undefined;
      if (code && code.redirectUri !== undefined && code.redirectUri !== body["redirect_uri"]) {
        return { status: 400, body: { error: "invalid_grant", error_description: "redirect_uri does not match." } };
      }
      if (code) world.codes.delete(body["code"] as string);
      integrationId = code?.integrationId;
    } else if (body["grant_type"] === "refresh_token") {
      const refresh = typeof body["refresh_token"] === "string" ? body["refresh_token"] : "";
      integrationId = world.refreshTokens.get(refresh);
      if (integrationId !== undefined) world.refreshTokens.delete(refresh); // refresh tokens rotate
    } else {
      return { status: 400, body: { error: "unsupported_grant_type", error_description: "grant_type is not supported." } };
    }
    if (integrationId !== integration.id) return { status: 400, body: { error: "invalid_grant", error_description: "The grant is invalid or expired." } };
    const issued = world.issueOAuthTokens(integration.id);
    const response: OauthTokenResponse = {
      access_token: issued.accessToken,
      token_type: "bearer",
      refresh_token: issued.refreshToken,
      bot_id: integration.botId,
      workspace_icon: null,
      workspace_name: world.workspaceName,
      workspace_id: world.workspaceId,
      owner: { type: "workspace", workspace: true },
      duplicated_template_id: null,
      request_id: randomUUID(),
    };
    return { status: 200, body: response };
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const method = (req.method ?? "GET").toUpperCase();
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    const path = url.pathname.startsWith("/v1/") ? url.pathname.slice(3) : url.pathname;
    const requestId = randomUUID();
    let integrationId: string | undefined;
    let faultKind: NotionFault["kind"] | undefined;
    const record = (status: number | "dropped") => requests.push({ method, path, status, integrationId, fault: faultKind });
    const send = (status: number, body: object, headers: Record<string, string> = {}) => {
      record(status);
      res.writeHead(status, { "content-type": "application/json; charset=utf-8", "x-request-id": requestId, ...headers });
      res.end(JSON.stringify(body));
    };
    const fail = (error: NotionApiError) => send(error.status, error.body(requestId), error.headers);

    const raw = await readBody(req);
    const delay = (takeFault(method, path, ["latency"])?.latencyMs ?? 0) + latencyMs;
    if (delay > 0) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, delay);
        res.once("close", () => {
          clearTimeout(timer);
          resolve();
        });
      });
      if (req.socket.destroyed || res.closed) {
        record("dropped");
        return; // the client gave up: nothing happens
      }
    }
    let body: Record<string, unknown> = {};
    if (raw.length > 0) {
      try {
        const parsed: unknown = JSON.parse(raw);
        if (!isRecord(parsed)) throw new Error("not an object");
        body = parsed;
      } catch {
        return fail(new NotionApiError("invalid_json", "Error parsing JSON body."));
      }
    }

    if (method === "POST" && path === "/oauth/token") {
      const answer = oauthToken(req, body);
      return send(answer.status, answer.body);
    }

    const version = req.headers["notion-version"];
    if (typeof version !== "string" || version === "") {
      return fail(new NotionApiError("missing_version", "Notion-Version header failed validation: Notion-Version header should be defined, instead was `undefined`."));
    }
    if (!(NOTION_VERSIONS as readonly string[]).includes(version)) {
      return fail(new NotionApiError("validation_error", `Notion-Version header failed validation: ${JSON.stringify(version).slice(0, 40)} is not a supported version.`));
    }
    const bearer = /^Bearer\s+(.+)$/i.exec(req.headers.authorization ?? "")?.[1]?.trim();
    const token = bearer === undefined ? undefined : world.tokens.get(bearer);
    const integration = token && !token.revoked ? world.integrations.get(token.integrationId) : undefined;
    if (!integration) return fail(new NotionApiError("unauthorized", "API token is invalid."));
    integrationId = integration.id;

    const route = routes.find((r) => r.method === method && r.pattern.test(path));
    if (!route) {
      const known = routes.some((r) => r.pattern.test(path));
      return fail(known ? new NotionApiError("invalid_request", `Unsupported request method: ${method}.`, {}, 405) : new NotionApiError("invalid_request_url", "Invalid request URL."));
    }
    const params = route.pattern.exec(path)!.slice(1).map((p) => decodeURIComponent(p));
    for (const param of params) {
      if (normalizeId(param) === undefined) {
        return fail(invalid(`path failed validation: path.id should be a valid uuid, instead was \`${JSON.stringify(param).slice(0, 80)}\`.`));
      }
    }

    const fault = takeFault(method, path, ["rate_limit", "server_error", "conflict", "drop_after_effect"]);
    faultKind = fault?.kind;
    if (fault?.kind === "rate_limit") {
      const seconds = fault.retryAfterSeconds ?? 1;
      return fail(new NotionApiError("rate_limited", "You have been rate limited. Please try again in a few minutes.", { "retry-after": String(seconds) }));
    }
    if (fault?.kind === "server_error") {
      const status = fault.status ?? 500;
      return fail(
        status === 500
          ? new NotionApiError("internal_server_error", "Unexpected error occurred.", {}, 500)
          : new NotionApiError("service_unavailable", "Notion is unavailable, please try again later.", {}, status),
      );
    }
    if (fault?.kind === "conflict") return fail(new NotionApiError("conflict_error", "Conflict occurred while saving. Please try again."));

    if (route.capability !== undefined && !integration.capabilities.has(route.capability)) return fail(restricted());
    let result: object;
    try {
      result = route.handle({ integration }, params, body, url.searchParams);
    } catch (error) {
      if (error instanceof NotionApiError) return fail(error);
      return fail(new NotionApiError("internal_server_error", "Unexpected error occurred.", {}, 500));
    }
    if (fault?.kind === "drop_after_effect") {
      record("dropped");
      res.socket?.destroy();
      return;
    }
    send(200, structuredClone(result));
  };

  let inFlight = 0;
  const server = createServer((req, res) => {
    inFlight++;
    res.once("close", () => inFlight--);
    handle(req, res).catch(() => {
      if (!res.headersSent) {
        res.writeHead(500, { "content-type": "application/json" });
        res.end(JSON.stringify({ object: "error", status: 500, code: "internal_server_error", message: "Unexpected error occurred." }));
      }
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, "127.0.0.1", () => resolve());
  });
  const port = (server.address() as AddressInfo).port;

  return {
    url: `http://127.0.0.1:${port}`,
    port,
    world,
    requests,
    addIntegration: (seed) => world.addIntegration(seed),
    seedDatabase: (seed) => world.seedDatabase(seed),
    seedPage: (seed) => world.seedPage(seed),
    share: (id, integrationId) => world.share(id, integrationId),
    unshare: (id, integrationId) => world.unshare(id, integrationId),
    authorize(integrationId, authorizeOptions = {}) {
      if (!world.integrations.get(integrationId)?.oauth) throw new Error(`integration ${integrationId} has no OAuth client`);
      const code = `code_${randomBytes(12).toString("hex")}`;
      world.codes.set(code, { integrationId, redirectUri: authorizeOptions.redirectUri });
      return code;
    },
    revokeToken(token) {
      const record = world.tokens.get(token);
      if (record) record.revoked = true;
    },
    setCapabilities(integrationId, capabilities) {
      const integration = world.integrations.get(integrationId);
      if (!integration) throw new Error(`no integration ${integrationId}`);
      integration.capabilities.clear();
      for (const c of capabilities) integration.capabilities.add(c);
    },
    fault(rule) {
      faults.push({ rule, left: rule.times ?? 1 });
    },
    clearFaults() {
      faults.length = 0;
    },
    setLatency(ms) {
      latencyMs = ms;
    },
    pageChildren(id) {
      const key = normalizeId(id) ?? id;
      const holder = world.pages.get(key) ?? world.blocks.get(key);
      return (holder?.children ?? []).map((childId) => world.blocks.get(childId)!.block);
    },
    inFlight: () => inFlight,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Notion's cursor paging: the cursor is the id of the first item of the next page. */
function paginate<T extends { id: string }>(items: readonly T[], cursor: unknown, pageSize: unknown): { results: T[]; next_cursor: string | null; has_more: boolean } {
  const size = pageSize === undefined ? 100 : pageSize;
  if (typeof size !== "number" || !Number.isInteger(size) || size < 1 || size > 100) {
    throw invalid(`body failed validation: page_size should be a number between 1 and 100, instead was \`${JSON.stringify(pageSize)}\`.`);
  }
  let start = 0;
  if (cursor !== undefined && cursor !== null) {
    start = typeof cursor === "string" ? items.findIndex((item) => item.id === cursor) : -1;
    if (start < 0) throw invalid("The start_cursor provided is invalid.");
  }
  const results = items.slice(start, start + size);
  const next = items[start + size];
  return { results, next_cursor: next?.id ?? null, has_more: next !== undefined };
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

function sameSecret(expected: string, given: string): boolean {
  const a = Buffer.from(expected);
  const b = Buffer.from(given);
  return a.length === b.length && timingSafeEqual(a, b);
}
