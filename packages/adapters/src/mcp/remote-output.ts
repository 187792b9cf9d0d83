/**
 * What an imported server returns, made safe to hand to the gate: its output capped at a size with
 * a truncation marker, and its error text redacted, scanned and fenced.
 *
 * The cap is applied in the tool's body, before the gate redacts. So that a cut never leaves half
 * of a secret behind, text is redacted with the gate's redactor (the call's `ctx.redactText`) before
 * it is cut; the gate then redacts the kept part again. Without a redactor (a caller outside the
 * gate) the cut backs off to the last white space or delimiter within 1 KiB.
 */
import { fenceUntrusted, scanForInjection } from "@toolgate/core";

/** What the body needs of the gate's redactor. */
export interface TextRedactor {
  redactText(text: string): string;
}

/** Default cap on an imported tool's output, in bytes of its JSON. */
export const DEFAULT_MAX_OUTPUT_BYTES = 1024 * 1024;

/** Most characters of a server's error text kept (after redaction). */
export const MAX_REMOTE_ERROR_CHARS = 2000;

/** The text block that ends a capped output; `N` is the cap, `M` the bytes not shown. */
export const OUTPUT_TRUNCATION_MARKER = "[toolgate: output truncated at N bytes; M more bytes not shown]";

export interface RemoteOutput {
  content: Record<string, unknown>[];
  structuredContent?: Record<string, unknown>;
}

const encoder = new TextEncoder();
const byteLength = (text: string): number => Buffer.byteLength(text, "utf8");
/** Room kept for the marker block and the JSON around the kept blocks. */
const MARKER_ROOM = 160;

/**
 * The output within `maxBytes` of JSON: text blocks in order, the one that crosses the cap cut,
 * blocks after it dropped, `structuredContent` dropped (it repeats what the text says), and a last
 * text block {@link OUTPUT_TRUNCATION_MARKER}.
 */
export function capOutput(output: RemoteOutput, maxBytes: number, redactor: TextRedactor | undefined): RemoteOutput {
  const size = byteLength(JSON.stringify(output));
  if (size <= maxBytes) return output;
  let budget = Math.max(0, maxBytes - MARKER_ROOM);
  const content: Record<string, unknown>[] = [];
  for (const block of output.content) {
    if (budget <= 0) break;
    if (block["type"] === "text" && typeof block["text"] === "string") {
      const text = redactor ? redactor.redactText(block["text"]) : block["text"];
      const room = budget - byteLength(JSON.stringify({ ...block, text: "" }));
      if (room <= 0) break;
      const kept = byteLength(text) <= room ? text : cutText(text, room, redactor !== undefined);
      content.push({ ...block, text: kept });
      budget -= byteLength(JSON.stringify({ ...block, text: kept })) + 1;
      if (kept.length < text.length) break;
      continue;
    }
    const bytes = byteLength(JSON.stringify(block)) + 1;
    if (bytes > budget) break;
    content.push(block);
    budget -= bytes;
  }
  const shown = byteLength(JSON.stringify({ content }));
  content.push({ type: "text", text: OUTPUT_TRUNCATION_MARKER.replace("N", String(maxBytes)).replace("M", String(Math.max(0, size - shown))) });
  return { content };
}

/** The longest prefix of `text` within `bytes` of UTF-8, never splitting a character. */
function cutText(text: string, bytes: number, redacted: boolean): string {
  const { read } = encoder.encodeInto(text, new Uint8Array(bytes));
  let end = read ?? 0;
  // A surrogate pair is never split: encodeInto stops before a character that does not fit.
  if (redacted) return text.slice(0, end);
  const floor = Math.max(0, end - 1024);
  let at = end;
  while (at > floor && !/[\s"'<>()[\]{},;]/.test(text[at - 1]!)) at--;
  end = at > floor ? at : floor;
  return text.slice(0, end);
}

/**
 * A server's error text as the gate may show it: redacted (when a redactor is bound) before it is
 * cut, scanned for instructions, and fenced, so it reaches a model as data.
 */
export function fencedRemoteText(toolId: string, text: string, redactor: TextRedactor | undefined): Record<string, unknown> {
  let clean = redactor ? redactor.redactText(text) : text;
  if (clean.length > MAX_REMOTE_ERROR_CHARS) clean = `${cutText(clean, MAX_REMOTE_ERROR_CHARS, redactor !== undefined)}\n[toolgate: error text truncated]`;
  const findings = scanForInjection(clean);
  return {
    remoteError: fenceUntrusted(toolId, clean, findings).text,
    ...(findings.length === 0 ? {} : { remoteErrorFindings: [...new Set(findings.map((f) => f.rule))] }),
  };
}

/** Most characters of a server's progress message passed on. */
export const MAX_REMOTE_PROGRESS_CHARS = 200;

/**
 * A server's progress message as passed to the caller's `onProgress` (which may show it to a model
 * or a human): redacted before it is cut, and withheld when it reads like instructions.
 */
export function remoteProgressText(text: unknown, redactor: TextRedactor | undefined): string {
  if (typeof text !== "string") return "";
  let clean = redactor ? redactor.redactText(text) : text;
  if (clean.length > MAX_REMOTE_PROGRESS_CHARS) clean = `${cutText(clean, MAX_REMOTE_PROGRESS_CHARS, redactor !== undefined)}…`;
  return scanForInjection(clean).length > 0 ? "(the server's progress text was withheld: it reads like instructions)" : clean;
}
