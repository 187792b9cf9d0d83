#!/usr/bin/env node
// Mutation check for the security-critical checks: delete (or neutralise) each guarded check in
// turn, in a scratch copy of the repository, run the tests that claim to guard it, and fail if any
// mutation survives (the tests still pass without the check).
//
// The mutations are listed beside the code they guard, in `mutations.json` or `*.mutations.json`
// files under packages/*/src and tests/src:
//
//   { "mutations": [ {
//       "id": "approval-binds-tenant",                  unique across every list
//       "check": "a grant is refused for another tenant", what the check promises
//       "file": "grant-check.ts",                       relative to the list
//       "find": "…",                                    exact text; must occur exactly once
//       "replace": "…",                                 the check deleted or neutralised
//       "tests": ["memory.test.ts", "../gate/steps/approve.test.ts"]   relative to the list
//   } ] }
//
// A `find` that does not occur exactly once is an error (a list gone stale after a refactor must
// be re-pointed, never silently pass); so is a listed file that no longer exists. When tests move
// to another file, re-point `tests` too. Before any mutation, the listed test files are run once
// unmutated: a failing baseline is an error, since a mutation could not be told apart from it.
// When a listed test lies in another workspace, the mutated workspace's dist/ is rebuilt first
// (child processes run built code); every dist/ is put back after each mutation.
//
// Usage: node scripts/mutation-check.mjs [--only <id>[,<id>…]]… [--list] [--verbose] [--keep]
//   --only     run only these mutations (repeatable)
//   --list     print the mutations and exit
//   --verbose  name the failing test that caught each mutation (a mutated run stops at its first
//              failure); show the output of failed steps
//   --keep     keep the scratch copy (its path is printed)
//
// Exit code: 0 when every mutation was caught; 1 when one survived, a list is stale or invalid,
// the baseline failed, or a mutated package did not build or its tests did not run.
import { spawn } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, renameSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
/** Longest a single vitest or tsc run may take before it is killed (a mutation can make code hang). */
const STEP_TIMEOUT_MS = 10 * 60_000;
/** Never copied into the scratch tree: dependencies are linked, the rest is local state. */
const SKIP_NAMES = new Set(["node_modules", ".git", ".turbo", ".tmp", ".toolgate", "coverage", ".vitest-report.json"]);

// ---------- arguments ----------

const args = process.argv.slice(2);
const only = new Set();
let listOnly = false;
let verbose = false;
let keep = false;
for (let i = 0; i < args.length; i++) {
  const arg = args[i];
  if (arg === "--only") {
    const value = args[++i];
    if (!value) usage("--only needs a mutation id");
    for (const id of value.split(",")) if (id.trim()) only.add(id.trim());
  } else if (arg.startsWith("--only=")) {
    for (const id of arg.slice("--only=".length).split(",")) if (id.trim()) only.add(id.trim());
  } else if (arg === "--list") listOnly = true;
  else if (arg === "--verbose") verbose = true;
  else if (arg === "--keep") keep = true;
  else usage(`unknown argument ${arg}`);
}

function usage(problem) {
  console.error(`mutation-check: ${problem}`);
  console.error("usage: node scripts/mutation-check.mjs [--only <id>[,<id>…]]… [--list] [--verbose] [--keep]");
  process.exit(2);
}

// ---------- the lists ----------

function findLists() {
  const roots = [...readdirSync(path.join(ROOT, "packages")).map((name) => path.join(ROOT, "packages", name, "src")), path.join(ROOT, "tests", "src")];
  const found = [];
  const walk = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (SKIP_NAMES.has(entry.name)) continue;
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.isFile() && (entry.name === "mutations.json" || entry.name.endsWith(".mutations.json"))) found.push(full);
    }
  };
  for (const dir of roots) if (existsSync(dir)) walk(dir);
  return found.sort();
}

/** The workspace (packages/<name> or tests) a repository-relative path belongs to. */
function workspaceOf(rel) {
  const parts = rel.split("/");
  if (parts[0] === "packages" && parts.length > 2) return `packages/${parts[1]}`;
  if (parts[0] === "tests") return "tests";
  return undefined;
}

const rel = (abs) => path.relative(ROOT, abs).split(path.sep).join("/");

