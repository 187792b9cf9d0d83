import { describe, expect, it } from "vitest";
import { ToolError } from "@toolgate/core";
import { applyFilePatch, lineStat, parsePatch, unifiedDiff } from "./unified-diff.js";

/** A small deterministic generator: the same cases on every run. */
function generator(seed: number) {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

function randomText(next: () => number, words: readonly string[]): string {
  const count = Math.floor(next() * 30);
  const lines = Array.from({ length: count }, () => words[Math.floor(next() * words.length)]!);
  const text = lines.join("\n");
  return next() < 0.8 && count > 0 ? `${text}\n` : text;
}

describe("unified diff", () => {
  it("round-trips: applying the diff of two texts to the first gives the second", () => {
    const next = generator(7);
    const words = ["a", "b", "c", "d", "", "  indented", "tab\tbed"];
    for (let round = 0; round < 400; round++) {
      const before = randomText(next, words);
      const after = next() < 0.1 ? before : randomText(next, words);
      const diff = unifiedDiff("f.txt", before, after);
      if (before === after) {
        expect(diff).toBe("");
        continue;
      }
      const [file] = parsePatch(diff);
      expect(applyFilePatch(file!, before), JSON.stringify({ before, after, diff })).toBe(after);
    }
  });

  it("creates and deletes files", () => {
    const create = unifiedDiff("new.txt", null, "one\ntwo\n");
    expect(create).toContain("--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1,2 @@\n+one\n+two\n");
    expect(applyFilePatch(parsePatch(create)[0]!, null)).toBe("one\ntwo\n");
    const remove = unifiedDiff("old.txt", "one\n", null);
    expect(applyFilePatch(parsePatch(remove)[0]!, "one\n")).toBeNull();
    expect(lineStat(null, "one\ntwo\n")).toEqual({ added: 2, removed: 0 });
  });

  it("marks a last line without a newline", () => {
    const diff = unifiedDiff("f", "a\nb", "a\nb\n");
    expect(diff).toContain("-b\n\\ No newline at end of file\n+b\n");
    expect(applyFilePatch(parsePatch(diff)[0]!, "a\nb")).toBe("a\nb\n");
  });

  it("applies a hunk at a shifted line, and refuses one whose context does not match", () => {
    const patch = parsePatch("--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n x\n-y\n+z\n")[0]!;
    expect(applyFilePatch(patch, "top\nx\ny\n")).toBe("top\nx\nz\n");
    expect(() => applyFilePatch(patch, "x\nw\n")).toThrow(ToolError);
  });

  it("refuses what it does not support", () => {
    const refused = [
      "diff --git a/x b/y\nsimilarity index 90%\nrename from x\nrename to y\n",
      "diff --git a/x b/x\nold mode 100644\nnew mode 100755\n",
      "diff --git a/l b/l\nnew file mode 120000\n--- /dev/null\n+++ b/l\n@@ -0,0 +1 @@\n+/etc/passwd\n",
      "diff --git a/x b/x\nBinary files a/x and b/x differ\n",
      '--- "a/q"\n+++ "b/q"\n@@ -1 +1 @@\n-a\n+b\n',
      "--- a/x\n+++ b/y\n@@ -1 +1 @@\n-a\n+b\n",
      "--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n a\n-b\n+c\n",
      "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n",
      "just words\n",
    ];
    for (const patch of refused) {
      expect(() => parsePatch(patch), patch).toThrow(expect.objectContaining({ code: "invalid_input" }));
    }
  });
});
