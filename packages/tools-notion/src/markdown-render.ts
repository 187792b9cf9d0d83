import type { BlockObjectRequest, BlockObjectResponse, RichTextItemResponse } from "@notionhq/client";
import { serializeMarkdown, type BlockContent, type ListItem, type PhrasingContent, type Root, type RootContent } from "./markdown-syntax.js";

/** A block with its children already fetched. */
export interface BlockNode {
  readonly block: BlockObjectResponse;
  readonly children: readonly BlockNode[];
}

type Mark = "link" | "strong" | "emphasis" | "delete";
/** Outermost first: a run sharing a link is one link, then bold, italic, strike inside. */
const MARKS: readonly Mark[] = ["link", "strong", "emphasis", "delete"];

/** The key of a mark an item carries (a link's target is part of it), or undefined. */
function markOf(r: RichTextItemResponse, mark: Mark): string | undefined {
  const a = r.annotations;
  if (mark === "link") return r.href ? `link:${r.href}` : undefined;
  return (mark === "strong" ? a.bold : mark === "emphasis" ? a.italic : a.strikethrough) ? mark : undefined;
}

/**
 * Rich text items as inline nodes: at each point the mark shared by the longest run of items wraps
 * that run, so `*a **b** c*` stays one emphasis and the serializer never meets `**a****b**`.
 */
function build(items: readonly RichTextItemResponse[], open: ReadonlySet<Mark>): PhrasingContent[] {
  const out: PhrasingContent[] = [];
  let i = 0;
  while (i < items.length) {
    const item = items[i]!;
    let best: { mark: Mark; end: number } | undefined;
    for (const mark of MARKS) {
      const key = markOf(item, mark);
      if (open.has(mark) || key === undefined) continue;
      let end = i + 1;
      while (end < items.length && markOf(items[end]!, mark) === key) end++;
      if (!best || end > best.end) best = { mark, end };
    }
    if (!best) {
      const last = out.at(-1);
      if (item.annotations.code) out.push({ type: "inlineCode", value: item.plain_text });
      else if (last?.type === "text") out[out.length - 1] = { type: "text", value: last.value + item.plain_text };
      else out.push({ type: "text", value: item.plain_text });
      i++;
      continue;
    }
    const children = build(items.slice(i, best.end), new Set([...open, best.mark]));
    out.push(best.mark === "link" ? { type: "link", url: item.href!, children } : ({ type: best.mark, children } as PhrasingContent));
    i = best.end;
  }
  return out;
}

/**
 * Whitespace at the edge of bold, italic or strike moved outside it, innermost first: Markdown
 * cannot open or close a mark at a space, and the serializer would otherwise write `&#x20;`.
 */
function hoistSpaces(nodes: readonly PhrasingContent[]): PhrasingContent[] {
  const out: PhrasingContent[] = [];
  const push = (node: PhrasingContent) => {
    const last = out.at(-1);
    if (node.type === "text" && node.value === "") return;
    if (node.type === "text" && last?.type === "text") out[out.length - 1] = { type: "text", value: last.value + node.value };
    else out.push(node);
  };
  for (const node of nodes) {
    if (node.type !== "strong" && node.type !== "emphasis" && node.type !== "delete") {
      push(node.type === "link" ? { ...node, children: hoistSpaces(node.children) } : node);
      continue;
    }
    const children = hoistSpaces(node.children);
    const first = children[0];
    const last = children.at(-1);
    const before = first?.type === "text" ? /^\s*/.exec(first.value)![0] : "";
    const after = last?.type === "text" && (last !== first || before.length < last.value.length) ? /\s*$/.exec(last.value)![0] : "";
    if (first?.type === "text") children[0] = { type: "text", value: first.value.slice(before.length) };
    const end = children.at(-1);
    if (end?.type === "text") children[children.length - 1] = { type: "text", value: end.value.slice(0, end.value.length - after.length) };
    push({ type: "text", value: before });
    const kept = children.filter((c) => c.type !== "text" || c.value !== "");
    if (kept.length > 0) push({ ...node, children: kept } as PhrasingContent);
    push({ type: "text", value: after });
  }
  return out;
}

function phrasing(rich: readonly RichTextItemResponse[]): PhrasingContent[] {
  return hoistSpaces(
    build(
      rich.filter((r) => r.plain_text !== ""),
      new Set(),
    ),
  );
}

/** Rich text as inline Markdown, written by the Markdown serializer (so literal `*`, `[`, `_` are escaped). */
export function richTextToMarkdown(rich: readonly RichTextItemResponse[]): string {
  return serializeMarkdown({ type: "paragraph", children: phrasing(rich) }).replace(/\n$/, "");
}

/** Text the page holds that has no Markdown form, written as is on one line. */
const placeholder = (text: string): RootContent => ({ type: "html", value: `[${text.replace(/[\r\n]+/g, " ")}]` });

