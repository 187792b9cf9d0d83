import { readFile } from "node:fs/promises";
import { describe, expect, it } from "vitest";

const root = new URL("../../", import.meta.url);

describe("README", () => {
  it("shows the example exactly as it is compiled and run here", async () => {
    const readme = await readFile(new URL("README.md", root), "utf8");
    const example = await readFile(new URL("tests/src/readme-example.ts", root), "utf8");
    const block = /```ts\n([\s\S]*?)```/.exec(readme)?.[1];
    expect(block).toBe(example);
    expect(example.split("\n").filter((l) => l.trim() !== "").length).toBeLessThanOrEqual(20);
  });

  it("runs the example: the tool is invoked through the gate", async () => {
    const { result } = await import("./readme-example.js");
    expect(result).toMatchObject({ status: "ok", output: { words: 4 }, toolId: "text.count_words" });
  });

  it("gives a quick start whose test command is the one .ci/run runs", async () => {
    const readme = await readFile(new URL("README.md", root), "utf8");
    const ci = await readFile(new URL(".ci/run", root), "utf8");
    expect(readme).toContain("npm ci && npm test");
    expect(ci).toMatch(/^npm test\b/m);
  });
});
