import { availableParallelism } from "node:os";
import { benchColdStart, coldStartTargets } from "./cold-start.js";
import { benchGateOverhead, gateTargets } from "./gate-overhead.js";
import { benchJournalThroughput, journalTargets } from "./journal-throughput.js";
import { benchMcpComparison, mcpTargets } from "./mcp-comparison.js";
import { benchPostgresFleet } from "./postgres-fleet.js";
import { benchProvenance } from "./provenance.js";
import { benchResolveWithinRoot, pathTargets } from "./resolve-within-root.js";
import { loadText, missingTargets, targetSummary, type TargetSpec } from "./targets.js";

/** Name, section, and the targets it records (printed as missing if it fails; fleet records its own). */
const sections: [string, () => Promise<string[]>, Record<string, TargetSpec>][] = [
  ["gate", benchGateOverhead, gateTargets],
  ["paths", benchResolveWithinRoot, pathTargets],
  ["provenance", benchProvenance, {}],
  ["journal", benchJournalThroughput, journalTargets],
  ["fleet", benchPostgresFleet, {}],
  ["mcp", benchMcpComparison, mcpTargets],
  ["cold", benchColdStart, coldStartTargets],
];

// `npm run bench -- gate journal` runs only the named sections.
const wanted = new Set(process.argv.slice(2));
const unknown = [...wanted].filter((name) => !sections.some(([known]) => known === name));
if (unknown.length > 0) {
  console.error(`unknown section ${unknown.join(", ")}; the sections are ${sections.map(([name]) => name).join(", ")}`);
  process.exit(2);
}
const started = Date.now();
console.log(`toolgate bench — node ${process.version}, ${process.platform}/${process.arch}, ${availableParallelism()} cores, load average ${loadText()}`);
const failed: string[] = [];
let running = "";
// Exit code 13: the event loop emptied while a section still awaited something (a promise that only
// an unreferenced handle could settle). Say where, since the section's own lines never print.
process.on("exit", (code) => {
  if (code === 13) console.log(`the bench ended inside section ${running}: it awaited a promise that nothing left in the event loop could settle`);
});
for (const [name, section, targets] of sections) {
  if (wanted.size > 0 && !wanted.has(name)) continue;
  running = name;
  console.log("");
  try {
    for (const line of await section()) console.log(line);
  } catch (cause) {
    failed.push(name);
    console.log(`section ${name} failed: ${(cause as Error)?.message ?? String(cause)}`);
    for (const line of missingTargets(Object.values(targets))) console.log(line);
  }
}
console.log("");
for (const line of targetSummary()) console.log(line);
if (failed.length > 0) console.log(`sections that failed (their targets are shown as NaN, not met): ${failed.join(", ")}`);
console.log(`bench took ${((Date.now() - started) / 1000).toFixed(0)} s`);
process.exit(failed.length > 0 ? 1 : 0);
