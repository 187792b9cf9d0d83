/** A command's output kept up to a byte limit per stream, cut on a UTF-8 boundary and marked. */

/** What a truncated stream ends with; `N` is how many bytes were dropped. */
export const TRUNCATION_MARKER = "\n[toolgate: output truncated, N more bytes not shown]\n";

/** One stream's output: the first `max` bytes kept, the rest counted. */
export class OutputCapture {
  private readonly chunks: Buffer[] = [];
  private kept = 0;
  dropped = 0;
  constructor(private readonly max: number) {}

  push(chunk: Buffer): void {
    const room = this.max - this.kept;
    if (room >= chunk.length) {
      this.chunks.push(chunk);
      this.kept += chunk.length;
    } else {
      if (room > 0) this.chunks.push(chunk.subarray(0, room));
      this.kept += Math.max(room, 0);
      this.dropped += chunk.length - Math.max(room, 0);
    }
  }

  /** The kept text; when anything was dropped, without a cut character and ending with the marker. */
  text(): string {
    let bytes = Buffer.concat(this.chunks);
    if (this.dropped > 0) bytes = bytes.subarray(0, completeUtf8Length(bytes));
    const text = bytes.toString("utf8");
    return this.dropped > 0 ? text + TRUNCATION_MARKER.replace("N", String(this.dropped + (this.kept - bytes.length))) : text;
  }
}

/** Length of `bytes` without a UTF-8 sequence cut off at its end. */
function completeUtf8Length(bytes: Buffer): number {
  let i = bytes.length - 1;
  let continuation = 0;
  while (i >= 0 && continuation < 3 && (bytes[i]! & 0xc0) === 0x80) {
    i--;
    continuation++;
  }
  if (i < 0) return bytes.length;
  const lead = bytes[i]!;
  const need = lead >= 0xf0 ? 3 : lead >= 0xe0 ? 2 : lead >= 0xc0 ? 1 : 0;
  return need > continuation ? i : bytes.length;
}