/** Read every list; return the mutations and the problems found (stale snippets among them). */
function loadMutations(lists) {
  const mutations = [];
  const problems = [];
  const seen = new Map();
  for (const list of lists) {
    const where = rel(list);
    let parsed;
    try {
      parsed = JSON.parse(readFileSync(list, "utf8"));
    } catch (error) {
      problems.push({ id: where, message: `${where} is not valid JSON: ${error.message}` });
      continue;
    }
    if (!parsed || !Array.isArray(parsed.mutations)) {
      problems.push({ id: where, message: `${where} has no "mutations" array` });
      continue;
    }
    parsed.mutations.forEach((m, index) => {
      const id = typeof m?.id === "string" && m.id ? m.id : `${where}#${index}`;
      const bad = (message) => problems.push({ id, message: `${id} (${where}): ${message}` });
      for (const field of ["id", "check", "file", "find"]) {
        if (typeof m?.[field] !== "string" || m[field] === "") return bad(`"${field}" must be a non-empty string`);
      }
      if (typeof m.replace !== "string") return bad(`"replace" must be a string (empty to delete the snippet)`);
      if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(m.id)) return bad(`"id" may hold only letters, digits, ".", "_" and "-"`);
      if (!Array.isArray(m.tests) || m.tests.length === 0 || m.tests.some((t) => typeof t !== "string" || !t.endsWith(".test.ts"))) {
        return bad(`"tests" must list test files (*.test.ts)`);
      }
      if (seen.has(m.id)) return bad(`id already used in ${seen.get(m.id)}`);
      seen.set(m.id, where);
      if (m.find === m.replace) return bad(`"replace" is the same as "find": nothing is mutated`);
      const file = rel(path.resolve(path.dirname(list), m.file));
      if (!existsSync(path.join(ROOT, file))) return bad(`file ${file} does not exist`);
      const workspace = workspaceOf(file);
      if (!workspace) return bad(`file ${file} is not inside a workspace`);
      const tests = m.tests.map((t) => rel(path.resolve(path.dirname(list), t)));
      for (const t of tests) {
        if (!existsSync(path.join(ROOT, t))) return bad(`test file ${t} does not exist`);
        if (!workspaceOf(t)) return bad(`test file ${t} is not inside a workspace`);
      }
      const count = occurrences(readFileSync(path.join(ROOT, file), "utf8"), m.find);
      if (count !== 1) {
        return problems.push({
          id: m.id,
          stale: true,
          message: `STALE     ${m.id}  (its "find" occurs ${count} times in ${file}, expected exactly once: re-point ${where})`,
        });
      }
      mutations.push({ id: m.id, check: m.check, list: where, file, workspace, find: m.find, replace: m.replace, tests });
    });
  }
  return { mutations, problems };
}

function occurrences(text, snippet) {
  let count = 0;
  for (let at = text.indexOf(snippet); at !== -1; at = text.indexOf(snippet, at + 1)) count++;
  return count;
}

// ---------- the scratch copy ----------

/**
 * Copy the working tree (sources and built dist/, not dependencies) to a scratch directory, and
 * give it a node_modules of its own: every installed dependency linked to the real one by absolute
 * path, but @toolgate/* linked (relatively, as npm does) to the scratch copy's own packages, so a
 * test that imports another package gets the scratch copy's build.
 */
function makeScratch() {
  const scratch = mkdtempSync(path.join(tmpdir(), "toolgate-mutants-"));
  for (const entry of readdirSync(ROOT)) {
    if (SKIP_NAMES.has(entry)) continue;
    cpSync(path.join(ROOT, entry), path.join(scratch, entry), {
      recursive: true,
      verbatimSymlinks: true,
      filter: (source) => !SKIP_NAMES.has(path.basename(source)),
    });
  }
  const realModules = path.join(ROOT, "node_modules");
  const modules = path.join(scratch, "node_modules");
  mkdirSync(modules);
  for (const entry of readdirSync(realModules)) {
    // Local caches (vite's bundled configs, npm's lockfile copy) stay local to each tree.
    if (entry.startsWith(".") && entry !== ".bin") continue;
    if (entry === "@toolgate") {
      mkdirSync(path.join(modules, entry));
      for (const name of readdirSync(path.join(realModules, entry))) {
        const link = path.join(realModules, entry, name);
        const target = readlinkSync(link);
        if (path.isAbsolute(target)) throw new Error(`node_modules/@toolgate/${name} is an absolute link; expected a workspace link`);
        symlinkSync(target, path.join(modules, entry, name));
      }
      continue;
    }
    symlinkSync(path.join(realModules, entry), path.join(modules, entry));
  }
  return scratch;
}

// ---------- running things ----------

const requireFromRoot = createRequire(path.join(ROOT, "package.json"));
const VITEST = path.join(path.dirname(requireFromRoot.resolve("vitest/package.json")), "vitest.mjs");
const TSC = requireFromRoot.resolve("typescript/bin/tsc");

