#!/usr/bin/env node
// Sum every workspace's vitest JSON report into the one line CI reads: "N passed, N failed[, N skipped]".
// A workspace with a test script but no report counts as one failure: its tests did not run.
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";

const root = new URL("..", import.meta.url).pathname;
const workspaces = [...readdirSync(join(root, "packages")).map((name) => join(root, "packages", name)), join(root, "tests")];
let passed = 0;
let failed = 0;
let skipped = 0;
for (const dir of workspaces) {
  const pkgFile = join(dir, "package.json");
  if (!existsSync(pkgFile)) continue;
  const pkg = JSON.parse(readFileSync(pkgFile, "utf8"));
  if (!pkg.scripts?.test) continue;
  const reportFile = join(dir, ".vitest-report.json");
  if (!existsSync(reportFile)) {
    console.error(`no test report from ${pkg.name}: its tests did not run to the end`);
    failed += 1;
    continue;
  }
  const report = JSON.parse(readFileSync(reportFile, "utf8"));
  passed += report.numPassedTests ?? 0;
  failed += report.numFailedTests ?? 0;
  skipped += (report.numPendingTests ?? 0) + (report.numTodoTests ?? 0);
  // A suite that failed to load has no tests counted; count it so it cannot pass silently.
  for (const suite of report.testResults ?? []) {
    if (suite.status === "failed" && (suite.assertionResults ?? []).length === 0) failed += 1;
  }
}
// Checks that are not vitest suites (the operator docs check) add their failures here.
failed += Number(process.env.EXTRA_FAILED ?? 0) || 0;
console.log(`${passed} passed, ${failed} failed${skipped > 0 ? `, ${skipped} skipped` : ""}`);