/** A block's own text as its leading paragraph; none when it has no text, so its children lead. */
const lead = (rich: readonly RichTextItemResponse[]): BlockContent[] =>
  rich.some((r) => r.plain_text !== "") ? [{ type: "paragraph", children: phrasing(rich) }] : [];

type ListKind = "bullet" | "ordered";

function listKind(block: BlockObjectResponse): ListKind | undefined {
  if (block.type === "numbered_list_item") return "ordered";
  return block.type === "bulleted_list_item" || block.type === "to_do" || block.type === "toggle" ? "bullet" : undefined;
}

function listItem(node: BlockNode): ListItem {
  const b = node.block;
  const rich =
    b.type === "numbered_list_item"
      ? b.numbered_list_item.rich_text
      : b.type === "to_do"
        ? b.to_do.rich_text
        : b.type === "toggle"
          ? b.toggle.rich_text
          : b.type === "bulleted_list_item"
            ? b.bulleted_list_item.rich_text
            : [];
  return {
    type: "listItem",
    spread: false,
    ...(b.type === "to_do" ? { checked: b.to_do.checked } : {}),
    children: [...lead(rich), ...(content(node.children) as BlockContent[])],
  };
}

function block(node: BlockNode): RootContent[] {
  const b = node.block;
  const kids = content(node.children);
  const paragraph = (rich: readonly RichTextItemResponse[]): RootContent => ({ type: "paragraph", children: phrasing(rich) });
  switch (b.type) {
    case "paragraph":
      return [paragraph(b.paragraph.rich_text), ...kids];
    case "heading_1":
    case "heading_2":
    case "heading_3": {
      const rich = b.type === "heading_1" ? b.heading_1.rich_text : b.type === "heading_2" ? b.heading_2.rich_text : b.heading_3.rich_text;
      return [{ type: "heading", depth: Number(b.type.slice(-1)) as 1 | 2 | 3, children: phrasing(rich) }, ...kids];
    }
    case "quote":
    case "callout": {
      const rich = b.type === "quote" ? b.quote.rich_text : b.callout.rich_text;
      return [{ type: "blockquote", children: [...lead(rich), ...kids] as BlockContent[] }];
    }
    case "code":
      return [
        { type: "code", lang: b.code.language === "plain text" ? null : b.code.language, value: b.code.rich_text.map((r) => r.plain_text).join("") },
        ...kids,
      ];
    case "divider":
      return [{ type: "thematicBreak" }, ...kids];
    case "child_page":
      return [placeholder(`child page: ${b.child_page.title}`)];
    case "child_database":
      return [placeholder(`child database: ${b.child_database.title}`)];
    default:
      return [placeholder(`unsupported block: ${b.type}`), ...kids];
  }
}

/** Blocks as Markdown nodes; consecutive list items of one kind form one list. */
function content(nodes: readonly BlockNode[]): RootContent[] {
  const out: RootContent[] = [];
  for (const node of nodes) {
    const kind = listKind(node.block);
    if (kind === undefined) {
      out.push(...block(node));
      continue;
    }
    const last = out.at(-1);
    if (last?.type === "list" && last.ordered === (kind === "ordered")) last.children.push(listItem(node));
    else out.push({ type: "list", ordered: kind === "ordered", spread: false, children: [listItem(node)] });
  }
  return out;
}

/** Render fetched blocks as Markdown, through the Markdown serializer. */
export function blocksToMarkdown(nodes: readonly BlockNode[]): string {
  const root: Root = { type: "root", children: content(nodes) };
  return serializeMarkdown(root).replace(/\n$/, "");
}

type RichTextRequestItem = { text?: { content: string; link?: { url: string } | null }; annotations?: Partial<RichTextItemResponse["annotations"]> };

/** Rich text items of a write request as Notion stores them (plain text, default marks, the link as href). */
export function requestRichText(items: readonly RichTextRequestItem[]): RichTextItemResponse[] {
  return items.map((r) => {
    const content = r.text?.content ?? "";
    const annotations = { bold: false, italic: false, strikethrough: false, underline: false, code: false, color: "default", ...r.annotations };
    return {
      type: "text",
      text: { content, link: r.text?.link ?? null },
      annotations,
      plain_text: content,
      href: r.text?.link?.url ?? null,
    } as RichTextItemResponse;
  });
}

/** Block requests as the blocks Notion holds once they are written, children included. */
export function requestsAsNodes(blocks: readonly BlockObjectRequest[]): BlockNode[] {
  return blocks.map((block, index) => {
    const type = (block as { type: string }).type;
    const {
      children = [],
      rich_text,
      ...rest
    } = (block as unknown as Record<string, { children?: BlockObjectRequest[]; rich_text?: RichTextRequestItem[] }>)[type] ?? {};
    const stored = {
      object: "block",
      id: `new-${index}`,
      type,
      has_children: children.length > 0,
      [type]: { ...rest, ...(rich_text ? { rich_text: requestRichText(rich_text) } : {}) },
    };
    return { block: stored as unknown as BlockObjectResponse, children: requestsAsNodes(children) };
  });
}
