import { isFullPage } from "@notionhq/client";
import { defineTool } from "@toolgate/core";
import { z } from "zod";
import { notionCaller, isolation } from "../client.js";
import { connector } from "../permissions.js";
import { notionId } from "../pages.js";
import type { NotionSettings } from "../options.js";

export function createArchivePageTool(settings: NotionSettings) {
  return defineTool({
    id: "notion.archive_page",
    title: "Archive a Notion page",
    description:
      "Move a Notion page, with everything under it, to the trash. People lose it from view at once; it can be restored from Notion's trash until the trash is emptied. Reports whether it was already archived.",
    input: z.object({ pageId: notionId }).strict(),
    output: z.object({ id: z.string(), archived: z.literal(true), alreadyArchived: z.boolean() }),
    actionType: "notion-write",
    effect: "destructive",
    requiredAllowlist: ["notion:write"],
    risk: "high",
    // An approver approves or denies this call as asked; nothing in it is edited.
    edits: false,
    approval: "always",
    preview: (input) => ({ summary: `Move Notion page ${input.pageId} and everything under it to the trash`, details: { pageId: input.pageId } }),
    idempotent: true,
    retryable: true,
    reversible: true,
    timeoutMs: 60_000,
    connector: connector("read_content", "update_content"),
    runtimeIsolation: isolation,
    provenance: { destinations: ["/pageId"] },
    untrustedOutput: false,
    target: (input) => `page ${input.pageId}`,
    describeResult: (output) => (output.alreadyArchived ? "was already archived" : "archived"),
    handler: async (input, ctx) => {
      const notion = await notionCaller(ctx, settings.retry);
      const page = await notion.read(`read page ${input.pageId}`, (client) => client.pages.retrieve({ page_id: input.pageId }));
      if (isFullPage(page) && page.in_trash) return { id: page.id, archived: true as const, alreadyArchived: true };
      const updated = await notion.write(`archive page ${input.pageId}`, (client) => client.pages.update({ page_id: input.pageId, in_trash: true }));
      return { id: updated.id, archived: true as const, alreadyArchived: false };
    },
  });
}
