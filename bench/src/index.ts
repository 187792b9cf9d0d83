import { benchGateOverhead } from "./gate-overhead.js";
import { benchJournalThroughput } from "./journal-throughput.js";
import { benchMcpComparison } from "./mcp-comparison.js";
import { benchProcessRoundtrip } from "./process-roundtrip.js";
import { benchResolveWithinRoot } from "./resolve-within-root.js";

const sections: [string, () => Promise<string[]>][] = [
  ["gate", benchGateOverhead],
  ["paths", benchResolveWithinRoot],
  ["journal", benchJournalThroughput],
  ["process", benchProcessRoundtrip],
  ["mcp", benchMcpComparison],
];

// `npm run bench -- gate journal` runs only the named sections.
const wanted = new Set(process.argv.slice(2));
console.log(`toolgate bench — node ${process.version}, ${process.platform}/${process.arch}, load ${(await import("node:os")).loadavg()[0]!.toFixed(1)}`);
for (const [name, section] of sections) {
  if (wanted.size > 0 && !wanted.has(name)) continue;
  console.log("");
  for (const line of await section()) console.log(line);
}
process.exit(0);
