import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { encodeFrame, FrameDecoder, FrameError, FrameWriter } from "./codec.js";
import {
  cancelInvocationSchema,
  classifyHostMessage,
  classifyToolMessage,
  invokeToolSchema,
  toolHelloSchema,
  toolResultSchema,
  toolShutdownSchema,
} from "./messages.js";

// The frames every call carries (ToolResult, InvokeTool) are read without the schema's walk. That
// reading must never accept what the schema refuses, and must hand back what the schema would.

/** Values that are not JSON, or not JSON as the schema reads it: each must send the frame to the schema, which refuses it. */
const notJson = fc.constantFrom<unknown>(
  Infinity,
  -Infinity,
  NaN,
  undefined,
  new Date(0),
  new Map([["a", 1]]),
  { [Symbol("s")]: 1 },
  [1, , 3],
  [undefined],
  () => 1,
  10n,
  Object.create({ inherited: 1 }) as unknown,
  new (class Box {
    a = 1;
  })(),
  { nested: { deep: [Infinity] } },
);

const callIds = fc.oneof(
  fc.string({ minLength: 0, maxLength: 300 }),
  fc.constantFrom<unknown>("", "x".repeat(256), "x".repeat(257), 1, null, undefined, ["c"]),
);
const verifiedStates = fc.oneof(fc.constantFrom<unknown>("Verified", "Unverified", "NotApplicable", "verified", "", null, undefined), fc.string());
const outputs = fc.oneof(fc.jsonValue({ maxDepth: 4 }), notJson, fc.array(notJson, { maxLength: 2 }), fc.dictionary(fc.string(), notJson, { maxKeys: 2 }));

/** The classifier reads `frame` as its schema does: the same message, or malformed in the schema's words. */
function agreesWithSchema(frame: Record<string, unknown>): void {
  const hostSchemas: Record<string, unknown> = {
    InvokeTool: invokeToolSchema,
    ToolHello: toolHelloSchema,
    CancelInvocation: cancelInvocationSchema,
    ToolShutdown: toolShutdownSchema,
  };
  const [schema, classify] =
    frame["type"] === "ToolResult" ? [toolResultSchema, classifyToolMessage] : [hostSchemas[String(frame["type"])], classifyHostMessage];
  const parsed = (schema as typeof toolResultSchema).safeParse(frame);
  const read = (classify as (f: unknown) => unknown)(frame);
  if (parsed.success) expect(read).toEqual({ kind: "message", message: parsed.data });
  else expect(read).toMatchObject({ kind: "malformed", problem: expect.stringMatching(new RegExp(`^${String(frame["type"])} frame is malformed: `)) });
}

describe("the fast reading of hot frames agrees with their schemas", () => {
  it("ToolResult: accepted exactly when the schema accepts it, with the same fields; refused frames keep the schema's wording", () => {
    fc.assert(
      fc.property(callIds, verifiedStates, outputs, fc.boolean(), (call_id, verified, output, withOutput) => {
        const frame: Record<string, unknown> = { type: "ToolResult", call_id, verified, extra: "dropped" };
        if (withOutput) frame["output"] = output;
        agreesWithSchema(frame);
      }),
      { numRuns: 2000 },
    );
  });

  it('ToolResult: an output with a "__proto__" key reads as the schema reads it (its copy drops the key)', () => {
    const frame = JSON.parse('{"type":"ToolResult","call_id":"c1","verified":"Verified","output":{"a":{"__proto__":{"x":1}},"__proto__":{"y":2}}}') as Record<
      string,
      unknown
    >;
    agreesWithSchema(frame);
    expect(JSON.stringify(classifyToolMessage(frame))).not.toContain("__proto__");
  });

  it("ToolResult: numbers JSON cannot hold (1e309) are refused, not passed on as Infinity", () => {
    const decoder = new FrameDecoder();
    const body = Buffer.from('{"type":"ToolResult","call_id":"c","verified":"Verified","output":1e309}');
    const header = Buffer.alloc(4);
    header.writeUInt32BE(body.length, 0);
    const [frame] = decoder.push(Buffer.concat([header, body]));
    expect((frame as { output: unknown }).output).toBe(Infinity);
    expect(classifyToolMessage(frame)).toMatchObject({ kind: "malformed", problem: expect.stringMatching(/^ToolResult frame is malformed: output/) });
    expect(classifyToolMessage({ type: "ToolResult", call_id: "c", verified: "Verified", output: { a: [1, { b: -1e309 }] } })).toMatchObject({
      kind: "malformed",
    });
  });

  it("the fast reading stays within the full bounds, wherever the excess lies: an unknown key nested too deep is refused as before", () => {
    const nest = (depth: number): unknown => JSON.parse(`${"[".repeat(depth)}${"]".repeat(depth)}`);
    const result = { type: "ToolResult", call_id: "c", verified: "Verified", output: 1 };
    for (const [frame, classify] of [
      [result, classifyToolMessage],
      [{ type: "InvokeTool", call_id: "c", tool_name: "t", input: 1, turn_id: "t" }, classifyHostMessage],
    ] as const) {
      expect(classify({ ...frame, extra: nest(200) })).toMatchObject({
        kind: "malformed",
        problem: expect.stringMatching(/frame holds nesting deeper than 128 levels$/),
      });
      expect(classify({ ...frame, extra: Array.from({ length: 100_001 }, () => 0) })).toMatchObject({
        kind: "malformed",
        problem: expect.stringMatching(/frame holds an array of more than 100000 entries$/),
      });
      // Past the fast reading's own bounds but within the full ones: read by the full check, not refused.
      expect(classify({ ...frame, extra: nest(100) })).toMatchObject({ kind: "message" });
    }
    expect(classifyToolMessage({ ...result, output: nest(127) })).toMatchObject({ kind: "message", message: { output: nest(127) } });
    expect(classifyToolMessage({ ...result, output: nest(128) })).toMatchObject({ kind: "malformed" });
  });

  it("InvokeTool: accepted exactly when the schema accepts it, with the same fields", () => {
    const strings = fc.oneof(fc.string(), fc.constantFrom<unknown>(1, null, undefined, true));
    const approvals = fc.constantFrom<unknown>(undefined, true, false, "true", 1, null);
    fc.assert(
      fc.property(
        callIds,
        strings,
        fc.option(fc.jsonValue({ maxDepth: 3 }), { nil: undefined }),
        strings,
        approvals,
        (call_id, tool_name, input, turn_id, escalation_approved) => {
          const frame: Record<string, unknown> = { type: "InvokeTool", call_id, tool_name, turn_id, extra: 1 };
          if (input !== undefined) frame["input"] = input;
          if (escalation_approved !== undefined) frame["escalation_approved"] = escalation_approved;
          agreesWithSchema(frame);
        },
      ),
      { numRuns: 1000 },
    );
  });

  it("the host's control frames: accepted exactly when the schema accepts them", () => {
    const anything = fc.oneof(fc.string({ maxLength: 300 }), fc.constantFrom<unknown>("", "x".repeat(257), 1, null, undefined, true, { a: 1 }, Infinity));
    fc.assert(
      fc.property(fc.constantFrom("ToolHello", "CancelInvocation", "ToolShutdown"), anything, anything, (type, call_id, protocol_version) => {
        agreesWithSchema({ type, call_id, protocol_version, extra: [1] });
      }),
      { numRuns: 600 },
    );
  });

  it("a frame of one direction is not read as the other's", () => {
    expect(classifyHostMessage({ type: "ToolResult", call_id: "c", verified: "Verified", output: 1 })).toEqual({ kind: "unknown", type: "ToolResult" });
    expect(classifyToolMessage({ type: "InvokeTool", call_id: "c", tool_name: "t", input: 1, turn_id: "t" })).toEqual({ kind: "unknown", type: "InvokeTool" });
  });
});

