import fc from "fast-check";
import { afterEach, describe, expect, it, vi } from "vitest";
import { FrameDecoder, FrameError } from "./codec.js";
import { classifyToolMessage } from "./messages.js";

// Fuzzing the decoder and the classifier in-process, on a pinned seed (TOOLGATE_FC_SEED) and a
// bounded number of runs. The end-to-end half, through a real child process and the gate, is
// host/frames.fuzz.test.ts.

/** A small limit, so the edges around it are cheap to reach. */
const LIMIT = 512;

const header = (n: number): Buffer => {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n >>> 0, 0);
  return b;
};
const framed = (body: Buffer): Buffer => Buffer.concat([header(body.length), body]);

/** One piece of a stream: a frame whose body is good JSON, or one that breaks the framing (and what the decoder must call it). */
type Piece = { readonly bytes: Buffer; readonly bad: undefined | "oversized" | "invalid_utf8" | "invalid_json" };

/** JSON text the decoder must pass through unchanged: objects with hostile keys, edge numbers, duplicates. */
const hostileKey = fc.constantFrom("__proto__", "constructor", "prototype", "type", "call_id", "toString", "hasOwnProperty", "");
const edgeNumberText = fc.constantFrom("-0", "0", "1e308", "-1e308", "5e-324", "123456789012345678901234567890", "9007199254740993", "1E+2");
const goodJsonText: fc.Arbitrary<string> = fc.oneof(
  fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.stringify(v)),
  fc
    .tuple(hostileKey, fc.jsonValue({ maxDepth: 2 }), hostileKey, edgeNumberText)
    .map(([k1, v, k2, n]) => `{${JSON.stringify(k1)}:${JSON.stringify(v)},${JSON.stringify(k2)}:${n},${JSON.stringify(k1)}:${n}}`),
  fc.integer({ min: 1, max: 300 }).map((depth) => `${"[".repeat(depth)}${"]".repeat(depth)}`),
);
const fitting = (text: string): boolean => Buffer.byteLength(text) <= LIMIT;

const goodPiece: fc.Arbitrary<Piece> = goodJsonText.filter(fitting).map((text) => ({ bytes: framed(Buffer.from(text, "utf8")), bad: undefined }));

/** Bytes that are not UTF-8: a lone continuation, an overlong encoding, an encoded surrogate, a truncated sequence, 0xFF. */
const invalidUtf8 = fc
  .tuple(
    fc.string({ maxLength: 20 }),
    fc.constantFrom([0x80], [0xc0, 0xaf], [0xed, 0xa0, 0x80], [0xe2, 0x82], [0xff], [0xf8, 0x88, 0x80, 0x80, 0x80]),
    fc.string({ maxLength: 20 }),
  )
  .map(([a, bad, b]) => Buffer.concat([Buffer.from(`"${a}`), Buffer.from(bad), Buffer.from(`${b}"`)]));

const badPiece: fc.Arbitrary<Piece> = fc.oneof(
  // Headers at the edges: just over the limit, 2^31-1, 2^32-1, and anything above.
  fc.constantFrom(LIMIT + 1, 2 ** 31 - 1, 2 ** 32 - 1).map((n) => ({ bytes: header(n), bad: "oversized" as const })),
  fc.integer({ min: LIMIT + 1, max: 2 ** 32 - 1 }).map((n) => ({ bytes: header(n), bad: "oversized" as const })),
  invalidUtf8.map((body) => ({ bytes: framed(body), bad: "invalid_utf8" as const })),
  // Not JSON: empty (a zero length), one byte, cut JSON, numbers JSON cannot hold, text around a value.
  fc.constantFrom("", "{", "[", "nul", "1e", "-", "{}{}", "[1,]", '{"a":1,}', "'x'", "NaN", "Infinity", "\uFEFF{}").map((t) => ({
    bytes: framed(Buffer.from(t, "utf8")),
    bad: "invalid_json" as const,
  })),
);

/** Split `bytes` at the given cut points (any number, anywhere, duplicates allowed). */
function split(bytes: Buffer, cuts: number[]): Buffer[] {
  const points = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
  const out: Buffer[] = [];
  let from = 0;
  for (const p of [...points, bytes.length]) {
    out.push(bytes.subarray(from, p));
    from = p;
  }
  return out;
}

