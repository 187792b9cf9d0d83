import { InvalidArgumentError } from "commander";
import { ToolError } from "@toolgate/core";

/** Exit codes: documented in the README and `toolgate --help`. */
export const EXIT = {
  ok: 0,
  /** The command ran and found a failure: a refused call, drifted docs, a broken chain. */
  failed: 1,
  /** Bad flags or arguments. */
  usage: 2,
  /** The composition file, journal or keys could not be loaded. */
  config: 3,
  /** A call waits for a human's approval. */
  approval: 4,
} as const;

/** A failure the CLI reports as one line and a hint, with the exit code it ends with. */
export class CliFailure extends Error {
  constructor(
    message: string,
    readonly exitCode: number,
    readonly hint?: string,
  ) {
    super(message);
  }
}

export interface Io {
  readonly out: (text: string) => void;
  readonly err: (text: string) => void;
  /** True when stderr is a terminal: progress is shown only then. */
  readonly interactive: boolean;
  /** Ask the person at the terminal (a confirmation); absent: the terminal's stdin, when there is one. */
  readonly ask?: (question: string) => Promise<string | undefined>;
}

export const processIo: Io = {
  out: (text) => process.stdout.write(text.endsWith("\n") ? text : `${text}\n`),
  err: (text) => process.stderr.write(text.endsWith("\n") ? text : `${text}\n`),
  interactive: Boolean(process.stderr.isTTY),
};

export { progress, type Progress } from "./progress.js";

/**
 * What to do next after a refusal or failure with this code: which command. `tool` is the tool
 * the call named, when there was one.
 */
export function hintFor(code: string, tool?: string): string | undefined {
  const hints: Record<string, string> = {
    tool_disabled: `an operator stopped it: toolgate kill-switch list shows why; toolgate kill-switch off ${tool ?? "TARGET"} turns it back on`,
    unknown_tool: "toolgate inventory lists the tools",
    permission_denied: "toolgate inventory --profile P shows what a profile reaches",
    risk_exceeded: "toolgate inventory --profile P shows what a profile reaches",
    consent_required: "toolgate inventory --profile P shows what a profile reaches",
    egress_denied: "toolgate inventory --profile P shows what a profile reaches",
    approval_denied: "toolgate approvals list --status denied shows who denied it and why",
    approval_expired: "run the call again for a new request, then toolgate approvals approve ID",
    approval_consumed: "the grant was used; run the call again for a new request",
    approval_invalid: "run the call again for a new request, then toolgate approvals approve ID",
    approval_unknown: "toolgate approvals list shows the requests",
    edit_refused:
      "the tool or the profile does not let that field be edited, or the request cannot be edited: toolgate approvals show ID lists the editable fields; deny it with a reason instead",
    approver_invalid: "the CLI decides as the owner; operators sign in to toolgate console",
    approver_forbidden: "toolgate operators list shows each operator's role and scope",
    operator_unknown: "toolgate operators list shows them",
    operator_disabled: "toolgate operators enable NAME (a removed operator is gone: add a new one)",
    rate_limited: "a profile's limit: toolgate budgets shows what it has used and when the next call fits (a provider's own rate limit: wait, then retry)",
    effect_state_unknown: "toolgate outbox list, then toolgate outbox resolve KEY --applied|--not-applied",
    journal_tampered: "toolgate audit verify names what was changed",
    journal_failed: "check the journal in the composition file (journal:), then run again",
    connector_unavailable: "toolgate connections add --id ID --provider P --file token.json",
    connector_reauth_required: "toolgate connections status, then add the connection again",
    config_invalid: "fix the composition file (toolgate.config.*) or the setting named above, then run the command again",
  };
  return hints[code];
}

/** Print the failure as one line (plus a hint); the stack only with --debug. */
export function reportFailure(io: Io, error: unknown, debug: boolean): number {
  if (error instanceof CliFailure) {
    io.err(`toolgate: ${error.message}`);
    if (error.hint) io.err(`hint: ${error.hint}`);
    return error.exitCode;
  }
  if (error instanceof ToolError) {
    io.err(`toolgate: ${error.message} (${error.code})`);
    const hint = error.details?.["hint"];
    const next = typeof hint === "string" ? hint : hintFor(error.code);
    if (next) io.err(`hint: ${next}`);
    if (debug && error.stack) io.err(error.stack);
    return ["config_invalid", "journal_failed", "profile_invalid"].includes(error.code) ? EXIT.config : EXIT.failed;
  }
  const message = error instanceof Error ? error.message : String(error);
  io.err(`toolgate: ${message}`);
  if (debug && error instanceof Error && error.stack) io.err(error.stack);
  else io.err("hint: run again with --debug for details");
  return EXIT.failed;
}

/** A plain table: columns padded to their widest cell. */
export function table(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: readonly string[]) => cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!))).join("  ");
  return [line(headers), line(widths.map((w) => "-".repeat(w))), ...rows.map(line)].join("\n");
}

/** A list as JSON (`--json`), a line saying it is empty, or a table of one row per item. */
export function printList<T>(
  io: Io,
  items: readonly T[],
  how: { json: boolean; empty: string; headers: readonly string[]; row: (item: T) => readonly string[] },
): number {
  if (how.json) io.out(JSON.stringify(items, null, 2));
  else io.out(items.length === 0 ? how.empty : table(how.headers, items.map(how.row)));
  return EXIT.ok;
}

/** An option's value that must be a whole number (0 or more): anything else is refused as a usage error (exit 2). */
export function wholeNumber(text: string): number {
  if (!/^\d{1,9}$/.test(text.trim())) throw new InvalidArgumentError(`must be a whole number (0 or more), not ${JSON.stringify(text)}`);
  return Number(text.trim());
}

/** Parse `10m`, `30s`, `2h`, `1500` (ms) into milliseconds. */
export function parseDuration(text: string): number {
  const m = /^(\d+)(ms|s|m|h)?$/.exec(text.trim());
  if (!m) throw new CliFailure(`not a duration: ${text}`, EXIT.usage, "use e.g. 30s, 10m, 2h");
  const n = Number(m[1]);
  const unit = m[2] ?? "ms";
  return n * { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[unit as "ms" | "s" | "m" | "h"];
}
