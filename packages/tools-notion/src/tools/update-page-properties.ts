import { isFullPage } from "@notionhq/client";
import { defineTool, ToolError } from "@toolgate/core";
import { z } from "zod";
import { notionCaller, isolation } from "../client.js";
import { connector, NOTION_WRITE_CONSENT } from "../permissions.js";
import { notionId, propertyInput, propertyRequest } from "../pages.js";
import type { NotionSettings } from "../options.js";

export function createUpdatePagePropertiesTool(settings: NotionSettings) {
  return defineTool({
    id: "notion.update_page_properties",
    title: "Update Notion page properties",
    description:
      "Set property values of a Notion page (title, text, number, checkbox, select, multi-select, status, date, url, email). The previous values are replaced.",
    input: z
      .object({
        pageId: notionId,
        properties: z
          .record(z.string().min(1).max(200), propertyInput)
          .refine((p) => Object.keys(p).length > 0 && Object.keys(p).length <= 50, { message: "set between 1 and 50 properties" }),
      })
      .strict(),
    output: z.object({ id: z.string(), url: z.string(), updated: z.array(z.string()) }),
    actionType: "notion-write",
    effect: "write",
    requiredAllowlist: ["notion:write"],
    risk: "medium",
    // What an approver may change before it runs (ids stay out: a desk preview reads them as the caller).
    edits: { fields: ["/properties"] },
    approval: "always",
    preview: (input) => ({
      summary: `Set ${Object.keys(input.properties).join(", ")} on Notion page ${input.pageId}`,
      details: { pageId: input.pageId, properties: input.properties },
    }),
    idempotent: true,
    retryable: true,
    reversible: false,
    timeoutMs: 60_000,
    dataEgress: true,
    dataClass: "personal",
    requiredConsent: [NOTION_WRITE_CONSENT],
    connector: connector("read_content", "update_content"),
    runtimeIsolation: isolation,
    provenance: { destinations: ["/pageId"], content: ["/properties"] },
    untrustedOutput: false,
    target: (input) => `page ${input.pageId}`,
    describeResult: (output) => `updated ${output.updated.length} properties`,
    handler: async (input, ctx) => {
      const notion = await notionCaller(ctx, settings.retry);
      const page = await notion.read(`read page ${input.pageId}`, (client) => client.pages.retrieve({ page_id: input.pageId }));
      if (!isFullPage(page))
        throw new ToolError("provider_rejected", `Notion answered page ${input.pageId} without its properties`, { boundary: "effect_not_started" });
      const body: Record<string, unknown> = {};
      for (const [name, value] of Object.entries(input.properties)) {
        const current = page.properties[name];
        if (!current) {
          throw new ToolError("invalid_input", `page ${input.pageId} has no property ${JSON.stringify(name)}`, {
            boundary: "effect_not_started",
            details: { properties: Object.keys(page.properties) },
          });
        }
        body[name] = propertyRequest(name, current.type, value);
      }
      const updated = await notion.write(`update page ${input.pageId}`, (client) => client.pages.update({ page_id: input.pageId, properties: body as never }));
      return { id: updated.id, url: isFullPage(updated) ? updated.url : page.url, updated: Object.keys(body) };
    },
  });
}
