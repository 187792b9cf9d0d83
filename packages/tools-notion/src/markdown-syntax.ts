import type { Nodes } from "mdast";
import { fromMarkdown } from "mdast-util-from-markdown";
import { gfmFromMarkdown, gfmToMarkdown } from "mdast-util-gfm";
import { toMarkdown } from "mdast-util-to-markdown";
import { gfm } from "micromark-extension-gfm";

/** Markdown (CommonMark with GFM) as the library's syntax tree. */
export function parseMarkdown(markdown: string) {
  return fromMarkdown(markdown, { extensions: [gfm()], mdastExtensions: [gfmFromMarkdown()] });
}

/** Syntax tree back to Markdown, the forms this family writes: `-` bullets, `*` marks, backtick fences. */
export function serializeMarkdown(tree: Nodes): string {
  return toMarkdown(tree, { bullet: "-", emphasis: "*", strong: "*", fence: "`", rule: "-", listItemIndent: "one", extensions: [gfmToMarkdown()] });
}
