import { createRedactor, type Redactor } from "@toolgate/core";
import { plainText } from "./untrusted-text.js";

/** The end of a child's stderr, at most `maxBytes`: always drained, older output dropped. */
export class StderrTail {
  private chunks: Buffer[] = [];
  private bytes = 0;
  /** True when older output was dropped, so the tail starts mid-output. */
  truncated = false;

  constructor(private readonly maxBytes: number) {}

  push(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.bytes += chunk.length;
    while (this.bytes > this.maxBytes && this.chunks.length > 0) {
      this.truncated = true;
      const head = this.chunks[0]!;
      const excess = this.bytes - this.maxBytes;
      if (head.length <= excess) {
        this.chunks.shift();
        this.bytes -= head.length;
      } else {
        this.chunks[0] = Buffer.from(head.subarray(excess));
        this.bytes -= excess;
      }
    }
  }

  text(): string {
    return Buffer.concat(this.chunks).toString("utf8");
  }
}

/** The redactor refuses shorter secrets (redacting "a" everywhere would destroy every output). */
const MIN_SECRET_LENGTH = 6;

/** Characters of a child's stderr quoted in a start-up failure (the end of it, whole lines only). */
export const MAX_STDERR_SHOWN = 2000;

/**
 * Redaction of what the host itself handed the child: every value of the explicit `env` (where
 * a host puts a child's secrets), plus whatever `extra` already holds. A value shorter than the
 * redactor's minimum is not registered (it would blank every output).
 */
export function childSecrets(env: Readonly<Record<string, string>> | undefined, extra?: Pick<Redactor, "redactText">): (text: string) => string {
  const own = createRedactor(Object.values(env ?? {}).filter((v) => typeof v === "string" && v.length >= MIN_SECRET_LENGTH));
  return extra ? (text) => extra.redactText(own.redactText(text)) : (text) => own.redactText(text);
}

/**
 * The end of a child's stderr as one line a human can read in an error: secrets redacted first
 * (over all of it, so a secret is seen whole), then cut to whole lines (a line is never cut: a
 * cut could keep part of a secret the redactor did not see whole), each line made plain, joined
 * with " | ". `truncated` says the text is itself the tail of a longer output (its first line may
 * be partial, so it is dropped). Empty when there is nothing to show.
 */
export function stderrSummary(raw: string, redact: (text: string) => string, truncated = false): string {
  const redacted = redact(raw).replace(/\s+$/u, "");
  let shown = redacted;
  let cut = truncated;
  if (shown.length > MAX_STDERR_SHOWN) {
    shown = shown.slice(-MAX_STDERR_SHOWN);
    cut = true;
  }
  if (cut) {
    const start = shown.search(/\r?\n/u);
    if (start < 0) return `[${redacted.length} characters of stderr without a line break withheld]`;
    shown = shown.slice(start).replace(/^\r?\n/u, "");
  }
  const lines = shown
    .split(/\r?\n/u)
    .map((line) => plainText(line, MAX_STDERR_SHOWN).text.trim())
    .filter((line) => line !== "");
  return lines.join(" | ");
}
