/**
 * Round trip through the Markdown parser and serializer: Markdown → Notion blocks → Markdown is
 * stable. For every example of the corpus (CommonMark's and GFM's constructs that a Notion page
 * holds) and for generated Markdown, the blocks of the rendered Markdown are the blocks first made,
 * and rendering them again gives the same Markdown.
 */
import { readFileSync } from "node:fs";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { blocksToMarkdown, markdownToBlocks, requestsAsNodes } from "./markdown.js";

const corpus = JSON.parse(readFileSync(new URL("./fixtures/markdown-corpus.json", import.meta.url), "utf8")) as { sections: Record<string, string[]> };
const MARKDOWN_CORPUS = Object.entries(corpus.sections).flatMap(([section, examples]) => examples.map((markdown) => ({ section, markdown })));

function roundTrip(markdown: string) {
  const first = markdownToBlocks(markdown);
  const rendered = blocksToMarkdown(requestsAsNodes(first));
  const again = markdownToBlocks(rendered);
  return { first, rendered, again, renderedAgain: blocksToMarkdown(requestsAsNodes(again)) };
}

describe("Markdown → blocks → Markdown is stable", () => {
  it(`holds for every example of the corpus (${MARKDOWN_CORPUS.length})`, () => {
    const unstable: string[] = [];
    for (const { section, markdown } of MARKDOWN_CORPUS) {
      const { first, rendered, again, renderedAgain } = roundTrip(markdown);
      if (JSON.stringify(again) !== JSON.stringify(first) || renderedAgain !== rendered)
        unstable.push(`${section}: ${JSON.stringify(markdown)} → ${JSON.stringify(rendered)}`);
    }
    expect(unstable).toEqual([]);
  });

  const word = fc.constantFrom(
    "alpha",
    "beta",
    "x",
    "snake_case",
    "2*3",
    "a[b]",
    "<tag>",
    "&amp;",
    "\\",
    "`",
    "~",
    "#",
    "!",
    "https://example.com/a_(b)",
    "é😀",
    "|",
  );
  const inline = fc.oneof(
    word,
    word.map((w) => `*${w}*`),
    word.map((w) => `**${w}**`),
    word.map((w) => `~~${w}~~`),
    word.map((w) => `\`${w}\``),
    fc.tuple(word, word).map(([a, b]) => `[${a}](https://example.com/${encodeURIComponent(b)})`),
    fc.tuple(word, word).map(([a, b]) => `***${a} ${b}***`),
    fc.tuple(word, word).map(([a, b]) => `**${a} *${b}***`),
  );
  const text = fc.array(inline, { minLength: 1, maxLength: 6 }).map((parts) => parts.join(" "));
  const blockMd = fc.oneof(
    text,
    fc.tuple(fc.integer({ min: 1, max: 6 }), text).map(([n, t]) => `${"#".repeat(n)} ${t}`),
    fc.array(text, { minLength: 1, maxLength: 3 }).map((items) => items.map((t) => `- ${t}`).join("\n")),
    fc.array(text, { minLength: 1, maxLength: 3 }).map((items) => items.map((t, i) => `${i + 1}. ${t}`).join("\n")),
    fc.array(fc.tuple(fc.boolean(), text), { minLength: 1, maxLength: 3 }).map((items) => items.map(([done, t]) => `- [${done ? "x" : " "}] ${t}`).join("\n")),
    fc.tuple(text, text).map(([a, b]) => `- ${a}\n  - ${b}\n    - ${a}\n      - ${b}`),
    fc.tuple(text, text).map(([a, b]) => `> ${a}\n> ${b}`),
    fc.tuple(fc.constantFrom("", "ts", "python", "weird"), text).map(([lang, t]) => `\`\`\`${lang}\n${t}\n\`\`\``),
    fc.constant("---"),
  );
  const document = fc.array(blockMd, { minLength: 1, maxLength: 6 }).map((blocks) => blocks.join("\n\n"));

  it("holds for generated Markdown", () => {
    fc.assert(
      fc.property(document, (markdown) => {
        const { first, rendered, again, renderedAgain } = roundTrip(markdown);
        expect(again, rendered).toEqual(first);
        expect(renderedAgain).toBe(rendered);
      }),
      { numRuns: 200 },
    );
  });
});
