/** Seeding the world as a test sets it up: a database with its one data source, and pages. */
import type { DataSourceObjectResponse, DatabaseObjectResponse, PageObjectResponse, PartialUserObjectResponse } from "@notionhq/client";
import { newId, normalizeId, propertyConfig, textRich, type PropertyConfig } from "./convert.js";
import { createPage, updatePage } from "./page-operations.js";
import type { DatabaseSeed, PageSeed } from "./world-model.js";
import type { NotionWorld } from "./world.js";

export function seedDatabase(world: NotionWorld, seed: DatabaseSeed): { databaseId: string; dataSourceId: string } {
  const at = world.now();
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
  world.databases.set(databaseId, { database, sharedWith: new Set(seed.sharedWith ?? []) });
  world.dataSources.set(dataSourceId, { dataSource, pages: [] });
  return { databaseId, dataSourceId };
}

export function seedPage(world: NotionWorld, seed: PageSeed): PageObjectResponse {
  const parent = seed.parent ?? "workspace";
  const by: PartialUserObjectResponse = { object: "user", id: newId() };
  const titleName =
    parent !== "workspace" && "dataSourceId" in parent
      ? (Object.values(world.dataSources.get(parent.dataSourceId)?.dataSource.properties ?? {}).find((p) => p.type === "title")?.name ?? "title")
      : "title";
  const properties = { ...seed.properties, [titleName]: { title: [{ text: { content: seed.title } }] } };
  const page = createPage(world, by, parent, properties, seed.children ?? [], normalizeId(seed.id ?? newId()) ?? newId());
  const stored = world.pages.get(page.id)!;
  for (const integration of seed.sharedWith ?? []) stored.sharedWith.add(integration);
  if (seed.inTrash) updatePage(world, stored, by, undefined, true);
  return page;
}
