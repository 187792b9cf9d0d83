/**
 * The Notion emulator's data model: what a test seeds (integrations, databases, pages) and the
 * records the world stores, each holding an object in the shape `@notionhq/client` answers with.
 */
import type { BlockObjectResponse, DataSourceObjectResponse, DatabaseObjectResponse, PageObjectResponse } from "@notionhq/client";
import type { PropertySpec } from "./convert.js";

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
  /**
   * A public integration's OAuth client, for `/v1/oauth/authorize` and `POST /v1/oauth/token`;
   * `redirectUris`: loopback URIs, any port (default `http://127.0.0.1/callback`, `http://[::1]/callback`).
   */
  readonly oauth?: { readonly clientId: string; readonly clientSecret: string; readonly redirectUris?: readonly string[] };
}

export interface NotionIntegration {
  readonly id: string;
  readonly name: string;
  readonly botId: string;
  readonly capabilities: Set<NotionCapability>;
  readonly oauth: { readonly clientId: string; readonly clientSecret: string; readonly redirectUris?: readonly string[] } | undefined;
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

/** A page, the ids of the blocks directly under it, and the integrations it is shared with. */
export interface StoredPage {
  page: PageObjectResponse;
  children: string[];
  sharedWith: Set<string>;
}

/** A block and the ids of the blocks directly under it. */
export interface StoredBlock {
  block: BlockObjectResponse;
  children: string[];
}

export interface StoredDatabase {
  database: DatabaseObjectResponse;
  sharedWith: Set<string>;
}

/** A data source and the ids of its pages (its rows), oldest first. */
export interface StoredDataSource {
  dataSource: DataSourceObjectResponse;
  pages: string[];
}

/** What a bearer token stands for. */
export interface TokenRecord {
  readonly integrationId: string;
  readonly kind: "internal" | "oauth";
  revoked: boolean;
}
