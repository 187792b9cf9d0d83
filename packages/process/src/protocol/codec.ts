import { MAX_FRAME_BYTES } from "./frames.js";

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
 *
 * A frame that lies whole in one chunk is read in place (no copy); only a frame split across
 * chunks is gathered, once, when its last byte arrives.
 */
export class FrameDecoder {
  private readonly maxFrameBytes: number;
  private readonly utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
  /** Header bytes of a header split across chunks. */
  private readonly header = Buffer.alloc(HEADER_BYTES);
  private headerBytes = 0;
  /** Pieces of a body split across chunks, and their total length. */
  private parts: Buffer[] = [];
  private partBytes = 0;
  /** Body length of the frame being read, once its header is in. */
  private expected: number | undefined;
  private failed: FrameError | undefined;

  constructor(options: FrameDecoderOptions = {}) {
    this.maxFrameBytes = options.maxFrameBytes ?? MAX_FRAME_BYTES;
  }

  /** Bytes held for a frame not yet complete. */
  get pendingBytes(): number {
    return this.expected === undefined ? this.headerBytes : this.partBytes;
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
    const bytes = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    const length = bytes.length;
    let at = 0;
    try {
      while (at < length) {
        if (this.expected === undefined) {
          let announced: number;
          if (this.headerBytes === 0 && length - at >= HEADER_BYTES) {
            announced = bytes.readUInt32BE(at);
            at += HEADER_BYTES;
          } else {
            const used = Math.min(HEADER_BYTES - this.headerBytes, length - at);
            bytes.copy(this.header, this.headerBytes, at, at + used);
            this.headerBytes += used;
            at += used;
            if (this.headerBytes < HEADER_BYTES) break;
            announced = this.header.readUInt32BE(0);
            this.headerBytes = 0;
          }
          if (announced > this.maxFrameBytes) {
            throw new FrameError("oversized", `frame header announces ${announced} bytes; the limit is ${this.maxFrameBytes} bytes`);
          }
          this.expected = announced;
        }
        const missing = this.expected - this.partBytes;
        if (this.partBytes === 0 && length - at >= missing) {
          // The whole body is in this chunk: read it where it lies.
          frames.push(this.parse(bytes, at, at + missing));
          at += missing;
          this.expected = undefined;
          continue;
        }
        const used = Math.min(missing, length - at);
        if (used > 0) this.parts.push(bytes.subarray(at, at + used));
        this.partBytes += used;
        at += used;
        if (this.partBytes < this.expected) break;
        const body = Buffer.concat(this.parts, this.partBytes);
        this.parts = [];
        this.partBytes = 0;
        this.expected = undefined;
        frames.push(this.parse(body, 0, body.length));
      }
    } catch (error) {
      this.failed = error instanceof FrameError ? error : new FrameError("invalid_json", String(error), { cause: error });
      this.parts = [];
      this.partBytes = 0;
      this.headerBytes = 0;
      this.expected = undefined;
    }
    return { frames, error: this.failed };
  }

  /** The stream ended: throws when it ended inside a header or a body. */
  end(): void {
    if (this.failed) throw this.failed;
    if (this.expected !== undefined) {
      this.failed = new FrameError("truncated", `stream ended inside a frame body: ${this.partBytes} of ${this.expected} bytes arrived`);
    } else if (this.headerBytes > 0) {
      this.failed = new FrameError("truncated", `stream ended inside a frame header: ${this.headerBytes} of ${HEADER_BYTES} bytes arrived`);
    }
    if (this.failed) throw this.failed;
  }

  private parse(bytes: Buffer, start: number, end: number): unknown {
    let text: string;
    try {
      text = this.utf8.decode(bytes.subarray(start, end));
    } catch (cause) {
      throw new FrameError("invalid_utf8", `frame of ${end - start} bytes is not valid UTF-8`, { cause });
    }
    try {
      return JSON.parse(text) as unknown;
    } catch (cause) {
      throw new FrameError("invalid_json", `frame of ${end - start} bytes is not valid JSON: ${(cause as Error).message.slice(0, 200)}`, { cause });
    }
  }
}

/** The body's length in bytes; throws a `FrameError` (`oversized`) over the limit, a `TypeError` when there is no JSON. */
function bodyLength(json: string | undefined, maxFrameBytes: number): number {
  if (json === undefined) throw new TypeError("a frame must be a JSON value");
  const length = Buffer.byteLength(json, "utf8");
  if (length > maxFrameBytes) throw new FrameError("oversized", `frame of ${length} bytes exceeds the limit of ${maxFrameBytes} bytes`);
  return length;
}

/**
 * One frame: 4-byte big-endian length, then the message as UTF-8 JSON. Throws a `FrameError`
 * (`oversized`) for a message whose JSON exceeds the limit, and a `TypeError` for one that is not JSON.
 */
export function encodeFrame(message: unknown, maxFrameBytes: number = MAX_FRAME_BYTES): Buffer {
  const json = JSON.stringify(message);
  const length = bodyLength(json, maxFrameBytes);
  const frame = Buffer.allocUnsafe(HEADER_BYTES + length);
  frame.writeUInt32BE(length, 0);
  frame.write(json!, HEADER_BYTES, length, "utf8");
  return frame;
}

/** Frames queued past this many bytes leave at once rather than wait for the end of the tick. */
const COALESCE_BYTES = 1024 * 1024;

/**
 * Writes frames to a sink, coalescing those sent in one tick into one write, in the order they
 * were sent: a host with 64 calls in flight, or a tool answering them, makes one write where it
 * made 64. Queued frames leave at the next tick, or at `flush()`, or as soon as they pass 1 MiB.
 */
export class FrameWriter {
  private texts: string[] = [];
  private lengths: number[] = [];
  private queued = 0;
  private scheduled = false;

  constructor(
    private readonly sink: (bytes: Buffer) => void,
    private readonly maxFrameBytes: number = MAX_FRAME_BYTES,
  ) {}

  /** Queue a message. Throws like `encodeFrame` (and queues nothing) when it is not JSON or over the limit. */
  send(message: unknown): void {
    this.sendJson(JSON.stringify(message));
  }

  /** Queue a frame whose body is this JSON text, built by the caller from `JSON.stringify` pieces. Throws like `send`. */
  sendJson(json: string | undefined): void {
    const length = bodyLength(json, this.maxFrameBytes);
    if (this.queued > 0 && this.queued + HEADER_BYTES + length > COALESCE_BYTES) this.flush();
    this.texts.push(json!);
    this.lengths.push(length);
    this.queued += HEADER_BYTES + length;
    if (this.queued > COALESCE_BYTES) return this.flush();
    if (!this.scheduled) {
      this.scheduled = true;
      process.nextTick(this.flush);
    }
  }

  /** Write every queued frame now, as one buffer. */
  readonly flush = (): void => {
    this.scheduled = false;
    const { texts, lengths } = this;
    if (texts.length === 0) return;
    const out = Buffer.allocUnsafe(this.queued);
    let at = 0;
    for (let i = 0; i < texts.length; i++) {
      const length = lengths[i]!;
      out.writeUInt32BE(length, at);
      out.write(texts[i]!, at + HEADER_BYTES, length, "utf8");
      at += HEADER_BYTES + length;
    }
    this.texts = [];
    this.lengths = [];
    this.queued = 0;
    this.sink(out);
  };
}
