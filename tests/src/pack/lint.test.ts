// Each publishable package as npm packs it: only what a user needs, its fields, executable bins, and
// publint and @arethetypeswrong/cli clean. The rules are first shown to catch each kind of bad package.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mapLimit, packAll, packProblems, publishablePackages, root, run, runAsync, type Manifest, type Packed } from "./pack-kit.js";

type Checked = Awaited<ReturnType<typeof runAsync>>;

const license = readFileSync(join(root, "LICENSE"), "utf8");
const packages = publishablePackages();
const versions = new Map(packages.map((p) => [p.manifest.name, p.manifest.version]));
const bin = (name: string) => join(root, "node_modules", ".bin", name);

/** A package that keeps every rule, to be broken one way per test. */
function good(): { dir: string; manifest: Manifest; entries: Map<string, number>; read(path: string): string } {
  const manifest: Manifest = {
    name: "@toolgate/example",
    version: "0.1.0",
    license: "Apache-2.0",
    repository: { type: "git", url: "git+https://example.invalid/toolgate.git", directory: "packages/example" },
    engines: { node: ">=20.19" },
    publishConfig: { access: "public" },
    bin: { example: "./dist/bin.js" },
    exports: { ".": { types: "./dist/index.d.ts", import: "./dist/index.js" }, "./package.json": "./package.json" },
    dependencies: { "@toolgate/core": "0.1.0", zod: "4.6.7" },
    peerDependencies: { "@toolgate/core": "^0.1.0" },
  };
  const entries = new Map([
    ["package.json", 0o644],
    ["README.md", 0o644],
    ["LICENSE", 0o644],
    ["dist/index.js", 0o644],
    ["dist/index.d.ts", 0o644],
    ["dist/bin.js", 0o755],
  ]);
  return { dir: "example", manifest, entries, read: () => license };
}
const releaseVersions = new Map([["@toolgate/core", "0.1.0"]]);

