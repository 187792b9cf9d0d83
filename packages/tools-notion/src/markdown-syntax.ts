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

/** Markdown (CommonMark with GFM) as the library's syntax tree. */
export function parseMarkdown(markdown: string) {
  return fromMarkdown(markdown, { extensions: [gfm()], mdastExtensions: [gfmFromMarkdown()] });
}

/** Syntax tree back to Markdown, the forms this family writes: `-` bullets, `*` marks, backtick fences. */
export function serializeMarkdown(tree: Nodes): string {
  return toMarkdown(tree, { bullet: "-", emphasis: "*", strong: "*", fence: "`", rule: "-", listItemIndent: "one", extensions: [gfmToMarkdown()] });
}
