import type { Io } from "./output.js";

/** A count shown while long work runs: `label n/N` on one terminal line, rewritten in place. */
export interface Progress {
  /** `done` so far, of `total` when it is known. */
  update(done: number, total?: number): void;
  /** Clear the line (the command prints its own summary after). */
  end(): void;
}

const QUIET: Progress = { update() {}, end() {} };

/**
 * Progress on a terminal only: when stderr is not one (piped, redirected, CI) it writes nothing at
 * all, so logs and captured output stay exactly what the command prints. On a terminal it redraws
 * at most every `intervalMs` (default 100 ms), always the first count and the last (`done` reaching
 * `total`), on stderr, so stdout stays clean for pipes.
 */
export function progress(io: Io, label: string, options: { intervalMs?: number; write?: (text: string) => void } = {}): Progress {
  if (!io.interactive) return QUIET;
  const write = options.write ?? ((text: string) => void process.stderr.write(text));
  const interval = options.intervalMs ?? 100;
  let last = -Infinity;
  let drawn = false;
  return {
    update(done, total) {
      const now = Date.now();
      if (now - last < interval && done !== total) return;
      last = now;
      drawn = true;
      write(`\r${label} ${done}${total === undefined ? "" : `/${Math.max(total, done)}`}\x1b[K`);
    },
    end() {
      if (drawn) write("\r\x1b[K");
      drawn = false;
    },
  };
}