/** The step running now (its own process group) and the scratch copy: cleaned up on Ctrl-C too. */
let current;
let scratchDir;
for (const signal of ["SIGINT", "SIGTERM"]) {
  process.on(signal, () => {
    if (current) killGroup(current);
    if (scratchDir && !keep) rmSync(scratchDir, { recursive: true, force: true });
    console.log(`mutation check: stopped by ${signal}`);
    process.exit(130);
  });
}

function killGroup(child) {
  try {
    process.kill(-child.pid, "SIGKILL");
  } catch {
    // already gone
  }
}

/** Run node with `argv` in `cwd`; resolve with the exit code (null when killed) and the output. */
function run(argv, cwd) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, argv, {
      cwd,
      env: { ...process.env, NO_COLOR: "1", FORCE_COLOR: "0" },
      stdio: ["ignore", "pipe", "pipe"],
      detached: true,
    });
    current = child;
    let output = "";
    const collect = (chunk) => {
      output += chunk;
      if (output.length > 2_000_000) output = output.slice(-1_000_000);
    };
    child.stdout.on("data", collect);
    child.stderr.on("data", collect);
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup(child);
    }, STEP_TIMEOUT_MS);
    child.on("close", (code) => {
      clearTimeout(timer);
      current = undefined;
      // Whatever the tests left running in the group (a hung child of a mutated tool) goes too.
      killGroup(child);
      resolve({ code: timedOut ? null : code, timedOut, output });
    });
  });
}

/**
 * Run `tests` (repository-relative) with vitest, one run per workspace. With `bail`, a mutated run
 * stops at its first failing test: one is enough to call the mutation caught.
 */
async function runTests(scratch, tests, label, bail = false) {
  const byWorkspace = new Map();
  for (const t of tests) {
    const ws = workspaceOf(t);
    if (!byWorkspace.has(ws)) byWorkspace.set(ws, []);
    byWorkspace.get(ws).push(t.slice(ws.length + 1));
  }
  const result = { failedRun: false, failing: 0, total: 0, failingNames: [], timedOut: false, output: "" };
  let n = 0;
  for (const [ws, files] of byWorkspace) {
    const report = path.join(scratch, `.mutation-report-${label}-${n++}.json`);
    rmSync(report, { force: true });
    const { code, timedOut, output } = await run(
      [VITEST, "run", ...(bail ? ["--bail=1"] : []), "--reporter=dot", "--reporter=json", `--outputFile.json=${report}`, ...new Set(files)],
      path.join(scratch, ws),
    );
    result.output += `--- ${ws}: vitest run ${[...new Set(files)].join(" ")}\n${output}\n`;
    if (code !== 0) result.failedRun = true;
    if (timedOut) result.timedOut = true;
    if (existsSync(report)) {
      const json = JSON.parse(readFileSync(report, "utf8"));
      result.total += json.numTotalTests ?? 0;
      result.failing += json.numFailedTests ?? 0;
      for (const suite of json.testResults ?? []) {
        for (const a of suite.assertionResults ?? []) if (a.status === "failed") result.failingNames.push(`${ws}: ${a.fullName}`);
        if (suite.status === "failed" && (suite.assertionResults ?? []).length === 0) {
          result.failingNames.push(`${ws}: ${path.relative(path.join(scratch, ws), suite.name)} did not load`);
        }
      }
    }
    if (bail && result.failing > 0) break;
  }
  return result;
}

/** Build a workspace of the scratch copy (tests elsewhere import its dist/). */
async function build(scratch, workspace) {
  return run([TSC, "-p", "tsconfig.build.json"], path.join(scratch, workspace));
}

const seconds = (ms) => (ms / 1000).toFixed(1);
const tail = (text, lines = 40) => text.trimEnd().split("\n").slice(-lines).join("\n");

// ---------- main ----------

