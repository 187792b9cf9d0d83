import { pruneJournal } from "@toolgate/core/operator";
import { CliFailure, EXIT, type Io } from "../output.js";
import type { Runtime } from "../runtime.js";

const DATE = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?(Z|[+-]\d{2}:\d{2}))?$/;

/** A date or time given on the command line, as ISO-8601; a bare date is midnight UTC. */
export function parseBefore(text: string, now = Date.now()): string {
  const ms = DATE.test(text.trim()) ? Date.parse(text.trim()) : NaN;
  if (Number.isNaN(ms)) throw new CliFailure(`not a date: ${text}`, EXIT.usage, "use e.g. 2026-01-31 or 2026-01-31T12:00:00Z");
  if (ms > now) throw new CliFailure(`--before ${text} is in the future`, EXIT.usage, "prune removes the bodies of entries settled before a past date");
  return new Date(ms).toISOString();
}

/**
 * `toolgate journal prune --before DATE`: remove the output bodies of settled outbox entries last
 * written before DATE. Their sealed output hashes stay, so rows and chain still verify; a retry
 * that would replay a pruned effect is refused (`output_pruned`).
 */
export async function journalPrune(runtime: Runtime, options: { before: string; json: boolean }, io: Io): Promise<number> {
  const before = parseBefore(options.before);
  const report = await pruneJournal(runtime.journal, { before });
  if (options.json) io.out(JSON.stringify({ before, pruned: report.pruned, tampered: report.tampered, seq: report.receipt.seq }, null, 2));
  else {
    io.out(`pruned the output bodies of ${report.pruned} entries settled before ${before} (journal #${report.receipt.seq})`);
    if (report.tampered.length > 0) io.err(`${report.tampered.length} entries fail their seal and were left as found: ${report.tampered.join(", ")}`);
  }
  return report.tampered.length > 0 ? EXIT.failed : EXIT.ok;
}
