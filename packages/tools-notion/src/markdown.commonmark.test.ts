/**
 * CommonMark's own examples through the round trip. The specification's examples come from the
 * `commonmark-spec` package (0.31.2, CC-BY-SA-4.0), read at test time and never copied here. For
 * every example, Markdown → blocks → Markdown → blocks gives the same blocks both times, and the
 * Markdown written from them is a fixed point (written again from its own blocks, it is unchanged).
 */
import { createRequire } from "node:module";
import { describe, expect, it } from "vitest";
import { markdownPreview, markdownToBlocks } from "./markdown.js";

interface SpecExample {
  readonly markdown: string;
  readonly section: string;
  readonly number: number;
}
const spec = createRequire(import.meta.url)("commonmark-spec") as { readonly tests: readonly SpecExample[] };
/** The specification writes a tab as `→` in its examples. */
const EXAMPLES = spec.tests.map((e) => ({ ...e, markdown: e.markdown.replace(/→/g, "\t") }));

/** Sections whose constructs a Notion page holds: blocks, rich text marks, links (images as links to them). */
const SUPPORTED = [
  "Tabs",
  "Backslash escapes",
  "Entity and numeric character references",
  "Precedence",
  "Thematic breaks",
  "ATX headings",
  "Setext headings",
  "Indented code blocks",
  "Fenced code blocks",
  "Paragraphs",
  "Blank lines",
  "Block quotes",
  "List items",
  "Lists",
  "Inlines",
  "Code spans",
  "Emphasis and strong emphasis",
  "Links",
  "Images",
  "Autolinks",
  "Hard line breaks",
  "Soft line breaks",
  "Textual content",
];
/** Sections whose construct has no Notion form: they run too, in the form they are sent in. */
const SENT_AS = {
  "HTML blocks": "a code block (language html) holding the HTML",
  "Raw HTML": "inline code holding the HTML",
  "Link reference definitions": "no block: each definition is resolved into the links that use it",
};

describe("CommonMark's examples: Markdown → blocks → Markdown is stable", () => {
  it("the package gives every example of the specification, each section accounted for", () => {
    const sections = [...new Set(EXAMPLES.map((e) => e.section))];
    expect(EXAMPLES.length).toBe(652);
    expect(EXAMPLES.map((e) => e.number)).toEqual(EXAMPLES.map((_, i) => i + 1));
    // A section a later specification adds fails here rather than going untested.
    expect(sections.toSorted()).toEqual([...SUPPORTED, ...Object.keys(SENT_AS)].toSorted());
  });

  for (const section of [...SUPPORTED, ...Object.keys(SENT_AS)]) {
    const examples = EXAMPLES.filter((e) => e.section === section);
    it(`${section} (${examples.length} examples)`, () => {
      const unstable: string[] = [];
      for (const { number, markdown } of examples) {
        const first = markdownToBlocks(markdown);
        const rendered = markdownPreview(markdown);
        const again = markdownToBlocks(rendered);
        if (JSON.stringify(again) !== JSON.stringify(first) || markdownPreview(rendered) !== rendered)
          unstable.push(`example ${number}: ${JSON.stringify(markdown)} → ${JSON.stringify(rendered)}`);
      }
      expect(examples.length).toBeGreaterThan(0);
      expect(unstable).toEqual([]);
    });
  }
});
