import { mkdirSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { runIn, tempProject } from "../fixtures/temp-project.js";

// `toolgate docs --check` owns its output directory: every Markdown page there is the page of a
// family the composition has now. A page left over for a family that is gone fails the check by
// name, whatever it holds — with or without the generator's marker line, written with a BOM or
// CRLF line ends, or in a folder below.
describe("toolgate docs --check: stale pages", () => {
  let dir: string;
  let pages: string;
  beforeAll(async () => {
    dir = tempProject("toolgate-docs-");
    pages = join(dir, "docs", "tools");
    expect((await runIn(dir, "docs")).code).toBe(0);
    expect((await runIn(dir, "docs", "--check")).code).toBe(0);
  });

  const generated = () => readFileSync(join(pages, "notes.md"), "utf8");
  const stale: Record<string, () => string> = {
    "a generated page of a family that is gone": () => generated().replaceAll("notes", "mail"),
    "the same page without the marker line (hand-edited)": () => generated().split("\n").slice(1).join("\n"),
    "a page with a byte-order mark before the marker": () => `\uFEFF${generated()}`,
    "a page with CRLF line ends": () => generated().replaceAll("\n", "\r\n"),
    "a page whose marker follows a blank line": () => `\n${generated()}`,
    "a page for one tool of a family that is gone": () => "# `mail.send`\n\nSends mail.\n",
  };
  for (const [what, content] of Object.entries(stale)) {
    it(`fails, naming the file: ${what}`, async () => {
      const file = join(pages, "mail.md");
      writeFileSync(file, content());
      try {
        const r = await runIn(dir, "docs", "--check");
        expect(r.code).toBe(1);
        expect(r.stderr).toContain(`stale: ${file}`);
        expect(r.stderr).toContain("out of date");
      } finally {
        rmSync(file);
      }
    });
  }

  it("fails on a stale page in a folder below the docs directory, naming it", async () => {
    const sub = join(pages, "old");
    mkdirSync(sub, { recursive: true });
    const file = join(sub, "mail.md");
    writeFileSync(file, generated().replaceAll("notes", "mail"));
    try {
      const r = await runIn(dir, "docs", "--check");
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(`stale: ${file}`);
    } finally {
      rmSync(sub, { recursive: true });
    }
  });

  it("fails on a stale page spelt .MD, and on a symbolic link to a page, naming each", async () => {
    const upper = join(pages, "mail.MD");
    const link = join(pages, "calendar.md");
    writeFileSync(upper, "# old\n");
    symlinkSync(join(pages, "notes.md"), link);
    try {
      const r = await runIn(dir, "docs", "--check");
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(`stale: ${upper}`);
      expect(r.stderr).toContain(`stale: ${link}`);
    } finally {
      rmSync(upper);
      rmSync(link);
    }
  });

  it("passes with only the current pages, and files that are not Markdown pages are left alone", async () => {
    writeFileSync(join(pages, ".gitattributes"), "*.md linguist-generated\n");
    const r = await runIn(dir, "docs", "--check");
    expect(r.code).toBe(0);
    expect(readdirSync(pages).sort()).toEqual([".gitattributes", "notes.md"]);
  });

  it("toolgate docs (writing) names the stale pages it leaves, and exits 0", async () => {
    const file = join(pages, "mail.md");
    writeFileSync(file, "# old\n");
    try {
      const r = await runIn(dir, "docs");
      expect(r.code).toBe(0);
      expect(r.stderr).toContain(`stale: ${file}`);
    } finally {
      rmSync(file);
    }
  });
});
