/** `/v1/pages`: read, create (under a page, a data source or a database) and update a page. */
import { isRecord } from "../../is-record.js";
import { archived, invalid } from "../errors.js";
import type { NotionWorld } from "../world.js";
import { requestedTrash, type NotionRoute } from "./route.js";

export function pageRoutes(world: NotionWorld): NotionRoute[] {
  return [
    {
      method: "GET",
      pattern: /^\/pages\/([^/]+)$/,
      capability: "read_content",
      handle: (caller, [id]) => world.page(caller.integration.id, id!).page,
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
          const holder = world.page(caller.integration.id, parent["page_id"]);
          if (holder.page.in_trash) throw archived();
          for (const name of Object.keys(properties)) {
            if (name !== "title") throw invalid(`Invalid property identifier for a page whose parent is a page: ${name}. Only "title" is allowed.`);
          }
          return world.createPage(caller.by, { pageId: holder.page.id }, properties, children);
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
        return world.createPage(caller.by, { dataSourceId }, properties, children);
      },
    },
    {
      method: "PATCH",
      pattern: /^\/pages\/([^/]+)$/,
      capability: "update_content",
      handle: (caller, [id], body) => {
        const stored = world.page(caller.integration.id, id!);
        const properties = body["properties"] === undefined ? undefined : isRecord(body["properties"]) ? body["properties"] : undefined;
        if (body["properties"] !== undefined && properties === undefined) throw invalid("body failed validation: body.properties should be an object.");
        const trash = requestedTrash(body);
        if (trash !== undefined && typeof trash !== "boolean") throw invalid("body failed validation: body.in_trash should be a boolean.");
        return world.updatePage(stored, caller.by, properties, trash);
      },
    },
  ];
}
