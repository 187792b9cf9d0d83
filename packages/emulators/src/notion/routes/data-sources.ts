/** `/v1/databases` and `/v1/data_sources`: read them, and query a data source's pages. */
import type { QueryDataSourceResponse } from "@notionhq/client";
import { compileFilter, sortPages } from "../query.js";
import type { NotionWorld } from "../world.js";
import { paginate, requestedTrash, type NotionRoute } from "./route.js";

export function dataSourceRoutes(world: NotionWorld): NotionRoute[] {
  return [
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
        const inTrash = requestedTrash(body) === true;
        const rows = stored.pages.map((pageId) => world.pages.get(pageId)!.page).filter((p) => p.in_trash === inTrash && predicate(p));
        const sorted = sortPages(rows, body["sorts"], schema);
        const page = paginate(sorted, body["start_cursor"], body["page_size"]);
        const response: QueryDataSourceResponse = { object: "list", type: "page_or_data_source", page_or_data_source: {}, ...page };
        return response;
      },
    },
  ];
}
