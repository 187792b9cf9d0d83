import { createHash } from "node:crypto";
import { isFullPage } from "@notionhq/client";
import { defineTool, ToolError } from "@toolgate/core";
import { z } from "zod";
import { chunkBlocks, markdownPreview, markdownToBlocks } from "../markdown.js";
import { notionCaller, isolation } from "../client.js";
import { connector, NOTION_WRITE_CONSENT } from "../permissions.js";
import { notionId, propertyInput, propertyRequest } from "../pages.js";
import type { NotionSettings } from "../options.js";
import { resolveDataSource } from "./query-database.js";

/** The marker a create with this idempotency key writes, and a retry looks for. */
export function createMarker(idempotencyKey: string): string {
  return `tg-${createHash("sha256").update(idempotencyKey).digest("hex").slice(0, 32)}`;
}

export function createCreatePageTool(settings: NotionSettings) {
  const marker = settings.markerProperty;
  return defineTool({
    id: "notion.create_page",
    title: "Create a Notion page",
    description: `Create a page in a Notion database with a title, property values and Markdown content. Safe to retry: a retry with the same idempotency key finds the page the first attempt made (through the database's "${marker}" property) instead of making a second.`,
    input: z
      .object({
        parent: z.union([z.object({ databaseId: notionId }).strict(), z.object({ dataSourceId: notionId }).strict()]),
        title: z.string().min(1).max(2000),
        properties: z.record(z.string().min(1).max(200), propertyInput).optional(),
        markdown: z.string().max(200_000).optional().meta({ description: "The page's content in Markdown" }),
      })
      .strict(),
    output: z.object({
      id: z.string(),
      url: z.string(),
      created: z.boolean().meta({ description: "false when a retry found the page an earlier attempt created" }),
      blocks: z.number().int(),
    }),
    actionType: "notion-write",
    effect: "write",
    requiredAllowlist: ["notion:write"],
    risk: "medium",
    // What an approver may change before it runs (ids stay out: a desk preview reads them as the caller).
    edits: { fields: ["/title", "/properties", "/markdown"] },
    approval: "always",
    preview: (input) => ({
      summary: `Create Notion page ${JSON.stringify(input.title)} in database ${"databaseId" in input.parent ? input.parent.databaseId : input.parent.dataSourceId}`,
      details: { parent: input.parent, title: input.title, properties: input.properties ?? {} },
      ...(input.markdown ? { body: markdownPreview(input.markdown) } : {}),
    }),
    idempotent: true,
    retryable: true,
    reversible: true,
    timeoutMs: 120_000,
    dataEgress: true,
    dataClass: "personal",
    requiredConsent: [NOTION_WRITE_CONSENT],
    connector: connector("read_content", "insert_content"),
    runtimeIsolation: isolation,
    provenance: { destinations: ["/parent"], content: ["/title", "/properties", "/markdown"] },
    untrustedOutput: false,
    target: (input) => `database ${"databaseId" in input.parent ? input.parent.databaseId : input.parent.dataSourceId}`,
    describeResult: (output) => `page ${output.id}${output.created ? "" : " (found from an earlier attempt)"}`,
    handler: async (input, ctx) => {
      const notion = await notionCaller(ctx, settings.retry);
      const dataSourceId = await resolveDataSource(notion, input.parent);
      const source = await notion.read(`read data source ${dataSourceId}`, (client) => client.dataSources.retrieve({ data_source_id: dataSourceId }));
      const schema = "properties" in source ? source.properties : {};
      const titleName = Object.values(schema).find((p) => p.type === "title")?.name;
      if (schema[marker]?.type !== "rich_text" || titleName === undefined) {
        throw new ToolError(
          "provider_rejected",
          `data source ${dataSourceId} has no rich-text property ${JSON.stringify(marker)}; add one so that a retry can find the page instead of creating a second`,
          { boundary: "effect_not_started" },
        );
      }
      const key = createMarker(ctx.idempotencyKey);
      const earlier = await notion.read(`look for an earlier attempt in ${dataSourceId}`, (client) =>
        client.dataSources.query({ data_source_id: dataSourceId, page_size: 1, filter: { property: marker, rich_text: { equals: key } } }),
      );
      const found = earlier.results.find(isFullPage);
      if (found) return { id: found.id, url: found.url, created: false, blocks: 0 };

      const properties: Record<string, unknown> = {};
      for (const [name, value] of Object.entries(input.properties ?? {})) {
        const config = schema[name];
        if (!config)
          throw new ToolError("invalid_input", `data source ${dataSourceId} has no property ${JSON.stringify(name)}`, {
            boundary: "effect_not_started",
            details: { properties: Object.keys(schema) },
          });
        if (name === marker || config.type === "title")
          throw new ToolError("invalid_input", `property ${JSON.stringify(name)} is set by the tool itself`, { boundary: "effect_not_started" });
        properties[name] = propertyRequest(name, config.type, value);
      }
      properties[titleName] = propertyRequest(titleName, "title", input.title);
      properties[marker] = propertyRequest(marker, "rich_text", key);
      const [first = [], ...rest] = chunkBlocks(markdownToBlocks(input.markdown ?? ""));
      const page = await notion.write(`create a page in ${dataSourceId}`, (client) =>
        client.pages.create({ parent: { data_source_id: dataSourceId }, properties: properties as never, children: first }),
      );
      let appended = first.length;
      for (const chunk of rest) {
        try {
          await notion.write(`append content to page ${page.id}`, (client) => client.blocks.children.append({ block_id: page.id, children: chunk }));
        } catch (error) {
          // The page exists with part of its content: say so rather than let a retry look clean.
          const cause = ToolError.is(error) ? error : undefined;
          throw new ToolError(
            cause?.code ?? "provider_unavailable",
            `page ${page.id} was created, but only ${appended} of its blocks were written: ${cause?.message ?? "the rest failed"}`,
            {
              cause: error,
              boundary: "effect_started",
              details: { pageId: page.id, blocksWritten: appended },
            },
          );
        }
        appended += chunk.length;
      }
      return { id: page.id, url: isFullPage(page) ? page.url : "", created: true, blocks: first.length + rest.reduce((n, c) => n + c.length, 0) };
    },
  });
}
