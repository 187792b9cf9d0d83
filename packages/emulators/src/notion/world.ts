import { randomBytes } from "node:crypto";
import type {
  BlockObjectResponse,
  CommentObjectResponse,
  DataSourceObjectResponse,
  DatabaseObjectResponse,
  PageObjectResponse,
  PartialUserObjectResponse,
} from "@notionhq/client";
import {
  blockFromRequest,
  emptyProperty,
  MAX_CHILDREN_PER_REQUEST,
  newId,
  normalizeId,
  pageTitle,
  propertyConfig,
  propertyFromRequest,
  textRich,
  type BlockParent,
  type PropertyConfig,
  type PropertySpec,
  type PropertyType,
  type PropertyValue,
} from "./convert.js";
import { invalid, notFound } from "./errors.js";

/** What an integration may do, as Notion's integration settings name its capabilities. */
export const NOTION_CAPABILITIES = ["read_content", "update_content", "insert_content", "read_comments", "insert_comments"] as const;
export type NotionCapability = (typeof NOTION_CAPABILITIES)[number];

/** An integration (a bot) as seeded: its capabilities and how it authenticates. */
export interface IntegrationSeed {
  readonly id: string;
  readonly name?: string;
  /** Default: every capability. */
  readonly capabilities?: readonly NotionCapability[];
  /** An internal integration's secret (`ntn_…`), accepted as a bearer token. */
  readonly token?: string;
  /** A public integration's OAuth client, for `POST /v1/oauth/token`. */
  readonly oauth?: { readonly clientId: string; readonly clientSecret: string };
}

export interface NotionIntegration {
  readonly id: string;
  readonly name: string;
  readonly botId: string;
  readonly capabilities: Set<NotionCapability>;
  readonly oauth: { readonly clientId: string; readonly clientSecret: string } | undefined;
}

/** Where a seeded page lives. */
export type PageParentSeed = { readonly pageId: string } | { readonly dataSourceId: string } | "workspace";

export interface PageSeed {
  readonly id?: string;
  readonly title: string;
  readonly parent?: PageParentSeed;
  /** Other property values, in the request shape of `pages.create`. */
  readonly properties?: Readonly<Record<string, unknown>>;
  /** Content, in the request shape of `blocks.children.append`. */
  readonly children?: readonly unknown[];
  /** Integration ids the page is shared with (its descendants inherit it). */
  readonly sharedWith?: readonly string[];
  readonly inTrash?: boolean;
}

export interface DatabaseSeed {
  readonly id?: string;
  readonly title: string;
  readonly parent?: { readonly pageId: string } | "workspace";
  readonly dataSource: { readonly id?: string; readonly name?: string; readonly properties: Readonly<Record<string, PropertySpec>> };
  readonly sharedWith?: readonly string[];
}

interface StoredPage {
  page: PageObjectResponse;
  children: string[];
  sharedWith: Set<string>;
}
interface StoredBlock {
  block: BlockObjectResponse;
  children: string[];
}
interface StoredDatabase {
  database: DatabaseObjectResponse;
  sharedWith: Set<string>;
}
interface StoredDataSource {
  dataSource: DataSourceObjectResponse;
  pages: string[];
}
interface TokenRecord {
  readonly integrationId: string;
  readonly kind: "internal" | "oauth";
  revoked: boolean;
}

/**
 * The emulator's whole state, in memory. Objects are stored in the shapes `@notionhq/client`
 * types its responses with, so a change in the client's types is a compile error here.
 */
