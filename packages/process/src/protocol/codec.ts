import { MAX_FRAME_BYTES } from "./messages.js";

/** Why a byte stream is not a valid sequence of frames. */
export const FRAME_PROBLEMS = ["oversized", "truncated", "invalid_utf8", "invalid_json"] as const;
export type FrameProblem = (typeof FRAME_PROBLEMS)[number];

/**
 * The stream broke the framing. After one, a decoder refuses everything: the stream cannot be
 * resynchronised, so the peer must be treated as broken.
 */
export class FrameError extends Error {
  override readonly name = "FrameError";
  constructor(
    readonly problem: FrameProblem,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

export interface FrameDecoderOptions {
  /** Largest body accepted, in bytes; default 16 MiB. A larger header is refused before any body is buffered. */
  readonly maxFrameBytes?: number;
}

const HEADER_BYTES = 4;

/**
 * Streaming decoder: feed it chunks as they arrive (partial frames, several frames per chunk) and
 * get back each complete frame's parsed JSON. Call `end()` at EOF: a partial header or body then
 * throws. Every failure is a `FrameError`, and the decoder stays failed.
 */
export class FrameDecoder {
  private readonly maxFrameBytes: number;
  private readonly utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
  private chunks: Buffer[] = [];
  private buffered = 0;
  /** Body length of the frame being read, once its header is in. */
  private expected: number | undefined;
  private failed: FrameError | undefined;

  constructor(options: FrameDecoderOptions = {}) {
    this.maxFrameBytes = options.maxFrameBytes ?? MAX_FRAME_BYTES;
  }

  /** Bytes held for a frame not yet complete. */
  get pendingBytes(): number {
    return this.buffered;
  }

  /** Add bytes; returns the frames they complete, in order. Throws the framing failure, if any (frames before it in this chunk are then lost: use `feed`). */
  push(chunk: Uint8Array): unknown[] {
    const { frames, error } = this.feed(chunk);
    if (error) throw error;
    return frames;
  }

  /**
   * Add bytes; never throws. Returns the frames they complete, in order, up to the first framing
   * failure, and that failure. Once failed, every later call returns no frames and the same error.
   * Holds at most one incomplete frame: fewer than 4 header bytes, or a body of at most `maxFrameBytes`.
   */
  feed(chunk: Uint8Array): { frames: unknown[]; error: FrameError | undefined } {
    const frames: unknown[] = [];
    if (this.failed) return { frames, error: this.failed };
    if (chunk.length > 0) {
      this.chunks.push(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength));
      this.buffered += chunk.length;
    }
    try {
      for (;;) {
        if (this.expected === undefined) {
          if (this.buffered < HEADER_BYTES) break;
          const length = this.take(HEADER_BYTES).readUInt32BE(0);
          if (length > this.maxFrameBytes) {
            throw new FrameError("oversized", `frame header announces ${length} bytes; the limit is ${this.maxFrameBytes} bytes`);
          }
          this.expected = length;
        }
        if (this.buffered < this.expected) break;
        const body = this.take(this.expected);
        this.expected = undefined;
        frames.push(this.parse(body));
      }
    } catch (error) {
      this.failed = error instanceof FrameError ? error : new FrameError("invalid_json", String(error), { cause: error });
      this.chunks = [];
      this.buffered = 0;
      this.expected = undefined;
    }
    return { frames, error: this.failed };
  }

  /** The stream ended: throws when it ended inside a header or a body. */
  end(): void {
    if (this.failed) throw this.failed;
    if (this.expected !== undefined) {
      this.failed = new FrameError("truncated", `stream ended inside a frame body: ${this.buffered} of ${this.expected} bytes arrived`);
    } else if (this.buffered > 0) {
      this.failed = new FrameError("truncated", `stream ended inside a frame header: ${this.buffered} of ${HEADER_BYTES} bytes arrived`);
    }
    if (this.failed) throw this.failed;
  }

  private parse(body: Buffer): unknown {
    let text: string;
    try {
      text = this.utf8.decode(body);
    } catch (cause) {
      throw new FrameError("invalid_utf8", `frame of ${body.length} bytes is not valid UTF-8`, { cause });
    }
    try {
      return JSON.parse(text) as unknown;
    } catch (cause) {
      throw new FrameError("invalid_json", `frame of ${body.length} bytes is not valid JSON: ${(cause as Error).message.slice(0, 200)}`, { cause });
    }
  }

  /** Remove exactly `n` buffered bytes from the front. */
  private take(n: number): Buffer {
    const first = this.chunks[0];
    if (first && first.length >= n) {
      const out = first.subarray(0, n);
      if (first.length === n) this.chunks.shift();
      else this.chunks[0] = first.subarray(n);
      this.buffered -= n;
      return out;
    }
    const out = Buffer.allocUnsafe(n);
    let filled = 0;
    while (filled < n) {
      const head = this.chunks[0]!;
      const used = Math.min(head.length, n - filled);
      head.copy(out, filled, 0, used);
      filled += used;
      if (used === head.length) this.chunks.shift();
      else this.chunks[0] = head.subarray(used);
    }
    this.buffered -= n;
    return out;
  }
}

/**
 * One frame: 4-byte big-endian length, then the message as UTF-8 JSON. Throws a `FrameError`
 * (`oversized`) for a message whose JSON exceeds the limit, and a `TypeError` for one that is not JSON.
 */
export function encodeFrame(message: unknown, maxFrameBytes: number = MAX_FRAME_BYTES): Buffer {
  const json = JSON.stringify(message);
  if (json === undefined) throw new TypeError("a frame must be a JSON value");
  const bodyLength = Buffer.byteLength(json, "utf8");
  if (bodyLength > maxFrameBytes) throw new FrameError("oversized", `frame of ${bodyLength} bytes exceeds the limit of ${maxFrameBytes} bytes`);
  const frame = Buffer.allocUnsafe(HEADER_BYTES + bodyLength);
  frame.writeUInt32BE(bodyLength, 0);
  frame.write(json, HEADER_BYTES, "utf8");
  return frame;
}
