/**
 * `npm run eval`: every scenario under every profile, honest and worst-case, each in a fresh world;
 * prints the table and exits non-zero when a target is missed. `runEval()` returns the same as data.
 */
import { realpathSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { PROFILE_NAMES, runScenario, type Mode, type ProfileName, type RunResult } from "./harness.js";
import { formatReport, summarize, type EvalReport } from "./report.js";
import type { Scenario } from "./scenario.js";
import { SCENARIOS } from "./scenarios/index.js";

export type { EvalReport, ProfileSummary } from "./report.js";
export type { RunResult, CallRecord, ProfileName, Mode } from "./harness.js";
export type * from "./scenario.js";
export { formatReport, summarize } from "./report.js";
export { runScenario, profileFor, PROFILE_NAMES, type RunOptions } from "./harness.js";
export { SCENARIOS } from "./scenarios/index.js";

export interface EvalOptions {
  readonly scenarios?: readonly Scenario[];
  readonly profiles?: readonly ProfileName[];
  /** Runs at once (each in its own world); default 2. */
  readonly concurrency?: number;
}

export async function runEval(options: EvalOptions = {}): Promise<EvalReport> {
  const started = performance.now();
  const scenarios = options.scenarios ?? SCENARIOS;
  const ids = new Set<string>();
  for (const s of scenarios) {
    if (ids.has(s.id)) throw new Error(`two scenarios are called ${s.id}`);
    ids.add(s.id);
  }
  const jobs: { scenario: Scenario; profile: ProfileName; mode: Mode }[] = [];
  for (const scenario of scenarios)
    for (const profile of options.profiles ?? PROFILE_NAMES) for (const mode of ["honest", "worst-case"] as const) jobs.push({ scenario, profile, mode });
  const results: RunResult[] = new Array(jobs.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < jobs.length) {
      const i = next++;
      const job = jobs[i]!;
      results[i] = await runScenario(job.scenario, job.profile, job.mode);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, options.concurrency ?? 2) }, worker));
  return summarize(results, performance.now() - started);
}

const invokedDirectly = process.argv[1] !== undefined && realpathSync(process.argv[1]) === realpathSync(fileURLToPath(import.meta.url));
if (invokedDirectly) {
  const report = await runEval();
  console.log(formatReport(report));
  process.exitCode = report.missed.length === 0 ? 0 : 1;
}