export class NotionWorld {
  readonly integrations = new Map<string, NotionIntegration>();
  readonly pages = new Map<string, StoredPage>();
  readonly blocks = new Map<string, StoredBlock>();
  readonly databases = new Map<string, StoredDatabase>();
  readonly dataSources = new Map<string, StoredDataSource>();
  readonly comments: CommentObjectResponse[] = [];
  readonly tokens = new Map<string, TokenRecord>();
  readonly codes = new Map<string, { integrationId: string; redirectUri: string | undefined }>();
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
        current = this.parentObjectId(page.page.parent);
        continue;
      }
      const database = this.databases.get(current);
      if (database) {
        if (database.sharedWith.has(integrationId)) return true;
        current = this.parentObjectId(database.database.parent as BlockParent);
        continue;
      }
      const dataSource = this.dataSources.get(current);
      if (dataSource) {
        current = dataSource.dataSource.parent.type === "database_id" ? dataSource.dataSource.parent.database_id : undefined;
        continue;
      }
      const block = this.blocks.get(current);
      if (block) {
        current = this.parentObjectId(block.block.parent);
        continue;
      }
      return false;
    }
    return false;
  }

  private parentObjectId(parent: BlockParent): string | undefined {
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

  // ---------- reads ----------

  page(integrationId: string, id: string): StoredPage {
    const key = normalizeId(id);
    const stored = key === undefined ? undefined : this.pages.get(key);
    if (!stored || !this.canSee(integrationId, stored.page.id)) throw notFound("page", id);
    return stored;
  }

  /** A block or a page (a page is a block, too), as the integration sees it. */
  block(integrationId: string, id: string): StoredBlock | StoredPage {
    const key = normalizeId(id);
    const stored = key === undefined ? undefined : (this.pages.get(key) ?? this.blocks.get(key));
    if (!stored || !this.canSee(integrationId, key!)) throw notFound("block", id);
    return stored;
  }

  database(integrationId: string, id: string): StoredDatabase {
    const key = normalizeId(id);
    const stored = key === undefined ? undefined : this.databases.get(key);
    if (!stored || !this.canSee(integrationId, stored.database.id)) throw notFound("database", id);
    return stored;
  }

  dataSource(integrationId: string, id: string): StoredDataSource {
    const key = normalizeId(id);
    const stored = key === undefined ? undefined : this.dataSources.get(key);
    if (!stored || !this.canSee(integrationId, stored.dataSource.id)) throw notFound("data_source", id);
    return stored;
  }

  // ---------- writes ----------

  /** Create a page under a page or a data source; properties and children in request shape. */
  createPage(
    by: PartialUserObjectResponse,
    parent: { pageId: string } | { dataSourceId: string } | "workspace",
    properties: Readonly<Record<string, unknown>>,
    children: readonly unknown[],
    id: string = newId(),
  ): PageObjectResponse {
    const at = this.now();
    let pageParent: BlockParent;
    let schema: Record<string, PropertyConfig>;
    let dataSource: StoredDataSource | undefined;
    if (parent === "workspace") {
      pageParent = { type: "workspace", workspace: true };
      schema = { title: propertyConfig("title", { type: "title" }) };
    } else if ("pageId" in parent) {
      pageParent = { type: "page_id", page_id: parent.pageId };
      schema = { title: propertyConfig("title", { type: "title" }) };
    } else {
      dataSource = this.dataSources.get(parent.dataSourceId);
      if (!dataSource) throw notFound("data_source", parent.dataSourceId);
      const databaseId = dataSource.dataSource.parent.type === "database_id" ? dataSource.dataSource.parent.database_id : parent.dataSourceId;
      pageParent = { type: "data_source_id", data_source_id: parent.dataSourceId, database_id: databaseId };
      schema = dataSource.dataSource.properties;
    }
    if (children.length > MAX_CHILDREN_PER_REQUEST) {
      throw invalid(`body failed validation: body.children.length should be ≤ \`${MAX_CHILDREN_PER_REQUEST}\`, instead was \`${children.length}\`.`);
    }
    const values: Record<string, PropertyValue> = {};
    for (const [name, config] of Object.entries(schema)) values[name] = emptyProperty(config.type as PropertyType, config.id);
    for (const [name, value] of Object.entries(properties)) {
      const config = schema[name] ?? (name === "title" ? Object.values(schema).find((c) => c.type === "title") : undefined);
      if (!config) throw invalid(`${name} is not a property that exists.`);
      values[config.name] = propertyFromRequest(config.name, config.type as PropertyType, config.id, value);
    }
    const page: PageObjectResponse = {
      object: "page",
      id,
      created_time: at,
      last_edited_time: at,
      in_trash: false,
      archived: false,
      is_archived: false,
      is_locked: false,
      url: `https://www.notion.so/${id.replace(/-/g, "")}`,
      public_url: null,
      parent: pageParent,
      properties: values,
      icon: null,
      cover: null,
      created_by: by,
      last_edited_by: by,
    };
    // Validate the children before anything is stored: a refused request changes nothing.
    const planned = this.planBlocks(children, { type: "page_id", page_id: id }, by, at, "body.children");
    this.pages.set(id, { page, children: [], sharedWith: new Set() });
    this.commitBlocks(id, planned);
    if (parent !== "workspace" && "pageId" in parent) {
      const holder = this.pages.get(parent.pageId) ?? this.blocks.get(parent.pageId);
      holder?.children.push(id);
      this.blocks.set(id, {
        block: {
          object: "block",
          id,
          type: "child_page",
          child_page: { title: pageTitle(page) },
          parent: { type: "page_id", page_id: parent.pageId },
          created_time: at,
          created_by: by,
          last_edited_time: at,
          last_edited_by: by,
          has_children: planned.length > 0,
          in_trash: false,
          archived: false,
        },
        children: [],
      });
    }
    dataSource?.pages.push(id);
    return page;
  }

  /** Update a page's properties and trash state; refuses property edits to a page in the trash. */
  updatePage(stored: StoredPage, by: PartialUserObjectResponse, properties: Readonly<Record<string, unknown>> | undefined, inTrash: boolean | undefined): PageObjectResponse {
    const page = stored.page;
    const restoring = inTrash === false;
    if (page.in_trash && !restoring && properties !== undefined) {
      throw invalid("Can't edit block that is archived. You must unarchive the block before editing.");
    }
    const updates: Record<string, PropertyValue> = {};
    for (const [name, value] of Object.entries(properties ?? {})) {
      const current = page.properties[name] ?? (name === "title" ? Object.values(page.properties).find((v) => v.type === "title") : undefined);
      if (!current) throw invalid(`${name} is not a property that exists.`);
      const key = page.properties[name] ? name : Object.keys(page.properties).find((k) => page.properties[k] === current)!;
      updates[key] = propertyFromRequest(key, current.type as PropertyType, current.id, value);
    }
    Object.assign(page.properties, updates);
    if (inTrash !== undefined) {
      page.in_trash = inTrash;
      page.archived = inTrash;
      page.is_archived = inTrash;
    }
    page.last_edited_time = this.now();
    page.last_edited_by = by;
    const child = this.blocks.get(page.id);
    if (child?.block.type === "child_page") {
      child.block.child_page.title = pageTitle(page);
      child.block.in_trash = page.in_trash;
      child.block.archived = page.in_trash;
    }
    return page;
  }

  /** Append children to a page or block, validating every one before storing any. */
  appendChildren(parentId: string, by: PartialUserObjectResponse, children: readonly unknown[], path = "body.children"): BlockObjectResponse[] {
    if (children.length > MAX_CHILDREN_PER_REQUEST) {
      throw invalid(`body failed validation: ${path}.length should be ≤ \`${MAX_CHILDREN_PER_REQUEST}\`, instead was \`${children.length}\`.`);
    }
    if (children.length === 0) throw invalid(`body failed validation: ${path}.length should be ≥ \`1\`, instead was \`0\`.`);
    const parent: BlockParent = this.pages.has(parentId) ? { type: "page_id", page_id: parentId } : { type: "block_id", block_id: parentId };
    const planned = this.planBlocks(children, parent, by, this.now(), path);
    return this.commitBlocks(parentId, planned);
  }

  private planBlocks(children: readonly unknown[], parent: BlockParent, by: PartialUserObjectResponse, at: string, path: string, depth = 0): Planned[] {
    return children.map((child, index) => {
      const id = newId();
      const { block, children: nested } = blockFromRequest(child, `${path}[${index}]`, { id, parent, at, by });
      if (nested.length > 0 && depth >= 2) throw invalid(`body failed validation: ${path}[${index}] nests children more than two levels deep.`);
      if (nested.length > MAX_CHILDREN_PER_REQUEST) throw invalid(`body failed validation: ${path}[${index}].children.length should be ≤ \`100\`.`);
      return { block, children: this.planBlocks(nested, { type: "block_id", block_id: id }, by, at, `${path}[${index}].${block.type}.children`, depth + 1) };
    });
  }

  private commitBlocks(parentId: string, planned: readonly Planned[]): BlockObjectResponse[] {
    const holder = this.pages.get(parentId) ?? this.blocks.get(parentId);
    const created: BlockObjectResponse[] = [];
    for (const { block, children } of planned) {
      this.blocks.set(block.id, { block, children: [] });
      holder?.children.push(block.id);
      this.commitBlocks(block.id, children);
      created.push(block);
    }
    const parentBlock = this.blocks.get(parentId);
    if (parentBlock && planned.length > 0) parentBlock.block.has_children = true;
    return created;
  }

  // ---------- seeding ----------

  seedDatabase(seed: DatabaseSeed): { databaseId: string; dataSourceId: string } {
    const at = this.now();
    const databaseId = normalizeId(seed.id ?? newId()) ?? newId();
    const dataSourceId = normalizeId(seed.dataSource.id ?? newId()) ?? newId();
    const parent: DatabaseObjectResponse["parent"] =
      seed.parent === undefined || seed.parent === "workspace" ? { type: "workspace", workspace: true } : { type: "page_id", page_id: seed.parent.pageId };
    const by: PartialUserObjectResponse = { object: "user", id: newId() };
    const database: DatabaseObjectResponse = {
      object: "database",
      id: databaseId,
      title: textRich(seed.title),
      description: [],
      parent,
      is_inline: false,
      in_trash: false,
      archived: false,
      is_locked: false,
      created_time: at,
      last_edited_time: at,
      data_sources: [{ id: dataSourceId, name: seed.dataSource.name ?? seed.title }],
      icon: null,
      cover: null,
      url: `https://www.notion.so/${databaseId.replace(/-/g, "")}`,
      public_url: null,
    };
    const properties: Record<string, PropertyConfig> = {};
    for (const [name, spec] of Object.entries(seed.dataSource.properties)) properties[name] = propertyConfig(name, spec);
    if (!Object.values(properties).some((p) => p.type === "title")) throw new Error(`database ${seed.title} needs a title property`);
    const dataSource: DataSourceObjectResponse = {
      object: "data_source",
      id: dataSourceId,
      title: textRich(seed.dataSource.name ?? seed.title),
      description: [],
      parent: { type: "database_id", database_id: databaseId },
      database_parent: parent,
      is_inline: false,
      in_trash: false,
      archived: false,
      created_time: at,
      last_edited_time: at,
      created_by: by,
      last_edited_by: by,
      properties,
      icon: null,
      cover: null,
      url: database.url,
      public_url: null,
    };
    this.databases.set(databaseId, { database, sharedWith: new Set(seed.sharedWith ?? []) });
    this.dataSources.set(dataSourceId, { dataSource, pages: [] });
    return { databaseId, dataSourceId };
  }

  seedPage(seed: PageSeed): PageObjectResponse {
    const parent = seed.parent ?? "workspace";
    const by: PartialUserObjectResponse = { object: "user", id: newId() };
    const titleName =
      parent !== "workspace" && "dataSourceId" in parent
        ? (Object.values(this.dataSources.get(parent.dataSourceId)?.dataSource.properties ?? {}).find((p) => p.type === "title")?.name ?? "title")
        : "title";
    const properties = { ...seed.properties, [titleName]: { title: [{ text: { content: seed.title } }] } };
    const page = this.createPage(by, parent, properties, seed.children ?? [], normalizeId(seed.id ?? newId()) ?? newId());
    const stored = this.pages.get(page.id)!;
    for (const integration of seed.sharedWith ?? []) stored.sharedWith.add(integration);
    if (seed.inTrash) this.updatePage(stored, by, undefined, true);
    return page;
  }
}

interface Planned {
  readonly block: BlockObjectResponse;
  readonly children: readonly Planned[];
}
