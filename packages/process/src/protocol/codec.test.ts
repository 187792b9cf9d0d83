import { describe, expect, it } from "vitest";
import { encodeFrame, FrameDecoder, FrameError } from "./codec.js";
import { classifyToolMessage, MAX_FRAME_BYTES } from "./messages.js";

const header = (n: number): Buffer => {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n, 0);
  return b;
};
const raw = (body: Buffer): Buffer => Buffer.concat([header(body.length), body]);

function problemOf(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(FrameError);
    return `${(error as FrameError).problem}: ${(error as FrameError).message}`;
  }
  throw new Error("expected a FrameError");
}

describe("FrameDecoder refuses broken streams", () => {
  it("refuses a header over 16 MiB before any body arrives", () => {
    const decoder = new FrameDecoder();
    expect(problemOf(() => decoder.push(header(MAX_FRAME_BYTES + 1)))).toMatch(/^oversized: frame header announces 16777217 bytes; the limit is 16777216/);
    expect(decoder.pendingBytes).toBe(0);
  });

  it("stays failed after an error", () => {
    const decoder = new FrameDecoder({ maxFrameBytes: 10 });
    problemOf(() => decoder.push(header(11)));
    expect(problemOf(() => decoder.push(encodeFrame({ type: "x" })))).toMatch(/^oversized/);
  });

  it("reports EOF inside a header", () => {
    const decoder = new FrameDecoder();
    decoder.push(Buffer.from([0, 0]));
    expect(problemOf(() => decoder.end())).toBe("truncated: stream ended inside a frame header: 2 of 4 bytes arrived");
  });

  it("reports EOF inside a body", () => {
    const decoder = new FrameDecoder();
    decoder.push(Buffer.concat([header(10), Buffer.from('{"a"')]));
    expect(problemOf(() => decoder.end())).toBe("truncated: stream ended inside a frame body: 4 of 10 bytes arrived");
  });

  it("reports invalid JSON", () => {
    const decoder = new FrameDecoder();
    expect(problemOf(() => decoder.push(raw(Buffer.from("{nope"))))).toMatch(/^invalid_json: frame of 5 bytes is not valid JSON/);
  });

  it("reports invalid UTF-8 rather than replacing it", () => {
    const decoder = new FrameDecoder();
    expect(problemOf(() => decoder.push(raw(Buffer.from([0x22, 0xff, 0xfe, 0x22]))))).toBe("invalid_utf8: frame of 4 bytes is not valid UTF-8");
  });

  it("refuses to encode a message over the limit", () => {
    expect(() => encodeFrame({ type: "x", pad: "a".repeat(64) }, 32)).toThrow(FrameError);
  });
});

describe("FrameDecoder reads streams", () => {
  it("decodes several frames in one chunk and a frame split byte by byte", () => {
    const a = encodeFrame({ type: "A", n: 1 });
    const b = encodeFrame({ type: "B", text: "héllo ✓" });
    const decoder = new FrameDecoder();
    expect(decoder.push(Buffer.concat([a, b]))).toEqual([
      { type: "A", n: 1 },
      { type: "B", text: "héllo ✓" },
    ]);
    const out: unknown[] = [];
    for (const byte of b) out.push(...decoder.push(Buffer.from([byte])));
    expect(out).toEqual([{ type: "B", text: "héllo ✓" }]);
    expect(() => decoder.end()).not.toThrow();
  });

  it("decodes a frame exactly at the limit, across many chunks", () => {
    const limit = 1024 * 1024;
    const body = JSON.stringify({ type: "Big", pad: "" });
    const pad = "x".repeat(limit - body.length);
    const frame = encodeFrame({ type: "Big", pad }, limit);
    expect(frame.length).toBe(limit + 4);
    const decoder = new FrameDecoder({ maxFrameBytes: limit });
    const out: unknown[] = [];
    for (let i = 0; i < frame.length; i += 65_536) out.push(...decoder.push(frame.subarray(i, i + 65_536)));
    expect(out).toHaveLength(1);
    expect((out[0] as { pad: string }).pad.length).toBe(pad.length);
  });
});

describe("classifyToolMessage", () => {
  it("names what is wrong with a malformed known frame", () => {
    expect(classifyToolMessage({ type: "ToolResult", call_id: "c1", verified: "Maybe", output: 1 })).toMatchObject({
      kind: "malformed",
      problem: expect.stringMatching(/^ToolResult frame is malformed: verified/),
    });
    expect(classifyToolMessage([1, 2])).toEqual({ kind: "malformed", problem: "a frame must be a JSON object" });
    expect(classifyToolMessage({ call_id: "c1" })).toEqual({ kind: "malformed", problem: 'a frame needs a string "type"' });
  });

  it("skips unknown frame types and reads known ones", () => {
    expect(classifyToolMessage({ type: "FutureThing", x: 1 })).toEqual({ kind: "unknown", type: "FutureThing" });
    expect(classifyToolMessage({ type: "ToolResult", call_id: "c1", verified: "Verified", output: { n: 1 } })).toEqual({
      kind: "message",
      message: { type: "ToolResult", call_id: "c1", verified: "Verified", output: { n: 1 } },
    });
  });
});
