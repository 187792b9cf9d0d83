import { existsSync, readdirSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import type { ViteUserConfig } from "vitest/config";

/**
 * Every package's tests run the workspace's TypeScript sources and fail when they assert nothing.
 * A package that missed either would test a stale dist, or pass tests that check nothing, silently.
 */
const root = new URL("../../", import.meta.url);
const suites = [...readdirSync(new URL("packages/", root)).map((name) => `packages/${name}/`), "tests/"].filter((dir) =>
  existsSync(new URL(`${dir}package.json`, root)),
);
const packages = suites.filter((dir) => dir.startsWith("packages/"));

describe("the workspace tests what it ships", () => {
  it("finds the packages", () => {
    expect(packages).toEqual(expect.arrayContaining(["packages/core/", "packages/process/"]));
  });

  for (const dir of packages) {
    it(`${dir} exports its sources under "@toolgate/source", between types and import, and ships only dist`, () => {
      const manifest = JSON.parse(readFileSync(new URL(`${dir}package.json`, root), "utf8")) as { exports: Record<string, unknown>; files: string[] };
      const entries = Object.entries(manifest.exports).filter((entry): entry is [string, Record<string, string>] => typeof entry[1] === "object");
      expect(entries.length, `${dir}package.json has no conditional exports`).toBeGreaterThan(0);
      for (const [subpath, target] of entries) {
        expect(Object.keys(target), `${dir} ${subpath}`).toEqual(["types", "@toolgate/source", "import"]);
        const source = target["@toolgate/source"]!;
        expect(source, `${dir} ${subpath}`).toBe(target["types"]!.replace(/^\.\/dist\//, "./src/").replace(/\.d\.ts$/, ".ts"));
        expect(existsSync(new URL(`${dir}${source}`, root)), `${dir}${source} is missing`).toBe(true);
      }
      // A package with a command ships its committed bin entry beside dist: npm links a bin at
      // install time, before the build exists, so the entry must not live in dist.
      const bins = Object.values((manifest as { bin?: Record<string, string> }).bin ?? {});
      // Beside them only the README and the licence (each package carries its own copy: npm packs no file from outside it).
      expect(manifest.files.filter((f) => f !== "README.md" && f !== "LICENSE")).toEqual(bins.some((b) => b.startsWith("./bin/")) ? ["bin", "dist"] : ["dist"]);
      expect(manifest.files, `${dir}package.json`).toContain("LICENSE");
      expect(existsSync(new URL(`${dir}LICENSE`, root)), `${dir}LICENSE is missing`).toBe(true);
      for (const bin of bins) expect(existsSync(new URL(`${dir}${bin}`, root)) || bin.startsWith("./dist/"), `${dir}${bin} is missing`).toBe(true);
    });
  }

  for (const dir of suites) {
    it(`${dir}vitest.config.ts resolves workspace sources and requires assertions`, async () => {
      const { default: config } = (await import(new URL(`${dir}vitest.config.ts`, root).href)) as { default: ViteUserConfig };
      expect(config.ssr?.resolve?.conditions).toContain("@toolgate/source");
      expect(config.test?.expect?.requireAssertions).toBe(true);
    });
  }
});
