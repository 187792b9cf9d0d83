// The packages as someone else gets them: packed, installed into a fresh project outside the repository
// (the npm registry for everything else), then the README example, both bins and both scaffolds run there.
//
// The scaffolds' package.json is not rewritten: it pins the @toolgate packages at this release, as a user's
// would after publish. The fresh project stands in for the registry by already holding the tarballs and
// taking the scaffold in as a workspace, so `npm install` in the scaffold resolves @toolgate/* to exactly
// those tarballs (a pin this release does not have would go to the registry and fail).
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cleanEnv, packAll, root, run, type Manifest, type Packed } from "./pack-kit.js";

const rootManifest = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { devDependencies: Record<string, string> };
/** What the README example and a TypeScript scaffold need beside the tarballs, at the repository's versions. */
const registryPackages = ["typescript", "@types/node", "zod"].map((name) => `${name}@${rootManifest.devDependencies[name]}`);
/** Installs may use the registry (cached copies first), and nothing else. */
const env = cleanEnv({ npm_config_prefer_offline: "true" });

let work: string;
let app: string;
let packed: Packed[] = [];
/** A lockfile path that is an @toolgate package itself (not something nested below one). */
const ourPackage = /(^|\/)node_modules\/@toolgate\/[^/]+$/;
/** Run a shell line as a user types it, in `cwd`. */
const sh = (line: string, cwd: string) => run("/bin/sh", ["-c", line], cwd, env);

beforeAll(() => {
  work = realpathSync(mkdtempSync(join(tmpdir(), "toolgate-pack-install-")));
  mkdirSync(join(work, "tarballs"));
  packed = packAll(join(work, "tarballs"));
  app = join(work, "app");
  mkdirSync(join(app, "tools"), { recursive: true });
  writeFileSync(join(app, "package.json"), `${JSON.stringify({ name: "fresh-app", private: true, type: "module", workspaces: ["tools/*"] }, null, 2)}\n`);
  // --ignore-scripts: the one install script in the tree is better-sqlite3's native build, minutes on this machine
  // with its prebuilt binary out of reach; nothing below opens SQLite, and the lint tests hold every @toolgate
  // package to having no install script of its own.
  const r = run(
    "npm",
    ["install", "--save-exact", "--ignore-scripts", "--prefer-offline", "--no-audit", "--no-fund", ...packed.map((p) => p.tarball), ...registryPackages],
    app,
    env,
  );
  if (r.status !== 0) throw new Error(`npm install of the tarballs failed:\n${r.stderr}`);
}, 300_000);
afterAll(() => rmSync(work, { recursive: true, force: true }), 120_000);