describe("the pack rules catch each kind of unfit package", () => {
  it("passes a package that keeps every rule (so each case below fails for its own reason)", () => {
    expect(packProblems(good(), releaseVersions, license)).toEqual([]);
  });

  it("a bin packed without its execute bit", () => {
    const p = good();
    p.entries.set("dist/bin.js", 0o644);
    expect(packProblems(p, releaseVersions, license)).toEqual(["bin example: dist/bin.js is packed with mode 644, not executable"]);
  });

  it("a bin whose target is not packed", () => {
    const p = good();
    p.entries.delete("dist/bin.js");
    expect(packProblems(p, releaseVersions, license)).toEqual(["bin example: dist/bin.js is not packed"]);
  });

  it("file:, workspace:, link:, git and path dependencies, in every dependency field", () => {
    const p = good();
    p.manifest.dependencies = { a: "file:../a", b: "workspace:*", c: "link:../c" };
    p.manifest.peerDependencies = { d: "git+https://example.invalid/d.git", e: "../e" };
    p.manifest.optionalDependencies = { f: "github:someone/f" };
    expect(packProblems(p, releaseVersions, license)).toHaveLength(6);
  });

  it("git dependencies by a host's shortcut or the bare owner/repo form, and a path or spec in any letter case", () => {
    const p = good();
    p.manifest.dependencies = { a: "gitlab:someone/a", b: "bitbucket:someone/b", c: "gist:0123abcd", d: "someone/d", e: "someone/e#v1.0.0" };
    p.manifest.optionalDependencies = { f: "FILE:../f", g: "Git+SSH://example.invalid/g.git", h: "C:\\work\\h" };
    expect(packProblems(p, releaseVersions, license)).toHaveLength(8);
    const registry = good();
    registry.manifest.dependencies = { zod: "4.6.7", alias: "npm:zod@4.6.7", scoped: "npm:@toolgate/core@0.1.0" };
    registry.manifest.peerDependencies = {};
    expect(packProblems(registry, releaseVersions, license)).toEqual([]);
  });

  it("a dependency (not a peer) on anything but one exact version: a range, a tag, any version", () => {
    const p = good();
    p.manifest.dependencies = { a: "^4.6.7", b: "~1.2.3", c: "latest", d: "*", e: "", f: ">=1.0.0", g: "1.x", h: "npm:zod@^4.6.7" };
    p.manifest.optionalDependencies = { i: "^2.0.0" };
    expect(packProblems(p, releaseVersions, license)).toHaveLength(9);
    const exact = good();
    exact.manifest.dependencies = { zod: "4.6.7", pre: "1.0.0-rc.1", alias: "npm:zod@4.6.7" };
    exact.manifest.peerDependencies = { ai: "^6.0.0", agents: ">=0.14.3 <1" };
    expect(packProblems(exact, releaseVersions, license)).toEqual([]);
  });

  it("a dependency on a sibling at a version the release does not have", () => {
    const p = good();
    p.manifest.dependencies = { "@toolgate/core": "0.0.9" };
    expect(packProblems(p, releaseVersions, license)).toEqual(["dependencies.@toolgate/core is 0.0.9, but the release has @toolgate/core@0.1.0"]);
  });

  it("sources, tests and fixtures in the tarball", () => {
    const p = good();
    p.entries.set("src/index.ts", 0o644);
    p.entries.set("dist/index.test.js", 0o644);
    p.entries.set("dist/fixtures/peer.js", 0o644);
    const problems = packProblems(p, releaseVersions, license);
    expect(problems).toContain("src/index.ts is packed but is neither dist, README, LICENSE nor a bin");
    expect(problems).toContain("dist/index.test.js is a test or fixture");
    expect(problems).toContain("dist/fixtures/peer.js is a test or fixture");
  });

  it("no LICENSE, or another licence's text, or another licence named", () => {
    const missing = good();
    missing.entries.delete("LICENSE");
    expect(packProblems(missing, releaseVersions, license)).toEqual(["LICENSE is not packed"]);
    const other = good();
    other.read = () => "MIT License\n";
    expect(packProblems(other, releaseVersions, license)).toEqual(["LICENSE is not the repository's licence"]);
    const named = good();
    named.manifest.license = "MIT";
    expect(packProblems(named, releaseVersions, license)).toHaveLength(1);
  });

  it("no repository (or one naming another folder), no engines, a restricted publish", () => {
    const p = good();
    delete p.manifest.repository;
    delete p.manifest.engines;
    delete p.manifest.publishConfig;
    expect(packProblems(p, releaseVersions, license)).toHaveLength(3);
    const elsewhere = good();
    elsewhere.manifest.repository = { type: "git", url: "git+https://example.invalid/toolgate.git", directory: "packages/other" };
    expect(packProblems(elsewhere, releaseVersions, license)).toHaveLength(1);
  });

  it("exports without types first, or naming files not packed", () => {
    const p = good();
    p.manifest.exports = {
      ".": { import: "./dist/index.js", types: "./dist/index.d.ts" },
      "./extra": { types: "./dist/extra.d.ts", import: "./dist/extra.js" },
    };
    expect(packProblems(p, releaseVersions, license)).toEqual([
      'exports["."] does not start with a types condition',
      'exports["./extra"].types (dist/extra.d.ts) is not packed',
      'exports["./extra"].import (dist/extra.js) is not packed',
    ]);
  });

  it("an install script that every user's install would run", () => {
    const p = good();
    p.manifest.scripts = { postinstall: "node setup.js" };
    expect(packProblems(p, releaseVersions, license)).toEqual(["scripts.postinstall would run on every user's install"]);
  });
});

