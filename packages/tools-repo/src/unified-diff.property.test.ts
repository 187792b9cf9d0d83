/**
 * Round trip through the library: for any two texts (lines drawn from a small alphabet so diffs
 * share context, with or without a last newline, CRLF included), the patch `unifiedDiff` writes,
 * parsed by `parsePatch` and applied by `applyFilePatch` to the old text, gives the new text; and a
 * patch applied to a text it was not made for gives the new text or a `conflict`, never a crash.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ToolError } from "@toolgate/core";
import { applyFilePatch, lineStat, parsePatch, unifiedDiff } from "./unified-diff.js";

const line = fc.constantFrom(
  "a",
  "b",
  "c",
  "",
  "  indented",
  "tab\tbed",
  "-dash",
  "+plus",
  " space",
  "\\ back",
  "@@ -1 +1 @@",
  "--- a/x",
  "+++ b/x",
  "crlf\r",
  "é😀",
);
const text = fc.tuple(fc.array(line, { maxLength: 40 }), fc.boolean()).map(([lines, newline]) => lines.join("\n") + (newline && lines.length > 0 ? "\n" : ""));
/** A text or no file at all. */
const maybe = fc.option(text, { nil: null, freq: 6 });

describe("unified diff: created then applied gives the new file", () => {
  it("holds for any two texts, creations and deletions included", () => {
    fc.assert(
      fc.property(maybe, maybe, (before, after) => {
        const diff = unifiedDiff("dir/f.txt", before, after);
        if (before === after) {
          expect(diff).toBe("");
          return;
        }
        const files = parsePatch(diff);
        expect(files).toHaveLength(1);
        expect(files[0]).toMatchObject({ oldPath: before === null ? null : "dir/f.txt", newPath: after === null ? null : "dir/f.txt" });
        expect(applyFilePatch(files[0]!, before)).toBe(after);
      }),
      { numRuns: 600 },
    );
  });

  it("counts the same lines the patch holds", () => {
    fc.assert(
      fc.property(text, text, (before, after) => {
        const diff = unifiedDiff("f", before, after, 0);
        const body = diff.split("\n").filter((l) => !/^(---|\+\+\+) /.test(l));
        expect(lineStat(before, after)).toEqual({ added: body.filter((l) => l.startsWith("+")).length, removed: body.filter((l) => l.startsWith("-")).length });
      }),
      { numRuns: 300 },
    );
  });

  it("applied to another text, gives the new text or a conflict", () => {
    fc.assert(
      fc.property(text, text, text, (before, after, other) => {
        if (before === after) {
          expect(unifiedDiff("f", before, after)).toBe("");
          return;
        }
        const [file] = parsePatch(unifiedDiff("f", before, after));
        try {
          const result = applyFilePatch(file!, other);
          expect(typeof result).toBe("string");
        } catch (error) {
          expect(error).toBeInstanceOf(ToolError);
          expect((error as ToolError).code).toBe("conflict");
        }
      }),
      { numRuns: 300 },
    );
  });

  it("falls back to the whole text replaced when the texts differ in more than 2,000 edits", () => {
    const before = Array.from({ length: 1500 }, (_, i) => `old ${i}\n`).join("");
    const after = Array.from({ length: 1500 }, (_, i) => `new ${i}\n`).join("");
    const diff = unifiedDiff("big", before, after);
    expect(diff).toContain("@@ -1,1500 +1,1500 @@\n-old 0\n");
    expect(applyFilePatch(parsePatch(diff)[0]!, before)).toBe(after);
    expect(lineStat(before, after)).toEqual({ added: 1500, removed: 1500 });
  });
});

describe("parsePatch: what the library reads but the tools refuse", () => {
  const refused: readonly [string, string][] = [
    ["a copy", "diff --git a/x b/y\nsimilarity index 100%\ncopy from x\ncopy to y\n"],
    ["a rename with hunks", "diff --git a/x b/y\nrename from x\nrename to y\n--- a/x\n+++ b/y\n@@ -1 +1 @@\n-a\n+b\n"],
    ["a mode change beside a hunk", "diff --git a/x b/x\nold mode 100644\nnew mode 100755\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n"],
    ["a submodule", "diff --git a/m b/m\nnew file mode 160000\n--- /dev/null\n+++ b/m\n@@ -0,0 +1 @@\n+Subproject commit 0\n"],
    ["a deleted link", "diff --git a/l b/l\ndeleted file mode 120000\n--- a/l\n+++ /dev/null\n@@ -1 +0,0 @@\n-/etc/passwd\n"],
    ["a git binary patch", "diff --git a/x b/x\nindex 1..2 100644\nGIT binary patch\nliteral 1\nIcmZo*00001\n\n"],
    ["a combined diff", "diff --cc x\n--- a/x\n+++ b/x\n@@@ -1,1 -1,1 +1,1 @@@\n- a\n +b\n"],
    ["a quoted name in the git header", 'diff --git "a/x\\ty" "b/x\\ty"\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n'],
    ["an escaped name", "--- a/x\\\\y\n+++ b/x\\\\y\n@@ -1 +1 @@\n-a\n+b\n"],
    ["a control character in a name", "--- /dev/null\n+++ b/x\ry\n@@ -0,0 +1 @@\n+a\n"],
    ["a hunk without file headers", "@@ -1 +1 @@\n-a\n+b\n"],
    ["a malformed hunk header", "--- a/x\n+++ b/x\n@@ -x +y @@\n-a\n+b\n"],
    ["more hunk lines than counted", "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n+c\n"],
    ["a creation whose old side names a file", "diff --git a/x b/x\nnew file mode 100644\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n"],
    ["a section with neither hunks nor creation", "diff --git a/x b/x\nindex 1..2 100644\n"],
    ["the same file twice under two spellings of its header", "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\ndiff --git a/x b/x\n--- x\n+++ x\n@@ -1 +1 @@\n-b\n+c\n"],
  ];
  for (const [what, patch] of refused)
    it(`refuses ${what}`, () => {
      expect(() => parsePatch(patch)).toThrow(expect.objectContaining({ code: "invalid_input" }));
    });

  it("reads header-like lines inside a hunk as content, not as headers", () => {
    const patch = '--- a/q.sql\n+++ b/q.sql\n@@ -1,2 +1,2 @@\n--- "old"\n-rename from x\n++++ "new"\n+old mode 1\n';
    const [file] = parsePatch(patch);
    expect(applyFilePatch(file!, '-- "old"\nrename from x\n')).toBe('+++ "new"\nold mode 1\n');
  });

  it("creates and deletes an empty file from git's header alone", () => {
    const [created] = parsePatch("diff --git a/e b/e\nnew file mode 100644\nindex 0000000..e69de29\n");
    expect(created).toMatchObject({ oldPath: null, newPath: "e" });
    expect(applyFilePatch(created!, null)).toBe("");
    const [deleted] = parsePatch("diff --git a/e b/e\ndeleted file mode 100644\nindex e69de29..0000000\n");
    expect(applyFilePatch(deleted!, "")).toBeNull();
    expect(() => applyFilePatch(deleted!, "left\n")).toThrow(expect.objectContaining({ code: "conflict" }));
  });

  it("keeps a traversal or absolute name as written, for the tool's resolver to refuse", () => {
    expect(parsePatch("--- /dev/null\n+++ b/../outside\n@@ -0,0 +1 @@\n+x\n")[0]).toMatchObject({ newPath: "../outside" });
    expect(parsePatch("--- /dev/null\n+++ /etc/passwd\n@@ -0,0 +1 @@\n+x\n")[0]).toMatchObject({ newPath: "/etc/passwd" });
  });
});
