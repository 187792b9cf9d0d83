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
}

export const processIo: Io = {
  out: (text) => process.stdout.write(text.endsWith("\n") ? text : `${text}\n`),
  err: (text) => process.stderr.write(text.endsWith("\n") ? text : `${text}\n`),
  interactive: Boolean(process.stderr.isTTY),
};

/** A progress line on a terminal, rewritten in place; nothing when piped. */
export function progress(io: Io, label: string): { update(done: number, total?: number): void; end(): void } {
  if (!io.interactive) return { update() {}, end() {} };
  let last = 0;
  return {
    update(done, total) {
      const now = Date.now();
      if (now - last < 100) return;
      last = now;
      process.stderr.write(`\r${label} ${done}${total ? `/${total}` : ""}`);
    },
    end() {
      process.stderr.write("\r\x1b[K");
    },
  };
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
    if (typeof hint === "string") io.err(`hint: ${hint}`);
    if (debug && error.stack) io.err(error.stack);
    return error.code === "config_invalid" || error.code === "journal_failed" ? EXIT.config : EXIT.failed;
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

/** Parse `10m`, `30s`, `2h`, `1500` (ms) into milliseconds. */
export function parseDuration(text: string): number {
  const m = /^(\d+)(ms|s|m|h)?$/.exec(text.trim());
  if (!m) throw new CliFailure(`not a duration: ${text}`, EXIT.usage, "use e.g. 30s, 10m, 2h");
  const n = Number(m[1]);
  const unit = m[2] ?? "ms";
  return n * { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[unit as "ms" | "s" | "m" | "h"];
}