describe("FrameWriter", () => {
  it("frames sent in one tick leave in one write, in order, and decode to what was sent", async () => {
    const writes: Buffer[] = [];
    const writer = new FrameWriter((bytes) => writes.push(bytes));
    const messages = Array.from({ length: 64 }, (_, i) => ({ type: "T", n: i, text: "héllo ✓".repeat(i % 3) }));
    for (const m of messages) writer.send(m);
    writer.sendJson('{"type":"Spliced","output":[1,2]}');
    expect(writes).toHaveLength(0);
    await new Promise((resolve) => process.nextTick(resolve));
    expect(writes).toHaveLength(1);
    expect(writes[0]).toEqual(Buffer.concat([...messages.map((m) => encodeFrame(m)), encodeFrame({ type: "Spliced", output: [1, 2] })]));
    expect(new FrameDecoder().push(writes[0]!)).toEqual([...messages, { type: "Spliced", output: [1, 2] }]);
  });

  it("refuses a frame over the limit or without JSON, queueing nothing, and keeps the others", () => {
    const writes: Buffer[] = [];
    const writer = new FrameWriter((bytes) => writes.push(bytes), 32);
    writer.send({ type: "a" });
    expect(() => writer.send({ type: "x", pad: "a".repeat(64) })).toThrow(FrameError);
    expect(() => writer.sendJson(undefined)).toThrow(TypeError);
    expect(() => writer.send(() => 1)).toThrow(TypeError);
    writer.send({ type: "b" });
    writer.flush();
    expect(new FrameDecoder().push(Buffer.concat(writes))).toEqual([{ type: "a" }, { type: "b" }]);
  });

  it("does not hold more than 1 MiB: a large burst leaves in several writes, in order", () => {
    const writes: Buffer[] = [];
    const writer = new FrameWriter((bytes) => writes.push(bytes));
    const messages = Array.from({ length: 40 }, (_, i) => ({ type: "Big", n: i, pad: "x".repeat(100_000) }));
    for (const m of messages) writer.send(m);
    writer.flush();
    expect(writes.length).toBeGreaterThan(3);
    expect(Math.max(...writes.map((w) => w.length))).toBeLessThanOrEqual(1024 * 1024);
    expect(new FrameDecoder().push(Buffer.concat(writes))).toEqual(messages);
  });
});

describe("FrameDecoder reads in place", () => {
  it("a zero-length body is refused as invalid JSON, wherever the header is cut", () => {
    for (const cut of [0, 1, 2, 3, 4]) {
      const decoder = new FrameDecoder();
      const bytes = Buffer.from([0, 0, 0, 0]);
      const first = decoder.feed(bytes.subarray(0, cut));
      const second = decoder.feed(bytes.subarray(cut));
      expect([first.error, second.error].find(Boolean)?.problem).toBe("invalid_json");
    }
  });

  it("holds only the bytes that arrived for a split body, and frees them once it is read", () => {
    const frame = encodeFrame({ type: "T", pad: "y".repeat(1000) });
    const decoder = new FrameDecoder();
    expect(decoder.push(frame.subarray(0, 2))).toEqual([]);
    expect(decoder.pendingBytes).toBe(2);
    expect(decoder.push(frame.subarray(2, 104))).toEqual([]);
    expect(decoder.pendingBytes).toBe(100);
    expect(decoder.push(frame.subarray(104))).toEqual([{ type: "T", pad: "y".repeat(1000) }]);
    expect(decoder.pendingBytes).toBe(0);
    expect(() => decoder.end()).not.toThrow();
  });
});
