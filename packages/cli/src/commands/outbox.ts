import { ToolError, type OutboxState } from "@toolgate/core";
import { recoverOutbox, resolveOutboxEntry } from "@toolgate/core/operator";
import { CliFailure, EXIT, parseDuration, table, type Io } from "../output.js";
import { progress } from "../progress.js";
import type { Runtime } from "../runtime.js";

const OUTBOX_STATES: readonly OutboxState[] = ["pending", "completed", "failed", "unknown"];

export async function outboxList(runtime: Runtime, options: { state: string; json: boolean }, io: Io): Promise<number> {
  const states = options.state === "all" ? undefined : (options.state.split(",").map((s) => s.trim()) as OutboxState[]);
  const wrong = states?.find((s) => !OUTBOX_STATES.includes(s));
  if (wrong !== undefined)
    throw new CliFailure(`--state: ${JSON.stringify(wrong)} is not a state`, EXIT.usage, `use ${OUTBOX_STATES.join(", ")} (comma-separated) or all`);
  const entries = await runtime.journal.listOutbox(states ? { states } : {});
  if (options.json)
    io.out(
      JSON.stringify(
        entries.map(({ input: _input, result: _result, ...rest }) => rest),
        null,
        2,
      ),
    );
  else if (entries.length === 0) io.out(`no ${options.state} outbox entries`);
  else
    io.out(
      table(
        ["key", "state", "boundary", "tool", "attempts", "updated"],
        entries.map((e) => [e.key, e.state, e.boundary, e.toolId, String(e.attempts), e.updatedAt]),
      ),
    );
  return EXIT.ok;
}

export async function outboxRecover(runtime: Runtime, options: { olderThan: string; json: boolean }, io: Io): Promise<number> {
  const olderThanMs = parseDuration(options.olderThan);
  const bar = progress(io, "outbox entries recovered");
  // The total is what is pending and old enough now (counted only for a terminal); workers recovering
  // beside this one may take some, so it is an upper bound, and a count past it raises it.
  const cutoff = new Date(Date.now() - olderThanMs).toISOString();
  const total = io.interactive ? (await runtime.journal.listOutbox({ states: ["pending"] })).filter((e) => e.updatedAt < cutoff).length : undefined;
  if (total !== undefined) bar.update(0, total);
  const report = await recoverOutbox(runtime.gate, {
    olderThanMs,
    claimant: `cli-${process.pid}`,
    onEntry: (_entry, done) => bar.update(done, total),
  });
  bar.end();
  if (options.json) io.out(JSON.stringify(report, null, 2));
  else {
    io.out(
      `claimed ${report.claimed}: ${report.replayed} replayed, ${report.unknown} left for an operator, ${report.failed} failed, ${report.skipped} skipped, ${report.tampered} tampered (not replayed)`,
    );
    for (const e of report.entries) io.out(`  ${e.action.padEnd(8)} ${e.toolId} ${e.key}${e.detail ? ` (${e.detail})` : ""}`);
  }
  return report.unknown > 0 || report.tampered > 0 ? EXIT.failed : EXIT.ok;
}

export async function outboxResolve(
  runtime: Runtime,
  key: string,
  options: { applied?: boolean; notApplied?: boolean; operator?: string; note?: string },
  io: Io,
): Promise<number> {
  if (options.operator !== undefined)
    throw new CliFailure(
      "--operator is gone: the CLI resolves as the owner (recorded as owner); operators resolve signed in to the console",
      EXIT.usage,
      `drop --operator: toolgate outbox resolve ${key} --${options.applied ? "applied" : "not-applied"}`,
    );
  if (Boolean(options.applied) === Boolean(options.notApplied))
    throw new CliFailure(
      "say either --applied or --not-applied",
      EXIT.usage,
      `e.g. toolgate outbox resolve ${key} --not-applied --note "not in the sent folder"`,
    );
  const receipt = await resolveOutboxEntry(runtime.gate, key, options.applied ? "applied" : "not_applied", {
    operator: runtime.gate.authority.owner().id,
    ...(options.note ? { note: options.note } : {}),
  }).catch((error: unknown) => {
    if (ToolError.is(error, "not_found", "conflict"))
      throw new CliFailure(error.message, EXIT.failed, "toolgate outbox list --state all shows the entries and their states");
    throw error;
  });
  io.out(`resolved ${key} as ${options.applied ? "applied" : "not applied"} by owner (journal #${receipt.seq})`);
  return EXIT.ok;
}
