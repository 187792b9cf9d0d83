import type { BlockObjectRequest, BlockObjectResponse } from "@notionhq/client";
import { parseMarkdown, serializeMarkdown, type Definition, type Nodes, type PhrasingContent, type RootContent } from "./markdown-syntax.js";

import { blocksToMarkdown, requestRichText, requestsAsNodes, richTextToMarkdown } from "./markdown-render.js";

export { blocksToMarkdown, requestsAsNodes, richTextToMarkdown } from "./markdown-render.js";
export type { BlockNode } from "./markdown-render.js";

type ParagraphRequest = Extract<BlockObjectRequest, { paragraph: unknown }>;
/** A rich text item as a write request carries it. */
export type RichTextRequest = ParagraphRequest["paragraph"]["rich_text"][number];
type Language = Extract<BlockObjectResponse, { type: "code" }>["code"]["language"];

/** Notion's limit on the characters of one rich text item. */
export const MAX_TEXT_LENGTH = 2000;
/** Notion's limit on the rich text items of one block. */
export const MAX_RICH_TEXT_ITEMS = 100;
/** Notion's limit on the blocks of one children array (one append, one create). */
export const MAX_BLOCKS_PER_REQUEST = 100;
/** Notion's limit on all blocks, nested ones included, in one request. */
export const MAX_ELEMENTS_PER_REQUEST = 1000;
/** How deep children may nest in one request. */
const MAX_NESTING = 2;

interface Annotations {
  bold?: boolean;
  italic?: boolean;
  strikethrough?: boolean;
  code?: boolean;
}
interface Segment {
  readonly text: string;
  readonly annotations: Annotations;
  readonly url?: string;
}

/** A link Notion takes and a reader can follow safely: http(s) or mailto, no whitespace (the parser has decoded escapes and references). */
function isLinkable(url: string): boolean {
  return /^(https?:\/\/|mailto:)/i.test(url) && !/\s/.test(url);
}

type Definitions = ReadonlyMap<string, Definition>;

/** The rich text segments of inline nodes, marks carried down. */
function phrasing(nodes: readonly PhrasingContent[], defs: Definitions, annotations: Annotations = {}, url?: string): Segment[] {
  const out: Segment[] = [];
  const text = (value: string, marks = annotations) => out.push({ text: value, annotations: marks, ...(url ? { url } : {}) });
  const linked = (children: readonly PhrasingContent[], target: string) => {
    if (isLinkable(target)) out.push(...phrasing(children, defs, annotations, target));
    else {
      out.push(...phrasing(children, defs, annotations, url));
      text(` (${target})`);
    }
  };
  for (const node of nodes) {
    switch (node.type) {
      case "text":
        text(node.value);
        break;
      case "inlineCode":
      case "html":
        // Raw HTML is shown as code, never as text a later reading could take for a link. Line
        // endings in a code span are spaces (CommonMark 6.1); the tree keeps them as written.
        text(node.value.replace(/\r\n?|\n/g, " "), { ...annotations, code: true });
        break;
      case "break":
        text("\n");
        break;
      case "emphasis":
        out.push(...phrasing(node.children, defs, { ...annotations, italic: true }, url));
        break;
      case "strong":
        out.push(...phrasing(node.children, defs, { ...annotations, bold: true }, url));
        break;
      case "delete":
        out.push(...phrasing(node.children, defs, { ...annotations, strikethrough: true }, url));
        break;
      case "link":
        linked(node.children, node.url);
        break;
      case "linkReference": {
        const target = defs.get(node.identifier)?.url;
        if (target === undefined) out.push(...phrasing(node.children, defs, annotations, url));
        else linked(node.children, target);
        break;
      }
      case "image":
        linked([{ type: "text", value: node.alt ?? "" }], node.url);
        break;
      case "imageReference": {
        const target = defs.get(node.identifier)?.url;
        if (target === undefined) text(node.alt ?? "");
        else linked([{ type: "text", value: node.alt ?? "" }], target);
        break;
      }
      case "footnoteReference":
        text(`[^${node.label ?? node.identifier}]`);
        break;
    }
  }
  return out;
}

/** Annotations in one order, whichever mark the Markdown opened first. */
const MARK_ORDER = ["bold", "italic", "strikethrough", "code"] as const;
const sameMarks = (a: Segment, b: Segment) => a.url === b.url && MARK_ORDER.every((k) => (a.annotations[k] === true) === (b.annotations[k] === true));

/** Adjacent segments with the same marks as one, empty ones dropped. */
function merged(segments: readonly Segment[]): Segment[] {
  const out: Segment[] = [];
  for (const s of segments) {
    if (s.text.length === 0) continue;
    const last = out.at(-1);
    if (last && sameMarks(last, s)) out[out.length - 1] = { ...last, text: last.text + s.text };
    else out.push(s);
  }
  return out;
}

/** Split text into pieces of at most `max` UTF-16 units, never inside a surrogate pair. */
export function splitText(text: string, max = MAX_TEXT_LENGTH): string[] {
  const pieces: string[] = [];
  let rest = text;
  while (rest.length > max) {
    let cut = max;
    const code = rest.charCodeAt(cut - 1);
    if (code >= 0xd800 && code <= 0xdbff) cut--;
    pieces.push(rest.slice(0, cut));
    rest = rest.slice(cut);
  }
  if (rest.length > 0 || pieces.length === 0) pieces.push(rest);
  return pieces;
}

