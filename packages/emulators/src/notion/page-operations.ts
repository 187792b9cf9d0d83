/**
 * Creating and updating pages: property values checked against the parent's schema, content
 * validated before anything is stored, and the `child_page` block a page under a page shows as.
 */
import type { BlockObjectResponse, PageObjectResponse, PartialUserObjectResponse } from "@notionhq/client";
import {
  emptyProperty,
  newId,
  pageTitle,
  propertyConfig,
  propertyFromRequest,
  type BlockParent,
  type PropertyConfig,
  type PropertyType,
  type PropertyValue,
} from "./convert.js";
import { archived, invalid, notFound } from "./errors.js";
import { checkChildCount, commitBlocks, planBlocks } from "./block-operations.js";
import type { StoredDataSource, StoredPage } from "./world-model.js";
import type { NotionWorld } from "./world.js";

/** Where a new page goes: under a page, in a data source, or at the top of the workspace. */
export type NewPageParent = { pageId: string } | { dataSourceId: string } | "workspace";

/** Create a page under a page or a data source; properties and children in request shape. */
export function createPage(
  world: NotionWorld,
  by: PartialUserObjectResponse,
  parent: NewPageParent,
  properties: Readonly<Record<string, unknown>>,
  children: readonly unknown[],
  id: string = newId(),
): PageObjectResponse {
  const at = world.now();
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
    dataSource = world.dataSources.get(parent.dataSourceId);
    if (!dataSource) throw notFound("data_source", parent.dataSourceId);
    const databaseId = dataSource.dataSource.parent.type === "database_id" ? dataSource.dataSource.parent.database_id : parent.dataSourceId;
    pageParent = { type: "data_source_id", data_source_id: parent.dataSourceId, database_id: databaseId };
    schema = dataSource.dataSource.properties;
  }
  checkChildCount(children, "body.children");
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
  const planned = planBlocks(children, { type: "page_id", page_id: id }, by, at, "body.children");
  world.pages.set(id, { page, children: [], sharedWith: new Set() });
  commitBlocks(world, id, planned);
  if (parent !== "workspace" && "pageId" in parent) {
    const holder = world.pages.get(parent.pageId) ?? world.blocks.get(parent.pageId);
    holder?.children.push(id);
    world.blocks.set(id, { block: childPageBlock(page, planned.length > 0), children: [] });
  }
  dataSource?.pages.push(id);
  return page;
}

/** Update a page's properties and trash state; refuses property edits to a page in the trash. */
export function updatePage(
  world: NotionWorld,
  stored: StoredPage,
  by: PartialUserObjectResponse,
  properties: Readonly<Record<string, unknown>> | undefined,
  inTrash: boolean | undefined,
): PageObjectResponse {
  const page = stored.page;
  const restoring = inTrash === false;
  if (page.in_trash && !restoring && properties !== undefined) throw archived();
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
  page.last_edited_time = world.now();
  page.last_edited_by = by;
  const child = world.blocks.get(page.id);
  if (child?.block.type === "child_page") {
    child.block.child_page.title = pageTitle(page);
    child.block.in_trash = page.in_trash;
    child.block.archived = page.in_trash;
  }
  return page;
}

/** A page as the block it is: a `child_page` carrying its title. */
export function childPageBlock(page: PageObjectResponse, hasChildren: boolean): BlockObjectResponse {
  return {
    object: "block",
    id: page.id,
    type: "child_page",
    child_page: { title: pageTitle(page) },
    parent: page.parent,
    created_time: page.created_time,
    created_by: page.created_by,
    last_edited_time: page.last_edited_time,
    last_edited_by: page.last_edited_by,
    has_children: hasChildren,
    in_trash: page.in_trash,
    archived: page.in_trash,
  };
}
