import { randomBytes } from "node:crypto";
import type { BlockObjectResponse, CommentObjectResponse, PageObjectResponse, PartialUserObjectResponse } from "@notionhq/client";
import { newId, normalizeId, type BlockParent } from "./convert.js";
import { notFound } from "./errors.js";
import { appendChildren } from "./block-operations.js";
import { createPage, updatePage, type NewPageParent } from "./page-operations.js";
import { seedDatabase, seedPage } from "./world-seeding.js";
import {
  NOTION_CAPABILITIES,
  type DatabaseSeed,
  type IntegrationSeed,
  type NotionIntegration,
  type PageSeed,
  type StoredBlock,
  type StoredDataSource,
  type StoredDatabase,
  type StoredPage,
  type TokenRecord,
} from "./world-model.js";

/**
 * The emulator's whole state, in memory. Objects are stored in the shapes `@notionhq/client`
 * types its responses with, so a change in the client's types is a compile error here.
 * This class holds the state, who may see what, and the lookups by id; the writes live in
 * `page-operations.ts`, `block-operations.ts` and `world-seeding.ts`.
 */
export class NotionWorld {
  readonly integrations = new Map<string, NotionIntegration>();
  readonly pages = new Map<string, StoredPage>();
  readonly blocks = new Map<string, StoredBlock>();
  readonly databases = new Map<string, StoredDatabase>();
  readonly dataSources = new Map<string, StoredDataSource>();
  readonly comments: CommentObjectResponse[] = [];
  readonly tokens = new Map<string, TokenRecord>();
  readonly codes = new Map<string, { integrationId: string; redirectUri: string | undefined; codeChallenge?: string; expiresAt?: number }>();
  readonly refreshTokens = new Map<string, string>();
  readonly workspaceId = newId();
  readonly workspaceName = "Emulated workspace";
  private tick = 0;

  constructor(private readonly clock: () => number) {}

  /** A timestamp that never repeats or goes backwards, so orderings are stable. */
  now(): string {
    const ms = Math.max(this.clock(), this.tick + 1);
    this.tick = ms;
    return new Date(ms).toISOString();
  }

  // ---------- integrations and tokens ----------

  addIntegration(seed: IntegrationSeed): NotionIntegration {
    const integration: NotionIntegration = {
      id: seed.id,
      name: seed.name ?? seed.id,
      botId: newId(),
      capabilities: new Set(seed.capabilities ?? NOTION_CAPABILITIES),
      oauth: seed.oauth,
    };
    this.integrations.set(seed.id, integration);
    if (seed.token !== undefined) this.tokens.set(seed.token, { integrationId: seed.id, kind: "internal", revoked: false });
    return integration;
  }

  bot(integrationId: string): PartialUserObjectResponse {
    return { object: "user", id: this.integrations.get(integrationId)?.botId ?? newId() };
  }

  issueOAuthTokens(integrationId: string): { accessToken: string; refreshToken: string } {
    const accessToken = `ntn_oauth_${randomBytes(18).toString("hex")}`;
    const refreshToken = `nrt_${randomBytes(18).toString("hex")}`;
    this.tokens.set(accessToken, { integrationId, kind: "oauth", revoked: false });
    this.refreshTokens.set(refreshToken, integrationId);
    return { accessToken, refreshToken };
  }

  // ---------- visibility ----------

  /** True when the integration can see the object: it, or an ancestor, is shared with it. */
  canSee(integrationId: string, id: string): boolean {
    for (let current: string | undefined = id, hops = 0; current !== undefined && hops < 64; hops++) {
      const page = this.pages.get(current);
      if (page) {
        if (page.sharedWith.has(integrationId)) return true;
        current = parentObjectId(page.page.parent);
        continue;
      }
      const database = this.databases.get(current);
      if (database) {
        if (database.sharedWith.has(integrationId)) return true;
        current = parentObjectId(database.database.parent as BlockParent);
        continue;
      }
      const dataSource = this.dataSources.get(current);
      if (dataSource) {
        current = dataSource.dataSource.parent.type === "database_id" ? dataSource.dataSource.parent.database_id : undefined;
        continue;
      }
      const block = this.blocks.get(current);
      if (block) {
        current = parentObjectId(block.block.parent);
        continue;
      }
      return false;
    }
    return false;
  }

  share(id: string, integrationId: string): void {
    const key = normalizeId(id) ?? id;
    const target = this.pages.get(key) ?? this.databases.get(key);
    if (!target) throw new Error(`no page or database ${id} to share`);
    target.sharedWith.add(integrationId);
  }

  unshare(id: string, integrationId: string): void {
    const key = normalizeId(id) ?? id;
    (this.pages.get(key) ?? this.databases.get(key))?.sharedWith.delete(integrationId);
  }

  // ---------- reads: `object_not_found` for what the integration cannot see ----------

  page(integrationId: string, id: string): StoredPage {
    return this.visible(integrationId, id, "page", (key) => this.pages.get(key));
  }

  /** A block or a page (a page is a block, too), as the integration sees it. */
  block(integrationId: string, id: string): StoredBlock | StoredPage {
    return this.visible(integrationId, id, "block", (key) => this.pages.get(key) ?? this.blocks.get(key));
  }

  database(integrationId: string, id: string): StoredDatabase {
    return this.visible(integrationId, id, "database", (key) => this.databases.get(key));
  }

  dataSource(integrationId: string, id: string): StoredDataSource {
    return this.visible(integrationId, id, "data_source", (key) => this.dataSources.get(key));
  }

  private visible<T>(integrationId: string, id: string, kind: Parameters<typeof notFound>[0], lookup: (key: string) => T | undefined): T {
    const key = normalizeId(id);
    const stored = key === undefined ? undefined : lookup(key);
    if (key === undefined || stored === undefined || !this.canSee(integrationId, key)) throw notFound(kind, id);
    return stored;
  }

  // ---------- writes ----------

  /** Create a page under a page or a data source; properties and children in request shape. */
  createPage(
    by: PartialUserObjectResponse,
    parent: NewPageParent,
    properties: Readonly<Record<string, unknown>>,
    children: readonly unknown[],
    id?: string,
  ): PageObjectResponse {
    return createPage(this, by, parent, properties, children, id);
  }

  /** Update a page's properties and trash state; refuses property edits to a page in the trash. */
  updatePage(
    stored: StoredPage,
    by: PartialUserObjectResponse,
    properties: Readonly<Record<string, unknown>> | undefined,
    inTrash: boolean | undefined,
  ): PageObjectResponse {
    return updatePage(this, stored, by, properties, inTrash);
  }

  /** Append children to a page or block, validating every one before storing any. */
  appendChildren(parentId: string, by: PartialUserObjectResponse, children: readonly unknown[], path = "body.children"): BlockObjectResponse[] {
    return appendChildren(this, parentId, by, children, path);
  }

  // ---------- seeding ----------

  seedDatabase(seed: DatabaseSeed): { databaseId: string; dataSourceId: string } {
    return seedDatabase(this, seed);
  }

  seedPage(seed: PageSeed): PageObjectResponse {
    return seedPage(this, seed);
  }
}

/** The id of the page, block, data source or database a parent names; undefined for the workspace. */
function parentObjectId(parent: BlockParent): string | undefined {
  switch (parent.type) {
    case "page_id":
      return parent.page_id;
    case "block_id":
      return parent.block_id;
    case "data_source_id":
      return parent.data_source_id;
    case "database_id":
      return parent.database_id;
    default:
      return undefined;
  }
}