describe("installed from the tarballs into a fresh project outside the repository", () => {
  it("is outside the repository, and every @toolgate package in it came from a tarball", () => {
    expect(app.startsWith(realpathSync(root))).toBe(false);
    const lock = JSON.parse(readFileSync(join(app, "package-lock.json"), "utf8")) as { packages: Record<string, { resolved?: string }> };
    const ours = Object.entries(lock.packages).filter(([path]) => ourPackage.test(path));
    expect(ours.map(([path]) => path.replace(/^.*node_modules\//, "")).sort()).toEqual(packed.map((p) => p.manifest.name).sort());
    for (const [path, entry] of ours) expect(entry.resolved, path).toMatch(/^file:.*\.tgz$/);
  });

  it("runs the README's first TypeScript example against the installed types and code: it prints 4", () => {
    const readme = readFileSync(join(root, "README.md"), "utf8");
    const example = /```ts\n([\s\S]*?)```/.exec(readme)?.[1];
    expect(example).toContain('from "@toolgate/core"');
    writeFileSync(join(app, "example.ts"), example!);
    // Strict, and the installed declarations checked too (no skipLibCheck): a .d.ts that needs what a user lacks fails here.
    const tsconfig = {
      compilerOptions: { target: "ES2022", module: "NodeNext", moduleResolution: "NodeNext", strict: true, outDir: "out", types: ["node"] },
      files: ["example.ts"],
    };
    writeFileSync(join(app, "tsconfig.json"), JSON.stringify(tsconfig));
    const tsc = run(process.execPath, [join(app, "node_modules", "typescript", "bin", "tsc"), "-p", "tsconfig.json"], app, env);
    expect(tsc.status, tsc.stdout + tsc.stderr).toBe(0);
    const r = run(process.execPath, ["out/example.js"], app, env);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toBe("4\n");
  }, 120_000);

  it("npx toolgate --help", () => {
    const r = sh("npx toolgate --help", app);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^Usage: toolgate /);
  }, 60_000);

  it("npx toolgate-tool-test --help prints its usage (it starts no program named --help)", () => {
    const r = sh("npx toolgate-tool-test --help", app);
    expect(r.status, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^usage: toolgate-tool-test /);
  }, 60_000);

  it("loads every entry point of every package, short only of optional peers the project did not install", () => {
    const script = `
      import { readFileSync } from "node:fs";
      const names = ${JSON.stringify(packed.map((p) => p.manifest.name))};
      const out = [];
      for (const name of names) {
        const manifest = JSON.parse(readFileSync(\`node_modules/\${name}/package.json\`, "utf8"));
        for (const subpath of Object.keys(manifest.exports)) {
          if (subpath.endsWith(".json")) continue;
          const spec = subpath === "." ? name : name + subpath.slice(1);
          try { await import(spec); out.push({ name, spec }); }
          catch (error) { out.push({ name, spec, missing: /Cannot find package '([^']+)'/.exec(error.message)?.[1] ?? error.message }); }
        }
      }
      console.log(JSON.stringify(out));`;
    writeFileSync(join(app, "load-all.mjs"), script);
    const r = run(process.execPath, ["load-all.mjs"], app, env);
    expect(r.status, r.stderr).toBe(0);
    const loads = JSON.parse(r.stdout) as { name: string; spec: string; missing?: string }[];
    expect(loads.length).toBeGreaterThan(packed.length);
    for (const { name, spec, missing } of loads.filter((l) => l.missing)) {
      // Only an optional peer may be missing: a required import the workspace's hoisting hid would show up here.
      const manifest: Manifest = packed.find((p) => p.manifest.name === name)!.manifest;
      expect(manifest.peerDependenciesMeta?.[missing!]?.optional, `${spec} cannot load: ${missing}`).toBe(true);
    }
  }, 120_000);
});

describe("tool init scaffolds, and their next: lines run verbatim", () => {
  const nextLine = (stdout: string) => /^next: (.+)$/m.exec(stdout)?.[1];

  it("TypeScript: its package.json installs from the tarballs and its conformance run passes", () => {
    const tools = join(app, "tools");
    const init = sh("npx toolgate tool init mytool --lang ts", tools);
    expect(init.status, init.stderr).toBe(0);
    const scaffold = JSON.parse(readFileSync(join(tools, "mytool", "package.json"), "utf8")) as Manifest & { devDependencies: Record<string, string> };
    const release = new Map(packed.map((p) => [p.manifest.name, p.manifest.version]));
    expect(scaffold.dependencies?.["@toolgate/process"]).toBe(release.get("@toolgate/process"));
    expect(scaffold.devDependencies["@toolgate/cli"]).toBe(release.get("@toolgate/cli"));
    const next = nextLine(init.stdout);
    expect(next).toBe("cd mytool && npm install && npm test");
    const r = sh(next!, tools);
    expect(r.status, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^PASS handshake/m);
    expect(r.stdout).toMatch(/^8 passed, 0 failed$/m);
    // The scaffold's @toolgate packages are the tarballs, not anything fetched for it.
    const lock = JSON.parse(readFileSync(join(app, "package-lock.json"), "utf8")) as { packages: Record<string, { resolved?: string }> };
    for (const [path, entry] of Object.entries(lock.packages)) if (ourPackage.test(path)) expect(entry.resolved, path).toMatch(/^file:/);
  }, 240_000);

  it("Python: the next line (npx with the CLI named) runs the conformance check and passes", () => {
    const init = sh("npx toolgate tool init pytool --lang python", app);
    expect(init.status, init.stderr).toBe(0);
    const next = nextLine(init.stdout);
    expect(next).toMatch(/^cd pytool && npx -p @toolgate\/cli@\S+ toolgate tool test -- python3 tool\.py$/);
    const r = sh(next!, app);
    expect(r.status, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^8 passed, 0 failed$/m);
  }, 120_000);
});
