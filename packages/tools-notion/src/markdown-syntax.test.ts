import type { BlockObjectRequest, BlockObjectResponse, RichTextItemResponse } from "@notionhq/client";
import { describe, expect, it } from "vitest";
import { blocksToMarkdown, inlineMarkdownToRichText, markdownPreview, markdownToBlocks, richTextPreview, richTextToMarkdown } from "./markdown.js";

type Rich = { text: { content: string; link?: { url: string } }; annotations?: Record<string, boolean> };
const rich = (block: BlockObjectRequest): Rich[] =>
  ((block as unknown as Record<string, { rich_text: Rich[] }>)[(block as { type: string }).type]?.rich_text ?? []) as Rich[];
const links = (markdown: string) =>
  markdownToBlocks(markdown)
    .flatMap(rich)
    .flatMap((r) => (r.text.link ? [r.text.link.url] : []));

describe("markdown to Notion blocks: links Notion must not receive", () => {
  it("links only http(s) and mailto targets, in every spelling the parser decodes", () => {
    const refused = [
      "[a](javascript:alert(1))",
      "[a](JAVASCRIPT:alert(1))",
      "[a](javascript&#58;alert(1))",
      "[a](&#106;avascript:alert(1))",
      "[a][r]\n\n[r]: javascript:alert(1)",
      "[a]\n\n[a]: data:text/html,x",
      "<javascript:alert(1)>",
      "![a](javascript:alert(1))",
      "[a](//evil.example/x)",
      "[a](<https://example.com/a b>)",
      "[a](vbscript:x)",
    ];
    for (const markdown of refused) {
      expect(links(markdown), markdown).toEqual([]);
      expect(
        markdownToBlocks(markdown)
          .flatMap(rich)
          .map((r) => r.text.content)
          .join(""),
        markdown,
      ).not.toBe("");
    }
  });

  it("links what it should, parentheses and references included", () => {
    expect(links("[a](https://example.com/a_(b)_c)")).toEqual(["https://example.com/a_(b)_c"]);
    expect(links("[a][r]\n\n[r]: https://example.com/ref")).toEqual(["https://example.com/ref"]);
    expect(links("<https://example.com/auto> and https://example.com/bare")).toEqual(["https://example.com/auto", "https://example.com/bare"]);
    expect(links("![pic](https://example.com/p.png)")).toEqual(["https://example.com/p.png"]);
    expect(links("[mail](mailto:a@example.com)")).toEqual(["mailto:a@example.com"]);
  });
});

describe("markdown to Notion blocks: what the earlier line rules got wrong", () => {
  it("nests marks, honours escapes, and leaves intraword underscores alone", () => {
    const [block] = markdownToBlocks("***both*** **bold *and italic*** \\*not\\* snake_case_name 2*3*4");
    expect(rich(block!)).toEqual([
      { type: "text", text: { content: "both" }, annotations: { bold: true, italic: true } },
      { type: "text", text: { content: " " } },
      { type: "text", text: { content: "bold " }, annotations: { bold: true } },
      { type: "text", text: { content: "and italic" }, annotations: { bold: true, italic: true } },
      { type: "text", text: { content: " *not* snake_case_name 2" } },
      { type: "text", text: { content: "3" }, annotations: { italic: true } },
      { type: "text", text: { content: "4" } },
    ]);
  });

  it("keeps a table as its Markdown in a code block, and reads task lists, indented code and setext headings", () => {
    const blocks = markdownToBlocks("    indented\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n- [x] done\n- [ ] open\n\nTitle\n=====\n");
    expect(blocks.map((b) => (b as { type: string }).type)).toEqual(["code", "code", "to_do", "to_do", "heading_1"]);
    expect(blocks[0]).toMatchObject({ code: { language: "plain text", rich_text: [{ text: { content: "indented" } }] } });
    expect(blocks[1]).toMatchObject({ code: { language: "markdown", rich_text: [{ text: { content: "| a | b |\n| - | - |\n| 1 | 2 |" } }] } });
    expect(blocks[2]).toMatchObject({ to_do: { checked: true } });
  });

  it("keeps children below Notion's depth as siblings rather than dropping them", () => {
    const blocks = markdownToBlocks("- one\n  - two\n    - three\n      - four");
    const texts = JSON.stringify(blocks);
    for (const word of ["one", "two", "three", "four"]) expect(texts).toContain(word);
  });

  it("keeps a comment's block syntax as written, marks parsed", () => {
    expect(inlineMarkdownToRichText("- item with **bold**\n\nsecond")).toEqual([{ type: "text", text: { content: "- item with **bold**\n\nsecond" } }]);
    expect(inlineMarkdownToRichText("a **b**")).toEqual([
      { type: "text", text: { content: "a " } },
      { type: "text", text: { content: "b" }, annotations: { bold: true } },
    ]);
  });
});

