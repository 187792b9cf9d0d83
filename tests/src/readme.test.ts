import { existsSync, readFileSync, readdirSync } from "node:fs";
import { describe, expect, it } from "vitest";

const root = new URL("../../", import.meta.url);
const read = (path: string) => readFileSync(new URL(path, root), "utf8");

/** Markdown whose TypeScript examples must each be a file that the tests compile (and run). */
const documents = [
  "README.md",
  "packages/core/README.md",
  ...readdirSync(new URL("docs/", root))
    .filter((f) => f.endsWith(".md"))
    .map((f) => `docs/${f}`),
];

/** Each document's fenced TypeScript blocks, with the `<!-- example: file -->` marker before a block when it has one. */
const examples = documents.map((doc) => {
  const text = read(doc);
  return { doc, text, blocks: [...text.matchAll(/(<!-- example: (\S+) -->\n)?```ts\n([\s\S]*?)```/g)] };
});
const withExamples = examples.filter((e) => e.blocks.length > 0);

describe("code examples in the docs are the files the tests compile", () => {
  it("parses every TypeScript block of every document, and the READMEs have examples", () => {
    for (const { doc, text, blocks } of examples) {
      // A block the pattern above missed (another fence spelling) would go unchecked: count the fences independently.
      const fences = text.match(/^```(?:ts|typescript|tsx|mts)\b.*$/gm) ?? [];
      expect(blocks.length, `${doc}: TypeScript blocks parsed vs fences opened (write examples as \`\`\`ts)`).toBe(fences.length);
    }
    expect(withExamples.map((e) => e.doc)).toEqual(expect.arrayContaining(["README.md", "packages/core/README.md"]));
  });

  // Only documents with examples get a test: one with none would pass having checked nothing.
  for (const { doc, blocks } of withExamples) {
    it(doc, () => {
      for (const [, marker, file, body] of blocks) {
        expect(marker, `a ts block in ${doc} has no <!-- example: file --> marker`).toBeDefined();
        expect(existsSync(new URL(file!, root)), `${file} is missing`).toBe(true);
        expect(body).toBe(read(file!));
      }
    });
  }
});

describe("README examples run", () => {
  it("the root example fits in 22 lines (as the formatter writes it) and invokes a tool through the gate", async () => {
    const example = read("tests/src/readme-example.ts");
    expect(example.split("\n").filter((l) => l.trim() !== "").length).toBeLessThanOrEqual(22);
    const { result } = await import("./readme-example.js");
    expect(result).toMatchObject({ status: "ok", output: { words: 4 }, toolId: "text.count_words" });
  });

  it("the core example runs: approval asked, granted, then the call goes through", async () => {
    const { gate } = await import("./core-readme-example.js");
    const outbox = await gate.journal.listOutbox({ states: ["completed"] });
    expect(outbox.map((e) => e.toolId)).toEqual(["notes.save_note"]);
    expect(await gate.journal.listApprovals({ status: ["consumed"] })).toHaveLength(1);
  });

  it("the quick start's test command is the one .ci/run runs", () => {
    expect(read("README.md")).toContain("npm ci && npm test");
    expect(read(".ci/run")).toMatch(/^npm test\b/m);
  });
});
