import { ToolError } from "@toolgate/core";
import { fromMarkdown } from "mdast-util-from-markdown";
import { gfmFromMarkdown, gfmToMarkdown } from "mdast-util-gfm";
import { toMarkdown } from "mdast-util-to-markdown";
import { gfm } from "micromark-extension-gfm";

/** The syntax tree's node types, as the serializer takes them. */
export type Nodes = Parameters<typeof toMarkdown>[0];
type Node<T extends Nodes["type"]> = Extract<Nodes, { type: T }>;
export type Root = Node<"root">;
export type RootContent = Root["children"][number];
export type PhrasingContent = Node<"paragraph">["children"][number];
export type BlockContent = Node<"blockquote">["children"][number];
export type Definition = Node<"definition">;
export type ListItem = Node<"listItem">;

/** The most `*`, `_` and `~` characters one Markdown text may hold. */
export const MAX_DELIMITERS = 10_000;

/** Markdown (CommonMark with GFM) as the library's syntax tree. */
export function parseMarkdown(markdown: string) {
  // The parser's emphasis matching grows with the square of the delimiters (40 KB of `*a` takes
  // seconds); beyond what any document needs, Markdown is refused rather than left to block the gate.
  const delimiters = markdown.match(/[*_~]/g)?.length ?? 0;
  if (delimiters > MAX_DELIMITERS)
    throw new ToolError("limit_exceeded", `the Markdown holds ${delimiters} emphasis characters (*, _, ~); the limit is ${MAX_DELIMITERS}`, {
      details: { delimiters, limit: MAX_DELIMITERS },
    });
  return fromMarkdown(markdown, { extensions: [gfm()], mdastExtensions: [gfmFromMarkdown()] });
}

/** Syntax tree back to Markdown, the forms this family writes: `-` bullets, `*` marks, backtick fences. */
export function serializeMarkdown(tree: Nodes): string {
  return toMarkdown(tree, { bullet: "-", emphasis: "*", strong: "*", fence: "`", rule: "-", listItemIndent: "one", extensions: [gfmToMarkdown()] });
}