function toRichText(segments: readonly Segment[]): RichTextRequest[] {
  const items: RichTextRequest[] = [];
  for (const segment of merged(segments)) {
    const marks = Object.fromEntries(MARK_ORDER.filter((k) => segment.annotations[k] === true).map((k) => [k, true]));
    for (const piece of splitText(segment.text)) {
      const annotations = Object.keys(marks).length > 0 ? { annotations: { ...marks } } : {};
      items.push({ type: "text", text: { content: piece, ...(segment.url ? { link: { url: segment.url } } : {}) }, ...annotations });
    }
  }
  return items;
}

function definitions(tree: ReturnType<typeof parseMarkdown>): Definitions {
  const defs = new Map<string, Definition>();
  const visit = (node: Nodes) => {
    if (node.type === "definition" && !defs.has(node.identifier)) defs.set(node.identifier, node);
    if ("children" in node) for (const child of node.children) visit(child);
  };
  visit(tree);
  return defs;
}

/**
 * Inline Markdown (bold, italic, strike, code, links) as rich text, split at Notion's limits. Block
 * constructs other than paragraphs keep their source text, so a comment says what was written.
 */
export function inlineMarkdownToRichText(text: string): RichTextRequest[] {
  const tree = parseMarkdown(text);
  const defs = definitions(tree);
  const segments: Segment[] = [];
  for (const [index, node] of tree.children.entries()) {
    if (index > 0) segments.push({ text: "\n\n", annotations: {} });
    if (node.type === "paragraph") segments.push(...phrasing(node.children, defs));
    else if (node.type !== "definition") segments.push({ text: text.slice(node.position?.start.offset ?? 0, node.position?.end.offset ?? 0), annotations: {} });
  }
  return toRichText(segments);
}

/** Rich text of plain text, split at Notion's limits. */
export function plainRichText(text: string): RichTextRequest[] {
  return splitText(text)
    .filter((p) => p.length > 0)
    .map((content) => ({ type: "text" as const, text: { content } }));
}

type TextBlockType = "paragraph" | "heading_1" | "heading_2" | "heading_3" | "bulleted_list_item" | "numbered_list_item" | "to_do" | "quote";

interface Draft {
  readonly type: TextBlockType | "code" | "divider";
  readonly rich: RichTextRequest[];
  readonly checked?: boolean;
  readonly language?: Language;
  readonly children: Draft[];
}

/** The drafts of block nodes; a block's own text is its leading paragraph, the rest its children. */
function drafts(nodes: readonly RootContent[], defs: Definitions): Draft[] {
  const out: Draft[] = [];
  const withLead = (type: TextBlockType, children: readonly RootContent[], extra: Partial<Draft> = {}): Draft => {
    const [first, ...rest] = children;
    const rich = first?.type === "paragraph" ? toRichText(phrasing(first.children, defs)) : undefined;
    return { type, rich: rich ?? [], ...extra, children: drafts(rich ? rest : children, defs) };
  };
  for (const node of nodes) {
    switch (node.type) {
      case "paragraph":
        out.push({ type: "paragraph", rich: toRichText(phrasing(node.children, defs)), children: [] });
        break;
      case "heading":
        out.push({ type: `heading_${Math.min(node.depth, 3) as 1 | 2 | 3}`, rich: toRichText(phrasing(node.children, defs)), children: [] });
        break;
      case "thematicBreak":
        out.push({ type: "divider", rich: [], children: [] });
        break;
      case "code":
        out.push({ type: "code", rich: plainRichText(node.value), language: codeLanguage(node.lang ?? ""), children: [] });
        break;
      case "table":
        // Tables travel as their Markdown in a code block: the pages this family writes hold no table blocks.
        out.push({ type: "code", rich: plainRichText(serializeMarkdown(node).trimEnd()), language: "markdown", children: [] });
        break;
      case "html":
        out.push({ type: "code", rich: plainRichText(node.value), language: "html", children: [] });
        break;
      case "blockquote":
        out.push(withLead("quote", node.children));
        break;
      case "list":
        for (const item of node.children) {
          const task = typeof item.checked === "boolean";
          const type = task ? "to_do" : node.ordered ? "numbered_list_item" : "bulleted_list_item";
          out.push(withLead(type, item.children, task ? { checked: item.checked === true } : {}));
        }
        break;
      case "footnoteDefinition": {
        const [first, ...rest] = node.children;
        const lead = first?.type === "paragraph" ? phrasing(first.children, defs) : [];
        out.push({ type: "paragraph", rich: toRichText([{ text: `[^${node.label ?? node.identifier}]: `, annotations: {} }, ...lead]), children: [] });
        out.push(...drafts(first?.type === "paragraph" ? rest : node.children, defs));
        break;
      }
    }
  }
  return out;
}