describe("publint and @arethetypeswrong/cli fail a broken package (the wiring below can fail)", () => {
  let dir: string;
  let tarball: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "toolgate-pack-broken-"));
    mkdirSync(join(dir, "pkg", "dist"), { recursive: true });
    // Types that import without an extension (node16 cannot resolve them), and an entry that is not packed at all.
    const exports = { ".": { types: "./dist/index.d.ts", import: "./dist/index.js" }, "./gone": { types: "./dist/gone.d.ts", import: "./dist/gone.js" } };
    writeFileSync(join(dir, "pkg", "package.json"), JSON.stringify({ name: "broken", version: "1.0.0", type: "module", exports }));
    writeFileSync(join(dir, "pkg", "dist", "index.js"), "export const x = 1;\n");
    writeFileSync(join(dir, "pkg", "dist", "index.d.ts"), 'export * from "./other";\n');
    writeFileSync(join(dir, "pkg", "dist", "other.d.ts"), "export declare const x: number;\n");
    const r = run("npm", ["pack", "--pack-destination", dir, "--json"], join(dir, "pkg"));
    tarball = join(dir, (JSON.parse(r.stdout) as { filename: string }[])[0]!.filename);
  }, 60_000);
  afterAll(() => rmSync(dir, { recursive: true, force: true }), 60_000);

  it("publint reports it", () => {
    const r = run(bin("publint"), ["run", tarball, "--strict"], dir);
    expect(r.status, r.stdout).not.toBe(0);
    expect(r.stdout + r.stderr).toMatch(/gone\.d\.ts/);
  });

  it("attw reports it", () => {
    const r = run(bin("attw"), [tarball, "--profile", "esm-only", "--format", "json"], dir);
    expect(r.status).not.toBe(0);
    expect(attwProblems(r.stdout)).toContainEqual(expect.objectContaining({ kind: "InternalResolutionError", resolutionOption: "node16" }));
  });
});

/** attw's problems that count for an ESM-only package: every one except the node10 and CommonJS-require resolutions its esm-only profile ignores. */
function attwProblems(json: string): unknown[] {
  const report = JSON.parse(json) as { analysis: { types: unknown }; problems?: Record<string, { resolutionKind?: string }[]> };
  // A package attw finds no types in is not checked at all: that is a problem too.
  if (!report.analysis.types) return ["attw found no types"];
  return Object.values(report.problems ?? {})
    .flat()
    .filter((p) => p.resolutionKind !== "node10" && p.resolutionKind !== "node16-cjs");
}

describe("every publishable package, as npm packs it", () => {
  let dest: string;
  let packed: Packed[] = [];
  let publint: Checked[] = [];
  let attw: Checked[] = [];
  beforeAll(async () => {
    dest = mkdtempSync(join(tmpdir(), "toolgate-pack-lint-"));
    packed = packAll(dest);
    // The checkers run side by side in the background, each on its tarball; the tests below read their answers.
    publint = await mapLimit(packed, 3, (p) => runAsync(bin("publint"), ["run", p.tarball, "--strict"], dest));
    attw = await mapLimit(packed, 3, (p) => runAsync(bin("attw"), [p.tarball, "--profile", "esm-only", "--format", "json"], dest));
  }, 240_000);
  afterAll(() => rmSync(dest, { recursive: true, force: true }), 60_000);
  const find = (dir: string) => packed.find((p) => p.dir === dir)!;
  const answer = (of: Checked[], dir: string) => of[packed.findIndex((p) => p.dir === dir)]!;

  it("is every package under packages/ that is not private, and at least the ones the docs install", () => {
    expect(packed.map((p) => p.dir)).toEqual(packages.map((p) => p.dir));
    expect(packed.map((p) => p.manifest.name)).toEqual(expect.arrayContaining(["@toolgate/core", "@toolgate/cli", "@toolgate/process"]));
  });

  for (const { dir, manifest } of packages) {
    describe(manifest.name, () => {
      it("packs only dist, README and LICENSE, with its fields, executable bins and release-wide dependencies", () => {
        expect(packProblems(find(dir), versions, license)).toEqual([]);
      });

      // No suppression: publint's warnings fail the test as its errors do (--strict).
      it("publint: no errors, no warnings", () => {
        const r = answer(publint, dir);
        expect(r.status, r.stdout + r.stderr).toBe(0);
      });

      // The packages are ESM only: attw's documented esm-only profile ignores node10 and require() from CommonJS;
      // node16 (from ESM) and bundler resolution must have no problem at all.
      it("@arethetypeswrong/cli: no problems for node16 and bundler resolution", () => {
        const r = answer(attw, dir);
        expect(attwProblems(r.stdout)).toEqual([]);
        expect(r.status, r.stderr).toBe(0);
      });
    });
  }
});
