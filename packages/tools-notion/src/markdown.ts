import type { BlockObjectRequest, BlockObjectResponse, RichTextItemResponse } from "@notionhq/client";

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

const INLINE = /(`[^`\n]+`)|(\[([^\]\n]+)\]\(([^)\s]+)\))|(\*\*[^*\n]+\*\*|__[^_\n]+__)|(~~[^~\n]+~~)|(\*[^*\s\n][^*\n]*\*|\b_[^_\s\n][^_\n]*_\b)/g;

function parseInline(text: string, annotations: Annotations = {}): Segment[] {
  const out: Segment[] = [];
  let last = 0;
  for (const match of text.matchAll(INLINE)) {
    const index = match.index;
    if (index > last) out.push({ text: text.slice(last, index), annotations });
    const [whole, code, link, label, url, bold, strike, italic] = match;
    if (code) out.push({ text: code.slice(1, -1), annotations: { ...annotations, code: true } });
    else if (link && label !== undefined && url !== undefined) {
      for (const s of parseInline(label, annotations)) out.push(isLinkable(url) ? { ...s, url } : s);
      if (!isLinkable(url)) out.push({ text: ` (${url})`, annotations });
    } else if (bold) out.push(...parseInline(bold.slice(2, -2), { ...annotations, bold: true }));
    else if (strike) out.push(...parseInline(strike.slice(2, -2), { ...annotations, strikethrough: true }));
    else if (italic) out.push(...parseInline(italic.slice(1, -1), { ...annotations, italic: true }));
    else out.push({ text: whole, annotations });
    last = index + whole.length;
  }
  if (last < text.length) out.push({ text: text.slice(last), annotations });
  return out.filter((s) => s.text.length > 0);
}

function isLinkable(url: string): boolean {
  return /^(https?:\/\/|mailto:)/i.test(url);
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
  for (const segment of segments) {
    for (const piece of splitText(segment.text)) {
      const annotations = Object.keys(segment.annotations).length > 0 ? { annotations: { ...segment.annotations } } : {};
      items.push({ type: "text", text: { content: piece, ...(segment.url ? { link: { url: segment.url } } : {}) }, ...annotations });
    }
  }
  return items;
}

/** Inline Markdown (bold, italic, strike, code, links) as rich text, split at Notion's limits. */
export function inlineMarkdownToRichText(text: string): RichTextRequest[] {
  return toRichText(parseInline(text));
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

const LIST = /^(\s*)([-*+]|\d+[.)])\s+(\[[ xX]\]\s+)?(.*)$/;
const FENCE = /^\s*(```|~~~)\s*([\w#+.-]*)\s*$/;

/**
 * Convert Markdown to Notion blocks: headings, paragraphs, bulleted, numbered and task lists (nested
 * up to Notion's two levels), quotes, fenced code, dividers, and inline bold, italic, strike, code
 * and links. Text longer than Notion's 2,000-character limit is split across rich text items, and a
 * block with more than 100 items is split into several blocks; nothing is refused for its length.
 */
export function markdownToBlocks(markdown: string): BlockObjectRequest[] {
  const lines = markdown.replace(/\r\n?/g, "\n").split("\n");
  const drafts: Draft[] = [];
  let paragraph: string[] = [];
  const listStack: { indent: number; draft: Draft }[] = [];
  const flush = () => {
    if (paragraph.length > 0) drafts.push({ type: "paragraph", rich: inlineMarkdownToRichText(paragraph.join("\n")), children: [] });
    paragraph = [];
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const fence = FENCE.exec(line);
    if (fence) {
      flush();
      listStack.length = 0;
      const body: string[] = [];
      for (i++; i < lines.length && !new RegExp(`^\\s*${fence[1]}\\s*$`).test(lines[i]!); i++) body.push(lines[i]!);
      drafts.push({ type: "code", rich: plainRichText(body.join("\n")), language: codeLanguage(fence[2] ?? ""), children: [] });
      continue;
    }
    if (line.trim() === "") {
      flush();
      listStack.length = 0;
      continue;
    }
    if (/^\s*([-*_])(\s*\1){2,}\s*$/.test(line)) {
      flush();
      listStack.length = 0;
      drafts.push({ type: "divider", rich: [], children: [] });
      continue;
    }
    const heading = /^(#{1,6})\s+(.*?)\s*#*\s*$/.exec(line);
    if (heading) {
      flush();
      listStack.length = 0;
      const level = Math.min(heading[1]!.length, 3) as 1 | 2 | 3;
      drafts.push({ type: `heading_${level}`, rich: inlineMarkdownToRichText(heading[2]!), children: [] });
      continue;
    }
    if (/^\s*>/.test(line)) {
      flush();
      listStack.length = 0;
      const quoted: string[] = [];
      for (; i < lines.length && /^\s*>/.test(lines[i]!); i++) quoted.push(lines[i]!.replace(/^\s*>\s?/, ""));
      i--;
      drafts.push({ type: "quote", rich: inlineMarkdownToRichText(quoted.join("\n")), children: [] });
      continue;
    }
    const item = LIST.exec(line);
    if (item) {
      flush();
      const indent = item[1]!.replace(/\t/g, "  ").length;
      const type: TextBlockType = item[3] ? "to_do" : /\d/.test(item[2]!) ? "numbered_list_item" : "bulleted_list_item";
      const draft: Draft = { type, rich: inlineMarkdownToRichText(item[4]!), ...(item[3] ? { checked: /x/i.test(item[3]) } : {}), children: [] };
      while (listStack.length > 0 && listStack.at(-1)!.indent >= indent) listStack.pop();
      const parent = listStack.length > 0 && listStack.length <= MAX_NESTING ? listStack.at(-1)!.draft : undefined;
      if (parent) parent.children.push(draft);
      else {
        listStack.length = 0;
        drafts.push(draft);
      }
      if (listStack.length < MAX_NESTING) listStack.push({ indent, draft });
      continue;
    }
    listStack.length = 0;
    paragraph.push(line.trim());
  }
  flush();
  return drafts.flatMap((d) => toRequests(d, 0));
}

function toRequests(draft: Draft, depth: number): BlockObjectRequest[] {
  if (draft.type === "divider") return [{ type: "divider", divider: {} }];
  const groups: RichTextRequest[][] = [];
  for (let i = 0; i < draft.rich.length; i += MAX_RICH_TEXT_ITEMS) groups.push(draft.rich.slice(i, i + MAX_RICH_TEXT_ITEMS));
  if (groups.length === 0) groups.push([]);
  const children = draft.children.flatMap((c) => toRequests(c, depth + 1));
  const nested = children.slice(0, MAX_BLOCKS_PER_REQUEST);
  const overflow = children.slice(MAX_BLOCKS_PER_REQUEST);
  const blocks = groups.map((rich_text, index): BlockObjectRequest => {
    const kids = index === groups.length - 1 && nested.length > 0 && depth < MAX_NESTING ? { children: nested } : {};
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
        return { type: "quote", quote: { rich_text } };
      case "heading_1":
        return { type: "heading_1", heading_1: { rich_text } };
      case "heading_2":
        return { type: "heading_2", heading_2: { rich_text } };
      case "heading_3":
        return { type: "heading_3", heading_3: { rich_text } };
      default:
        return { type: "paragraph", paragraph: { rich_text } };
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

// ---------- Notion → Markdown ----------

/** A block with its children already fetched. */
export interface BlockNode {
  readonly block: BlockObjectResponse;
  readonly children: readonly BlockNode[];
}

/** Rich text as inline Markdown. */
export function richTextToMarkdown(rich: readonly RichTextItemResponse[]): string {
  return rich
    .map((r) => {
      let text = r.plain_text;
      if (text === "") return "";
      const a = r.annotations;
      if (a.code) text = `\`${text}\``;
      if (a.bold) text = `**${text}**`;
      if (a.italic) text = `*${text}*`;
      if (a.strikethrough) text = `~~${text}~~`;
      if (r.href) text = `[${text}](${r.href})`;
      return text;
    })
    .join("");
}

/** Render fetched blocks as Markdown. */
export function blocksToMarkdown(nodes: readonly BlockNode[], indent = ""): string {
  const out: string[] = [];
  let previousList = false;
  for (const node of nodes) {
    const { line, list } = renderBlock(node.block);
    const lines = line.split("\n").map((l, i) => (i === 0 ? `${indent}${l}` : `${indent}${list ? "  " : ""}${l}`));
    if (out.length > 0 && !(list && previousList)) out.push("");
    out.push(lines.join("\n"));
    if (node.children.length > 0) out.push(blocksToMarkdown(node.children, `${indent}  `));
    previousList = list;
  }
  return out.join("\n");
}

function renderBlock(block: BlockObjectResponse): { line: string; list: boolean } {
  switch (block.type) {
    case "paragraph":
      return { line: richTextToMarkdown(block.paragraph.rich_text), list: false };
    case "heading_1":
      return { line: `# ${richTextToMarkdown(block.heading_1.rich_text)}`, list: false };
    case "heading_2":
      return { line: `## ${richTextToMarkdown(block.heading_2.rich_text)}`, list: false };
    case "heading_3":
      return { line: `### ${richTextToMarkdown(block.heading_3.rich_text)}`, list: false };
    case "bulleted_list_item":
      return { line: `- ${richTextToMarkdown(block.bulleted_list_item.rich_text)}`, list: true };
    case "numbered_list_item":
      return { line: `1. ${richTextToMarkdown(block.numbered_list_item.rich_text)}`, list: true };
    case "to_do":
      return { line: `- [${block.to_do.checked ? "x" : " "}] ${richTextToMarkdown(block.to_do.rich_text)}`, list: true };
    case "toggle":
      return { line: `- ${richTextToMarkdown(block.toggle.rich_text)}`, list: true };
    case "quote":
      return {
        line: richTextToMarkdown(block.quote.rich_text)
          .split("\n")
          .map((l) => `> ${l}`)
          .join("\n"),
        list: false,
      };
    case "callout":
      return {
        line: richTextToMarkdown(block.callout.rich_text)
          .split("\n")
          .map((l) => `> ${l}`)
          .join("\n"),
        list: false,
      };
    case "code":
      return {
        line: `\`\`\`${block.code.language === "plain text" ? "" : block.code.language}\n${block.code.rich_text.map((r) => r.plain_text).join("")}\n\`\`\``,
        list: false,
      };
    case "divider":
      return { line: "---", list: false };
    case "child_page":
      return { line: `[child page: ${block.child_page.title}]`, list: false };
    case "child_database":
      return { line: `[child database: ${block.child_database.title}]`, list: false };
    default:
      return { line: `[unsupported block: ${block.type}]`, list: false };
  }
}