describe("Notion blocks to markdown", () => {
  const item = (plain_text: string, marks: Partial<RichTextItemResponse["annotations"]> = {}, href: string | null = null) =>
    ({
      type: "text",
      plain_text,
      href,
      annotations: { bold: false, italic: false, strikethrough: false, underline: false, code: false, color: "default", ...marks },
    }) as RichTextItemResponse;

  it("escapes text that would read as Markdown, so a page's words never become formatting or links", () => {
    const words = "*not* [a](/x) # x <b> _y_ ~~z~~ `c`";
    const written = richTextToMarkdown([item(words)]);
    expect(written).toBe("\\*not\\* \\[a]\\(/x) # x \\<b> \\_y\\_ \\~\\~z\\~\\~ \\`c\\`");
    expect(markdownToBlocks(written).flatMap(rich)).toEqual([{ type: "text", text: { content: words } }]);
    expect(richTextToMarkdown([item("a "), item("b", { bold: true }), item(" c", { bold: true, italic: true }), item("d", { code: true })])).toBe(
      "a **b _c_**`d`",
    );
    expect(richTextToMarkdown([item("bold ", { bold: true }), item("word")])).toBe("**bold** word");
  });

  it("writes placeholders and lists as before", () => {
    const block = (type: string, content: object) => ({
      block: { object: "block", id: type, type, [type]: content } as unknown as BlockObjectResponse,
      children: [],
    });
    const markdown = blocksToMarkdown([
      block("heading_2", { rich_text: [item("Agenda")] }),
      block("bulleted_list_item", { rich_text: [item("Ship the "), item("release", { bold: true })] }),
      block("to_do", { rich_text: [item("done")], checked: true }),
      block("child_page", { title: "Vendor notes" }),
    ]);
    expect(markdown).toBe("## Agenda\n\n- Ship the **release**\n- [x] done\n\n[child page: Vendor notes]");
  });
});

describe("previews: what Notion will hold, from the blocks that are sent", () => {
  it("shows a refused link as the text Notion gets, and marks as the blocks carry them", () => {
    expect(markdownPreview("See [the code](javascript:alert(1)) and **this**\n\n<b>raw</b>")).toBe(
      "See the code (javascript:alert(1)) and **this**\n\n`<b>`raw`</b>`",
    );
    expect(richTextPreview(inlineMarkdownToRichText("[a](https://example.com) *b*"))).toBe("[a](https://example.com) *b*");
  });
});

describe("markdown to Notion blocks: cost", () => {
  it("refuses Markdown whose emphasis characters would make the parser's matching quadratic, with a typed error", () => {
    const started = Date.now();
    // Just over the cap first, so a parser without it fails this quickly rather than hanging.
    for (const hostile of ["*a".repeat(10_001), "*a".repeat(100_000), "_a ".repeat(60_000), "~~a".repeat(40_000)]) {
      expect(() => markdownToBlocks(hostile)).toThrow(expect.objectContaining({ code: "limit_exceeded" }));
      expect(() => inlineMarkdownToRichText(hostile)).toThrow(expect.objectContaining({ code: "limit_exceeded" }));
    }
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(markdownToBlocks("**b** ".repeat(2_000))).toHaveLength(40); // 8,000 delimiters: accepted, 4,000 items in blocks of 100
  });
});
