#!/usr/bin/env node
// The conventions a wrong import or a misplaced file breaks, checked over every workspace package:
//
// 1. Each package's imports match its package.json: a production file (under src/, not a test, a
//    type test or a fixture) imports only what `dependencies` or `peerDependencies` declare; a test
//    file may also use `devDependencies`, and the tooling every workspace shares from the root's
//    (vitest, typescript). A `dependencies` entry nothing imports is a warning.
// 2. The package graph: a family (packages/tools-*) imports no other family, and its production
//    code only @toolgate/core, @toolgate/provider-call and connectors; a connector
//    (packages/connector-*) imports no family and no other connector.
// 3. Emulators and test kits never reach production code: no production file of a published
//    package imports @toolgate/emulators, vitest or a `/testing` entry, and no production entry in
//    `exports` reaches a test entry, a test or a fixture through its relative imports.
// 4. Every family has the one family shape (docs/writing-a-tool-family.md): src/index.ts,
//    src/<family>-tools.ts, src/permissions.ts, src/options.ts, src/client.ts, src/tools/*.ts, and
//    src/<family>-tools.conformance.test.ts, the one file that runs describeToolFamily.
//
// Prints each problem and exits 1 if there is any.
// Usage: node scripts/check-conventions.mjs [--root DIR]   (default: this repository)
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { builtinModules } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";

const rootAt = process.argv.indexOf("--root");
const root = rootAt > 0 ? path.resolve(process.argv[rootAt + 1] ?? ".") : path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const SOURCE = /\.(?:[cm]?[jt]s|tsx)$/;
const TEST = /\.test(?:-d)?\.(?:[cm]?[jt]s|tsx)$/;
const BUILTINS = new Set(builtinModules);
const FAMILY_SHAPE = ["index.ts", "<family>-tools.ts", "permissions.ts", "options.ts", "client.ts"];

const problems = [];
const warnings = [];
const report = (where, what) => problems.push(`${where}: ${what}`);
/** What every workspace's tests run on, installed once at the root. */
const ROOT_TOOLING = ["vitest", "typescript"];

/** Workspace package directories, from the root package.json's `workspaces`. */
function workspaces() {
  const globs = JSON.parse(readFileSync(path.join(root, "package.json"), "utf8")).workspaces ?? [];
  const dirs = [];
  for (const glob of globs) {
    if (glob.endsWith("/*")) {
      const parent = path.join(root, glob.slice(0, -2));
      for (const name of readdirSync(parent).sort()) dirs.push(path.join(parent, name));
    } else dirs.push(path.join(root, glob));
  }
  return dirs.filter((dir) => existsSync(path.join(dir, "package.json")));
}

function sourceFiles(dir) {
  if (!existsSync(dir)) return [];
  const out = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name === "node_modules" || entry.name === "dist") continue;
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...sourceFiles(full));
    else if (SOURCE.test(entry.name) && !entry.name.endsWith(".d.ts")) out.push(full);
  }
  return out.sort();
}

/** Every module specifier a file imports or re-exports, static or dynamic (comments ignored). */
function specifiers(file) {
  return ts.preProcessFile(readFileSync(file, "utf8"), true, true).importedFiles.map((f) => f.fileName);
}

/** `@scope/name/sub` → `@scope/name`; `name/sub` → `name`; undefined for relative paths and Node built-ins. */
function packageOf(specifier) {
  if (specifier.startsWith(".") || specifier.startsWith("/") || specifier.startsWith("node:")) return undefined;
  const parts = specifier.split("/");
  const name = specifier.startsWith("@") ? parts.slice(0, 2).join("/") : parts[0];
  return BUILTINS.has(name) ? undefined : name;
}

/** A relative import's file: `./x.js` is the source `./x.ts` (or `.tsx`, `.mts`), or an index. */
function resolveRelative(from, specifier) {
  const base = path.resolve(path.dirname(from), specifier);
  const stem = base.replace(/\.[cm]?js$/, "");
  for (const candidate of [base, `${stem}.ts`, `${stem}.tsx`, `${stem}.mts`, `${stem}.cts`, path.join(base, "index.ts")]) {
    if (existsSync(candidate) && statSync(candidate).isFile()) return candidate;
  }
  return undefined;
}

/** The source file of each production entry in `exports` (the `@toolgate/source` target). */
function productionEntries(dir, pkg) {
  const entries = [];
  for (const [subpath, target] of Object.entries(pkg.exports ?? {})) {
    if (subpath === "./testing" || subpath.startsWith("./testing/") || subpath === "./package.json") continue;
    const source = typeof target === "object" && target !== null ? target["@toolgate/source"] : undefined;
    if (typeof source === "string") entries.push([subpath, path.join(dir, source)]);
  }
  return entries;
}

