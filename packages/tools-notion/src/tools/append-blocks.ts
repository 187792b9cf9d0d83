import { defineTool, ToolError } from "@toolgate/core";
import { z } from "zod";
import { chunkBlocks, markdownPreview, markdownToBlocks } from "../markdown.js";
import { notionCaller, isolation } from "../client.js";
import { connector, NOTION_WRITE_CONSENT } from "../permissions.js";
import { notionId } from "../pages.js";
import type { NotionSettings } from "../options.js";

export function createAppendBlocksTool(settings: NotionSettings) {
  return defineTool({
    id: "notion.append_blocks",
    title: "Append to a Notion page",
    description:
      "Append Markdown content (headings, lists, code, quotes, links) to the end of a Notion page or block. Long content is split into several requests; a retry after an interrupted call may append twice.",
    input: z
      .object({
        pageId: notionId.meta({ description: "The page (or block) to append to" }),
        markdown: z.string().min(1).max(200_000),
      })
      .strict(),
    output: z.object({ pageId: z.string(), blocks: z.number().int(), requests: z.number().int() }),
    actionType: "notion-write",
    effect: "write",
    requiredAllowlist: ["notion:write"],
    risk: "medium",
    // What an approver may change before it runs (ids stay out: a desk preview reads them as the caller).
    edits: { fields: ["/markdown"] },
    approval: "always",
    preview: (input) => ({
      summary: `Append content to Notion page ${input.pageId}`,
      details: { pageId: input.pageId },
      body: markdownPreview(input.markdown),
    }),
    idempotent: false,
    retryable: false,
    reversible: false,
    timeoutMs: 120_000,
    dataEgress: true,
    dataClass: "personal",
    requiredConsent: [NOTION_WRITE_CONSENT],
    connector: connector("insert_content"),
    runtimeIsolation: isolation,
    provenance: { destinations: ["/pageId"], content: ["/markdown"] },
    untrustedOutput: false,
    target: (input) => `page ${input.pageId}`,
    describeResult: (output) => `${output.blocks} blocks in ${output.requests} requests`,
    handler: async (input, ctx) => {
      const notion = await notionCaller(ctx, settings.retry);
      const chunks = chunkBlocks(markdownToBlocks(input.markdown));
      let blocks = 0;
      for (const [index, chunk] of chunks.entries()) {
        try {
          await notion.write(`append to ${input.pageId}`, (client) => client.blocks.children.append({ block_id: input.pageId, children: chunk }));
        } catch (error) {
          if (index === 0 || !ToolError.is(error)) throw error;
          // Some content is already on the page: running the call again would repeat it.
          throw new ToolError(error.code, `${error.message} (after ${blocks} of the blocks were appended)`, {
            cause: error,
            boundary: "effect_started",
            details: { blocksAppended: blocks },
          });
        }
        blocks += chunk.length;
      }
      return { pageId: input.pageId, blocks, requests: chunks.length };
    },
  });
}
