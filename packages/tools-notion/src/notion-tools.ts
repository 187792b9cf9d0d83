import { defineFamily } from "@toolgate/core";
import { resolveSettings, type NotionToolsOptions } from "./options.js";
import { NOTION_PERMISSIONS } from "./permissions.js";
import { createAddCommentTool } from "./tools/add-comment.js";
import { createAppendBlocksTool } from "./tools/append-blocks.js";
import { createArchivePageTool } from "./tools/archive-page.js";
import { createCreatePageTool } from "./tools/create-page.js";
import { createQueryDatabaseTool } from "./tools/query-database.js";
import { createReadPageTool } from "./tools/read-page.js";
import { createSearchTool } from "./tools/search.js";
import { createUpdatePagePropertiesTool } from "./tools/update-page-properties.js";

/**
 * The Notion family, for `createToolRegistry({ families })`.
 *
 * Every tool reaches Notion through the connector token runtime (`connector.provider: "notion"`,
 * the integration's capabilities as scopes) with the real `@notionhq/client`; register the
 * adapter from `createNotionConnector()` with the runtime.
 *
 * - reads (`notion:read`, untrusted output): `notion.search`, `notion.read_page`, `notion.query_database`;
 * - writes (`notion:write`, approval, egress of `personal` data, consent `notion-write-on-my-behalf`):
 *   `notion.create_page` (safe to retry), `notion.append_blocks`, `notion.update_page_properties`;
 * - `notion.archive_page` (`notion:write`, destructive, approval, idempotent);
 * - `notion.add_comment` (`notion:comment`, approval, egress).
 *
 * Failures map onto Toolgate's codes: a page not shared with the integration is `not_found`, a
 * missing capability `scope_missing`, a revoked token `connector_reauth_required`, Notion's
 * `validation_error` `provider_rejected`, `conflict_error` `conflict`, and a 429 that outlasts the
 * retry bounds `rate_limited` with `retryAfterSeconds`.
 */
export function createNotionTools(options: NotionToolsOptions = {}) {
  const settings = resolveSettings(options);
  return defineFamily({
    name: "notion",
    description: "Notion pages, databases and comments through the official client, with the integration's capabilities as connector scopes.",
    tools: [
      createSearchTool(settings),
      createReadPageTool(settings),
      createQueryDatabaseTool(settings),
      createCreatePageTool(settings),
      createAppendBlocksTool(settings),
      createUpdatePagePropertiesTool(settings),
      createArchivePageTool(settings),
      createAddCommentTool(settings),
    ],
    permissions: NOTION_PERMISSIONS,
  });
}
