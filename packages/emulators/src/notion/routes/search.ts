/** `POST /v1/search`: pages and data sources the integration can see, by title, newest edit first. */
import type { DataSourceObjectResponse, PageObjectResponse, SearchResponse } from "@notionhq/client";
import { isRecord } from "../../is-record.js";
import { pageTitle, plainText } from "../convert.js";
import { invalid } from "../errors.js";
import type { NotionWorld } from "../world.js";
import { paginate, type NotionRoute } from "./route.js";

export function searchRoutes(world: NotionWorld): NotionRoute[] {
  return [
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
  ];
}