/**
 * Convert Markdown to Notion blocks through the CommonMark/GFM parser: headings, paragraphs,
 * bulleted, numbered and task lists, quotes, code (fenced and indented), dividers, and inline bold,
 * italic, strike, code and links (reference links resolved, images as links to them). Tables become
 * code blocks holding the table, raw HTML code. Children nest to Notion's two levels; deeper ones follow as
 * siblings. Text longer than 2,000 characters is split across rich text items, and a block with more
 * than 100 items into several blocks; nothing is refused for its length.
 */
export function markdownToBlocks(markdown: string): BlockObjectRequest[] {
  const tree = parseMarkdown(markdown);
  return drafts(tree.children, definitions(tree)).flatMap((d) => toRequests(d, 0));
}

/**
 * What a human approves for Markdown sent to Notion: the blocks `markdownToBlocks` makes from it,
 * written back as Markdown — the page's content as Notion will hold it, not the text as typed.
 */
export function markdownPreview(markdown: string): string {
  return blocksToMarkdown(requestsAsNodes(markdownToBlocks(markdown)));
}

/** What a human approves for rich text sent to Notion (a comment): those items written as Markdown. */
export function richTextPreview(items: readonly RichTextRequest[]): string {
  return richTextToMarkdown(requestRichText(items as Parameters<typeof requestRichText>[0]));
}

function toRequests(draft: Draft, depth: number): BlockObjectRequest[] {
  if (draft.type === "divider") return [{ type: "divider", divider: {} }];
  const groups: RichTextRequest[][] = [];
  for (let i = 0; i < draft.rich.length; i += MAX_RICH_TEXT_ITEMS) groups.push(draft.rich.slice(i, i + MAX_RICH_TEXT_ITEMS));
  if (groups.length === 0) groups.push([]);
  const nestable = depth < MAX_NESTING && draft.type !== "code" && !draft.type.startsWith("heading");
  const children = draft.children.flatMap((c) => toRequests(c, nestable ? depth + 1 : depth));
  const nested = nestable ? children.slice(0, MAX_BLOCKS_PER_REQUEST) : [];
  const overflow = children.slice(nested.length);
  const blocks = groups.map((rich_text, index): BlockObjectRequest => {
    const kids = index === groups.length - 1 && nested.length > 0 ? { children: nested } : {};
    switch (draft.type) {
      case "code":
        return { type: "code", code: { rich_text, language: draft.language ?? "plain text" } };
      case "to_do":
        return { type: "to_do", to_do: { rich_text, checked: draft.checked === true, ...kids } } as BlockObjectRequest;
      case "bulleted_list_item":
        return { type: "bulleted_list_item", bulleted_list_item: { rich_text, ...kids } } as BlockObjectRequest;
      case "numbered_list_item":
        return { type: "numbered_list_item", numbered_list_item: { rich_text, ...kids } } as BlockObjectRequest;
      case "quote":
        return { type: "quote", quote: { rich_text, ...kids } } as BlockObjectRequest;
      case "heading_1":
        return { type: "heading_1", heading_1: { rich_text } };
      case "heading_2":
        return { type: "heading_2", heading_2: { rich_text } };
      case "heading_3":
        return { type: "heading_3", heading_3: { rich_text } };
      default:
        return { type: "paragraph", paragraph: { rich_text, ...kids } } as BlockObjectRequest;
    }
  });
  return [...blocks, ...overflow];
}

function elements(block: BlockObjectRequest): number {
  const content = (block as Record<string, unknown>)[(block as { type?: string }).type ?? ""] as { children?: BlockObjectRequest[] } | undefined;
  return 1 + (content?.children ?? []).reduce((n, c) => n + elements(c), 0);
}

/** Split blocks into requests of at most 100 blocks and 1,000 elements (nested ones counted). */
export function chunkBlocks(blocks: readonly BlockObjectRequest[]): BlockObjectRequest[][] {
  const chunks: BlockObjectRequest[][] = [];
  let current: BlockObjectRequest[] = [];
  let count = 0;
  for (const block of blocks) {
    const size = elements(block);
    if (current.length > 0 && (current.length >= MAX_BLOCKS_PER_REQUEST || count + size > MAX_ELEMENTS_PER_REQUEST)) {
      chunks.push(current);
      current = [];
      count = 0;
    }
    current.push(block);
    count += size;
  }
  if (current.length > 0) chunks.push(current);
  return chunks;
}

const LANGUAGES: Readonly<Record<string, Language>> = {
  js: "javascript",
  javascript: "javascript",
  ts: "typescript",
  typescript: "typescript",
  py: "python",
  python: "python",
  sh: "shell",
  shell: "shell",
  bash: "bash",
  json: "json",
  yaml: "yaml",
  yml: "yaml",
  sql: "sql",
  go: "go",
  rust: "rust",
  rs: "rust",
  java: "java",
  c: "c",
  cpp: "c++",
  "c++": "c++",
  html: "html",
  css: "css",
  markdown: "markdown",
  md: "markdown",
  diff: "diff",
  ruby: "ruby",
  rb: "ruby",
};

function codeLanguage(tag: string): Language {
  return LANGUAGES[tag.toLowerCase()] ?? "plain text";
}
