import type { BlockObjectRequest } from "@notionhq/client";
import { describe, expect, it } from "vitest";
import { chunkBlocks, inlineMarkdownToRichText, markdownToBlocks, MAX_TEXT_LENGTH, splitText } from "./markdown.js";

const texts = (block: BlockObjectRequest): string[] => {
  const content = (block as unknown as Record<string, { rich_text?: { text: { content: string } }[] }>)[(block as { type: string }).type];
  return (content?.rich_text ?? []).map((r) => r.text.content);
};

describe("markdown to Notion blocks: limits are split, never refused", () => {
  it("splits a paragraph longer than 2,000 characters across rich text items", () => {
    const long = "a".repeat(4500);
    const [block] = markdownToBlocks(long);
    expect(texts(block!).map((t) => t.length)).toEqual([2000, 2000, 500]);
  });

  it("never splits inside a surrogate pair", () => {
    const text = `${"a".repeat(MAX_TEXT_LENGTH - 1)}😀tail`;
    const pieces = splitText(text);
    expect(pieces.join("")).toBe(text);
    expect(pieces.every((p) => p.length <= MAX_TEXT_LENGTH && !/[\uD800-\uDBFF]$/.test(p))).toBe(true);
  });

  it("splits a block with more than 100 rich text items into several blocks", () => {
    const blocks = markdownToBlocks("b".repeat(2000 * 150));
    expect(blocks).toHaveLength(2);
    expect(texts(blocks[0]!)).toHaveLength(100);
    expect(texts(blocks[1]!)).toHaveLength(50);
  });

  it("chunks appends at 100 blocks", () => {
    const blocks = markdownToBlocks(Array.from({ length: 250 }, (_, i) => `- item ${i}`).join("\n"));
    expect(chunkBlocks(blocks).map((c) => c.length)).toEqual([100, 100, 50]);
  });

  it("does not link a URL Notion would refuse", () => {
    const rich = inlineMarkdownToRichText("[click](javascript:alert(1))");
    expect(rich.some((r) => "text" in r && r.text.link)).toBe(false);
  });
});

describe("markdown to Notion blocks: structure", () => {
  it("converts headings, lists, tasks, quotes, code, dividers and inline marks", () => {
    const blocks = markdownToBlocks(
      [
        "# Title",
        "## Sub",
        "#### Deep",
        "",
        "Some **bold**, *italic*, ~~gone~~, `code` and [a link](https://example.com).",
        "",
        "- one",
        "  - nested",
        "1. first",
        "- [x] done",
        "- [ ] todo",
        "",
        "> quoted",
        "> more",
        "",
        "```python",
        "print('hi')",
        "```",
        "",
        "---",
      ].join("\n"),
    );
    expect(blocks.map((b) => (b as { type: string }).type)).toEqual([
      "heading_1",
      "heading_2",
      "heading_3",
      "paragraph",
      "bulleted_list_item",
      "numbered_list_item",
      "to_do",
      "to_do",
      "quote",
      "code",
      "divider",
    ]);
    const paragraph = blocks[3] as Extract<BlockObjectRequest, { paragraph: unknown }>;
    const rich = paragraph.paragraph.rich_text as { text: { content: string; link?: { url: string } }; annotations?: Record<string, boolean> }[];
    expect(rich.find((r) => r.text.content === "bold")?.annotations).toEqual({ bold: true });
    expect(rich.find((r) => r.text.content === "italic")?.annotations).toEqual({ italic: true });
    expect(rich.find((r) => r.text.content === "gone")?.annotations).toEqual({ strikethrough: true });
    expect(rich.find((r) => r.text.content === "code")?.annotations).toEqual({ code: true });
    expect(rich.find((r) => r.text.content === "a link")?.text.link).toEqual({ url: "https://example.com" });
    const list = blocks[4] as { bulleted_list_item: { children?: BlockObjectRequest[] } };
    expect(list.bulleted_list_item.children?.map((c) => texts(c))).toEqual([["nested"]]);
    expect(blocks[6]).toMatchObject({ to_do: { checked: true } });
    expect(texts(blocks[8]!)).toEqual(["quoted\nmore"]);
    expect(blocks[9]).toMatchObject({ code: { language: "python", rich_text: [{ text: { content: "print('hi')" } }] } });
  });
});
