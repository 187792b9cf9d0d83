import { readFile } from "node:fs/promises";
import { describe, expect, it } from "vitest";

const root = new URL("../../", import.meta.url);
const read = (path: string) => readFile(new URL(path, root), "utf8");
const firstTsBlock = (markdown: string) => /```ts\n([\s\S]*?)```/.exec(markdown)?.[1];

// Each README's example is a file here, compiled by the typecheck step and run below.
const examples = [
  { readme: "README.md", file: "tests/src/readme-example.ts" },
  { readme: "packages/core/README.md", file: "tests/src/core-readme-example.ts" },
];

describe("README examples", () => {
  for (const { readme, file } of examples) {
    it(`${readme} shows ${file} exactly`, async () => {
      expect(firstTsBlock(await read(readme))).toBe(await read(file));
    });
  }

  it("the root example fits in 20 lines and invokes a tool through the gate", async () => {
    const example = await read("tests/src/readme-example.ts");
    expect(example.split("\n").filter((l) => l.trim() !== "").length).toBeLessThanOrEqual(20);
    const { result } = await import("./readme-example.js");
    expect(result).toMatchObject({ status: "ok", output: { words: 4 }, toolId: "text.count_words" });
  });

  it("the core example runs: approval asked, granted, then the call goes through", async () => {
    const { gate } = await import("./core-readme-example.js");
    const outbox = await gate.journal.listOutbox({ states: ["completed"] });
    expect(outbox.map((e) => e.toolId)).toEqual(["notes.save_note"]);
    const approvals = await gate.journal.listApprovals({ status: ["consumed"] });
    expect(approvals).toHaveLength(1);
  });

  it("the quick start's test command is the one .ci/run runs", async () => {
    expect(await read("README.md")).toContain("npm ci && npm test");
    expect(await read(".ci/run")).toMatch(/^npm test\b/m);
  });
});