for (const dir of workspaces()) {
  const pkg = JSON.parse(readFileSync(path.join(dir, "package.json"), "utf8"));
  const rel = (file) => path.relative(root, file);
  const src = path.join(dir, "src");
  const isTestKit = (file) => path.relative(src, file).split(path.sep)[0] === "testing";
  const isTest = (file) => TEST.test(file) || path.relative(src, file).split(path.sep).includes("fixtures");
  const production = new Set([...Object.keys(pkg.dependencies ?? {}), ...Object.keys(pkg.peerDependencies ?? {}), pkg.name]);
  const anywhere = new Set([...production, ...Object.keys(pkg.devDependencies ?? {}), ...ROOT_TOOLING]);
  const dirName = path.basename(dir);
  const family = dirName.startsWith("tools-") ? dirName.slice("tools-".length) : undefined;
  const connector = dirName.startsWith("connector-");
  const used = new Set();
  // Files a reader takes in at once: no source file over 400 lines, no file of the gate over 250.
  for (const file of sourceFiles(src).filter((f) => !TEST.test(f))) {
    const lines = readFileSync(file, "utf8").split("\n").length - 1;
    const limit = path.relative(root, file).startsWith(path.join("packages", "core", "src", "gate")) ? 250 : 400;
    if (lines > limit) report(rel(file), `is ${lines} lines; split it along a seam (at most ${limit})`);
  }

  for (const file of sourceFiles(src)) {
    const test = isTest(file);
    for (const specifier of specifiers(file)) {
      const name = packageOf(specifier);
      if (name === undefined) continue;
      used.add(name);
      // 1. declared in package.json
      if (!(test ? anywhere : production).has(name)) {
        report(
          rel(file),
          `imports "${specifier}", but ${pkg.name} does not declare ${name} in ${test ? "any of its dependencies" : "dependencies or peerDependencies"}`,
        );
      }
      // 2. the package graph
      if (family !== undefined && /^@toolgate\/tools-/.test(name) && name !== pkg.name) report(rel(file), `a family imports another family (${name})`);
      if (!test && !isTestKit(file) && name.startsWith("@toolgate/") && name !== pkg.name) {
        const allowed =
          family !== undefined ? /^@toolgate\/(core|provider-call|connector-[a-z0-9-]+)$/ : connector ? /^@toolgate\/(core|provider-call)$/ : undefined;
        if (allowed && !allowed.test(name))
          report(
            rel(file),
            `${family !== undefined ? "a family" : "a connector"} imports ${name}; it may import only @toolgate/core, @toolgate/provider-call${family !== undefined ? " and a connector" : ""}`,
          );
      }
      // 3. no emulator or test kit in production code of a published package
      if (!pkg.private && !test && !isTestKit(file) && pkg.name !== "@toolgate/emulators") {
        if (name === "@toolgate/emulators" || name === "vitest" || /^@toolgate\/[^/]+\/testing(\/|$)/.test(specifier)) {
          report(rel(file), `production code imports "${specifier}" (emulators and test kits belong in tests, fixtures and src/testing only)`);
        }
      }
    }
  }

  // 1. a dependency nothing imports
  for (const name of Object.keys(pkg.dependencies ?? {})) {
    if (!used.has(name)) warnings.push(`${rel(path.join(dir, "package.json"))}: declares the dependency ${name}, which nothing under src imports`);
  }

  // 3. production entries never reach a test entry, a test or a fixture
  for (const [subpath, entry] of productionEntries(dir, pkg)) {
    const seen = new Set();
    const queue = [entry];
    while (queue.length > 0) {
      const file = queue.pop();
      if (seen.has(file) || !existsSync(file)) continue;
      seen.add(file);
      if (isTestKit(file) || isTest(file)) {
        report(rel(file), `reached from the production entry "${subpath}" of ${pkg.name}, but it is test code`);
        continue;
      }
      for (const specifier of specifiers(file)) {
        if (!specifier.startsWith(".")) continue;
        const target = resolveRelative(file, specifier);
        if (target) queue.push(target);
      }
    }
  }

  // 4. the family shape
  if (family !== undefined) {
    for (const name of FAMILY_SHAPE.map((n) => n.replace("<family>", family))) {
      if (!existsSync(path.join(src, name)))
        report(
          rel(path.join(src, name)),
          `missing: every family has ${FAMILY_SHAPE.map((n) => `src/${n}`).join(", ")}, src/tools/*.ts and src/<family>-tools.conformance.test.ts`,
        );
    }
    const tools = path.join(src, "tools");
    if (!existsSync(tools) || !readdirSync(tools).some((n) => n.endsWith(".ts") && !TEST.test(n)))
      report(rel(tools), "missing: a family has one file per tool in src/tools/");
    const conformance = path.join(src, `${family}-tools.conformance.test.ts`);
    const suites = sourceFiles(src).filter((file) => /\bdescribeToolFamily\s*\(/.test(readFileSync(file, "utf8")));
    if (!existsSync(conformance))
      report(rel(conformance), "missing: the family's conformance suite (describeToolFamily from @toolgate/core/testing) runs in this file");
    else if (!suites.includes(conformance) || !specifiers(conformance).includes("@toolgate/core/testing")) {
      report(rel(conformance), "does not run describeToolFamily from @toolgate/core/testing");
    }
    for (const file of suites)
      if (file !== conformance) report(rel(file), `runs describeToolFamily; the family's suite runs once, in src/${family}-tools.conformance.test.ts`);
  }
}

for (const warning of warnings) console.error(`warning: ${warning}`);
if (problems.length > 0) {
  for (const problem of problems) console.error(problem);
  console.error(`check-conventions: ${problems.length} problem${problems.length === 1 ? "" : "s"}`);
  process.exit(1);
}
console.log(
  "check-conventions: every package's imports match its package.json, no family imports another, no emulator or test kit reaches production code, every family has the one shape, no source file is too long",
);