async function main() {
  const started = Date.now();
  const lists = findLists();
  const { mutations: all, problems } = loadMutations(lists);
  const unknownOnly = [...only].filter((id) => !all.some((m) => m.id === id) && !problems.some((p) => p.id === id));
  if (unknownOnly.length > 0) usage(`no mutation named ${unknownOnly.join(", ")}`);
  const mutations = only.size === 0 ? all : all.filter((m) => only.has(m.id));
  const shownProblems = only.size === 0 ? problems : problems.filter((p) => only.has(p.id));

  if (listOnly) {
    for (const m of all) console.log(`${m.id}  ${m.file}  — ${m.check}\n    tests: ${m.tests.join(" ")}`);
    for (const p of problems) console.log(p.message);
    process.exit(problems.length > 0 ? 1 : 0);
  }

  console.log(`mutation check: ${mutations.length} mutation${mutations.length === 1 ? "" : "s"} from ${lists.length} list${lists.length === 1 ? "" : "s"}`);
  for (const p of shownProblems) console.log(p.stale ? p.message : `INVALID   ${p.message}`);

  const scratch = (scratchDir = makeScratch());
  if (keep) console.log(`scratch copy: ${scratch}`);
  let caught = 0;
  const survived = [];
  const stale = shownProblems.map((p) => p.id);
  const broken = [];
  let baselineFailed = false;
  try {
    // The baseline: every listed test file passes unmutated, or no verdict below means anything.
    const baselineTests = [...new Set(mutations.flatMap((m) => m.tests))];
    if (baselineTests.length > 0) {
      const t0 = Date.now();
      const baseline = await runTests(scratch, baselineTests, "baseline");
      if (baseline.failedRun) {
        console.log(
          `BASELINE FAILED  (${baseline.failing} failing of ${baseline.total} tests, ${seconds(Date.now() - t0)} s): the listed tests fail without any mutation`,
        );
        for (const name of baseline.failingNames) console.log(`    ${name}`);
        console.log(tail(baseline.output));
        baselineFailed = true;
        return;
      }
      console.log(`baseline  ${baseline.total} tests in ${baselineTests.length} files pass unmutated  (${seconds(Date.now() - t0)} s)`);
    }

    for (const m of mutations) {
      const t0 = Date.now();
      const target = path.join(scratch, m.file);
      const original = readFileSync(target, "utf8");
      const count = occurrences(original, m.find);
      if (count !== 1) {
        console.log(`STALE     ${m.id}  (its "find" occurs ${count} times in ${m.file} of the scratch copy)`);
        stale.push(m.id);
        continue;
      }
      // Tests in another workspace import this one's dist/; a workspace may also rebuild its own
      // dist/ while testing. Either way the pristine dist/ is put back afterwards.
      const dist = path.join(scratch, m.workspace, "dist");
      const pristine = path.join(scratch, m.workspace, "dist.pristine");
      const hasDist = existsSync(dist);
      if (hasDist) {
        renameSync(dist, pristine);
        cpSync(pristine, dist, { recursive: true, verbatimSymlinks: true });
      }
      try {
        writeFileSync(
          target,
          original.replace(m.find, () => m.replace),
        );
        if (hasDist && m.tests.some((t) => workspaceOf(t) !== m.workspace)) {
          const built = await build(scratch, m.workspace);
          if (built.code !== 0) {
            console.log(`ERROR     ${m.id}  (the mutated ${m.workspace} does not build: make the mutation type-check)`);
            if (verbose) console.log(tail(built.output));
            broken.push(m.id);
            continue;
          }
        }
        const result = await runTests(scratch, m.tests, m.id, true);
        const took = `${seconds(Date.now() - t0)} s`;
        if (result.failedRun && result.failingNames.length === 0 && !result.timedOut) {
          // No test failed: the run broke before a verdict (a build in a global setup, a config).
          console.log(`ERROR     ${m.id}  (the tests did not run to a verdict, ${took}: make the mutation compile and load)`);
          if (verbose) console.log(tail(result.output));
          broken.push(m.id);
        } else if (result.failedRun) {
          caught++;
          const what =
            result.failing > 0
              ? `${result.failing} failing test${result.failing === 1 ? "" : "s"}`
              : result.timedOut
                ? "timed out"
                : "a test file did not load";
          console.log(`caught    ${m.id}  (${what}, ${took})`);
          if (verbose) for (const name of result.failingNames) console.log(`    ${name}`);
        } else {
          survived.push(m);
          console.log(`SURVIVED  ${m.id}  (${result.total} tests pass without: ${m.check}; ${took})`);
        }
      } finally {
        writeFileSync(target, original);
        if (hasDist) {
          rmSync(dist, { recursive: true, force: true });
          renameSync(pristine, dist);
        }
      }
    }
  } finally {
    if (!keep) rmSync(scratch, { recursive: true, force: true });
    const parts = [`${caught} caught`, `${survived.length} survived`];
    if (stale.length > 0) parts.push(`${stale.length} stale or invalid`);
    if (broken.length > 0) parts.push(`${broken.length} did not build or run`);
    if (baselineFailed) parts.push("none run: the baseline failed");
    console.log(`mutation check: ${parts.join(", ")} of ${mutations.length + shownProblems.length} mutations (${seconds(Date.now() - started)} s)`);
    if (survived.length > 0) console.log(`survived: ${survived.map((m) => `${m.id} (${m.list})`).join(", ")}`);
    process.exitCode = survived.length > 0 || stale.length > 0 || broken.length > 0 || baselineFailed ? 1 : 0;
  }
}

await main();
