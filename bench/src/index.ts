import { availableParallelism } from "node:os";
import { benchColdStart } from "./cold-start.js";
import { benchGateOverhead } from "./gate-overhead.js";
import { benchJournalThroughput } from "./journal-throughput.js";
import { benchMcpComparison } from "./mcp-comparison.js";
import { benchPostgresFleet } from "./postgres-fleet.js";
import { benchResolveWithinRoot } from "./resolve-within-root.js";
import { loadText, targetSummary } from "./targets.js";

const sections: [string, () => Promise<string[]>][] = [
  ["gate", benchGateOverhead],
  ["paths", benchResolveWithinRoot],
  ["journal", benchJournalThroughput],
  ["fleet", benchPostgresFleet],
  ["mcp", benchMcpComparison],
  ["cold", benchColdStart],
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
for (const [name, section] of sections) {
  if (wanted.size > 0 && !wanted.has(name)) continue;
  console.log("");
  try {
    for (const line of await section()) console.log(line);
  } catch (cause) {
    failed.push(name);
    console.log(`section ${name} failed: ${(cause as Error)?.message ?? String(cause)}`);
  }
}
console.log("");
for (const line of targetSummary()) console.log(line);
if (failed.length > 0) console.log(`sections that failed (their targets are missing above): ${failed.join(", ")}`);
console.log(`bench took ${((Date.now() - started) / 1000).toFixed(0)} s`);
process.exit(failed.length > 0 ? 1 : 0);
