import { defineTool } from "@toolgate/core";
import { z } from "zod";
import { inlineMarkdownToRichText, MAX_RICH_TEXT_ITEMS, richTextPreview } from "../markdown.js";
import { notionCaller, isolation } from "../client.js";
import { connector, NOTION_WRITE_CONSENT } from "../permissions.js";
import { notionId } from "../pages.js";
import type { NotionSettings } from "../options.js";

export function createAddCommentTool(settings: NotionSettings) {
  return defineTool({
    id: "notion.add_comment",
    title: "Comment on a Notion page",
    description:
      "Add a comment to a Notion page, or reply in an existing discussion. Inline Markdown (bold, italic, code, links) is kept. Visible to everyone who can see the page.",
    input: z.union([
      z.object({ pageId: notionId, text: z.string().min(1).max(20_000) }).strict(),
      z.object({ discussionId: notionId, text: z.string().min(1).max(20_000) }).strict(),
    ]),
    output: z.object({ id: z.string(), discussionId: z.string() }),
    actionType: "notion-comment",
    effect: "write",
    requiredAllowlist: ["notion:comment"],
    risk: "medium",
    // What an approver may change before it runs (ids stay out: a desk preview reads them as the caller).
    edits: { fields: ["/text"] },
    approval: "always",
    preview: (input) => ({
      summary: "pageId" in input ? `Comment on Notion page ${input.pageId}` : `Reply in Notion discussion ${input.discussionId}`,
      details: "pageId" in input ? { pageId: input.pageId } : { discussionId: input.discussionId },
      body: richTextPreview(inlineMarkdownToRichText(input.text).slice(0, MAX_RICH_TEXT_ITEMS)),
    }),
    idempotent: false,
    retryable: false,
    reversible: false,
    timeoutMs: 60_000,
    dataEgress: true,
    dataClass: "personal",
    requiredConsent: [NOTION_WRITE_CONSENT],
    connector: connector("insert_comments"),
    runtimeIsolation: isolation,
    provenance: { destinations: ["/pageId", "/discussionId"], content: ["/text"] },
    untrustedOutput: false,
    target: (input) => ("pageId" in input ? `page ${input.pageId}` : `discussion ${input.discussionId}`),
    describeResult: (output) => `comment ${output.id}`,
    handler: async (input, ctx) => {
      const notion = await notionCaller(ctx, settings.retry);
      const rich = inlineMarkdownToRichText(input.text).slice(0, MAX_RICH_TEXT_ITEMS);
      const comment = await notion.write("add a comment", (client) =>
        client.comments.create(
          "pageId" in input ? { parent: { page_id: input.pageId }, rich_text: rich } : { discussion_id: input.discussionId, rich_text: rich },
        ),
      );
      return { id: comment.id, discussionId: "discussion_id" in comment ? comment.discussion_id : "" };
    },
  });
}