/** A reference reading of the whole stream at once, written independently of the decoder. */
function reference(pieces: readonly Piece[]): { frames: unknown[]; bad: Piece["bad"] } {
  const frames: unknown[] = [];
  for (const piece of pieces) {
    if (piece.bad) return { frames, bad: piece.bad };
    frames.push(JSON.parse(piece.bytes.subarray(4).toString("utf8")));
  }
  return { frames, bad: undefined };
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe("FrameDecoder under fuzzing", () => {
  it("reads the same frames however the stream is cut, up to the first bad one, which it names; never throws from feed, never holds or allocates past the limit", () => {
    const allocations: number[] = [];
    const real = Buffer.allocUnsafe.bind(Buffer);
    vi.spyOn(Buffer, "allocUnsafe").mockImplementation((n: number) => {
      allocations.push(n);
      return real(n);
    });
    fc.assert(
      fc.property(
        fc.array(goodPiece, { maxLength: 8 }),
        fc.option(badPiece, { nil: undefined }),
        fc.array(goodPiece, { maxLength: 3 }),
        fc.array(fc.nat(), { maxLength: 40 }),
        (before, bad, after, cuts) => {
          const pieces = [...before, ...(bad ? [bad] : []), ...after];
          const expected = reference(pieces);
          const chunks = split(Buffer.concat(pieces.map((p) => p.bytes)), cuts);
          const decoder = new FrameDecoder({ maxFrameBytes: LIMIT });
          const frames: unknown[] = [];
          let error: FrameError | undefined;
          allocations.length = 0; // only the decoder's own, from here
          for (const chunk of chunks) {
            const read = decoder.feed(chunk);
            frames.push(...read.frames);
            error ??= read.error;
            if (read.error) expect(read.error).toBe(error); // stays failed, with the first error
            expect(decoder.pendingBytes).toBeLessThanOrEqual(LIMIT);
          }
          expect(frames).toEqual(expected.frames);
          expect(error?.problem).toBe(expected.bad);
          expect(Math.max(0, ...allocations)).toBeLessThanOrEqual(LIMIT);
          if (!expected.bad) expect(() => decoder.end()).not.toThrow();
        },
      ),
      { numRuns: 400 },
    );
  });

  it("a stream that ends inside a header or a body is truncated, wherever it is cut", () => {
    fc.assert(
      fc.property(fc.array(goodPiece, { maxLength: 3 }), goodPiece, fc.nat(), (whole, last, cut) => {
        const decoder = new FrameDecoder({ maxFrameBytes: LIMIT });
        const keep = 1 + (cut % (last.bytes.length - 1)); // at least one byte, never all of it
        const read = decoder.feed(Buffer.concat([...whole.map((p) => p.bytes), last.bytes.subarray(0, keep)]));
        expect(read.frames).toHaveLength(whole.length);
        expect(() => decoder.end()).toThrow(FrameError);
        expect(
          (() => {
            try {
              decoder.end();
            } catch (e) {
              return (e as FrameError).problem;
            }
            return undefined;
          })(),
        ).toBe("truncated");
      }),
      { numRuns: 200 },
    );
  });

  it("a frame exactly at the limit is read; one byte over is refused from its header alone", () => {
    const body = Buffer.from(JSON.stringify({ type: "x", pad: "" }));
    const exact = Buffer.from(JSON.stringify({ type: "x", pad: "p".repeat(LIMIT - body.length) }));
    expect(exact.length).toBe(LIMIT);
    expect(new FrameDecoder({ maxFrameBytes: LIMIT }).feed(framed(exact)).frames).toHaveLength(1);
    const over = new FrameDecoder({ maxFrameBytes: LIMIT }).feed(header(LIMIT + 1));
    expect(over).toMatchObject({ frames: [], error: { problem: "oversized" } });
  });
});

/** A frame's text as a tool might send it, built as text so duplicate keys and number spellings survive. */
const frameText = fc.oneof(
  goodJsonText,
  fc
    .tuple(fc.constantFrom("ToolResult", "ToolError", "ToolEvent", "RequiresEscalation", "ToolRegister", "Other"), hostileKey, goodJsonText, edgeNumberText)
    .map(
      ([type, key, value, n]) =>
        `{"type":${JSON.stringify(type)},"call_id":"c0","verified":"Verified",${JSON.stringify(key)}:${value},"output":${n},"code":"x","message":"m","reason":"r","event":{"kind":"Status","status":"s"}}`,
    ),
  // Deep nesting and huge arrays under a known type: over the bounds, refused before any schema walks them.
  fc.integer({ min: 129, max: 20_000 }).map((d) => `{"type":"ToolResult","call_id":"c0","verified":"Verified","output":${"[".repeat(d)}${"]".repeat(d)}}`),
  fc.integer({ min: 129, max: 5_000 }).map((d) => `{"type":"Unheard","x":${'{"a":'.repeat(d)}1${"}".repeat(d)}}`),
  fc.constantFrom(100_001, 150_000).map((n) => `{"type":"ToolEvent","call_id":"c0","event":[${"0,".repeat(n - 1)}0]}`),
  // Numbers JSON text holds but a double does not: 1e309 parses to Infinity, which no JSON value is.
  fc.constantFrom("1e309", "-1e309").map((n) => `{"type":"ToolResult","call_id":"c0","verified":"Verified","output":${n}}`),
);

describe("classifyToolMessage under fuzzing", () => {
  it("never throws, answers one of its three kinds, refuses what is over the bounds, and pollutes no prototype", () => {
    fc.assert(
      fc.property(frameText, (text) => {
        const frame: unknown = JSON.parse(text);
        const read = classifyToolMessage(frame);
        expect(["message", "unknown", "malformed"]).toContain(read.kind);
        expect(Object.prototype).not.toHaveProperty("polluted");
        expect(({} as Record<string, unknown>)["type"]).toBeUndefined();
        if (/^\{"type":"\w+","[^"]*":(\[{129}|\{"a":)/.test(text) || /"output":\[{129}/.test(text) || /"event":\[(0,){100000}/.test(text)) {
          expect(read).toMatchObject({
            kind: "malformed",
            problem: expect.stringMatching(/frame holds (nesting deeper than 128 levels|an array of more than 100000 entries)$/),
          });
        }
        if (/"output":-?1e309/.test(text)) expect(read.kind).toBe("malformed");
        if (read.kind === "message") {
          // What the host acts on is what the tool sent: JSON.parse's reading, last duplicate key winning.
          const sent = frame as Record<string, unknown>;
          expect(read.message.type).toBe(sent["type"]);
          if ("call_id" in read.message) expect(read.message.call_id).toBe(sent["call_id"]);
        }
      }),
      { numRuns: 300 },
    );
  });
});
