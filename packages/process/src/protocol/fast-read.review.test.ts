/**
 * Review: the hot frames' fast reading (messages.ts) against the reading at 6bc6d8a, rebuilt here
 * from the same schemas (bounds walk, then the schema): frames made as JSON text, as a hostile
 * child would write them, decoded through FrameDecoder split at random byte boundaries and
 * coalesced, must classify identically (same message, key for key, or malformed / unknown).
 */
import { jsonBoundsProblem } from "@toolgate/core/boundary";
import fc from "fast-check";
import type { z } from "zod";
import { describe, expect, it } from "vitest";
import { FrameDecoder } from "./codec.js";
import {
  cancelInvocationSchema,
  classifyHostMessage,
  classifyToolMessage,
  invokeToolSchema,
  requiresEscalationSchema,
  toolErrorSchema,
  toolEventSchema,
  toolHelloSchema,
  toolRegisterSchema,
  toolResultSchema,
  toolShutdownSchema,
} from "./messages.js";

const toolSchemas: Record<string, z.ZodType> = {
  ToolRegister: toolRegisterSchema,
  ToolEvent: toolEventSchema,
  ToolResult: toolResultSchema,
  ToolError: toolErrorSchema,
  RequiresEscalation: requiresEscalationSchema,
};
const hostSchemas: Record<string, z.ZodType> = {
  ToolHello: toolHelloSchema,
  InvokeTool: invokeToolSchema,
  CancelInvocation: cancelInvocationSchema,
  ToolShutdown: toolShutdownSchema,
};

/** classify() as it was at 6bc6d8a. */
function before(schemas: Record<string, z.ZodType>, frame: unknown): unknown {
  if (frame === null || typeof frame !== "object" || Array.isArray(frame)) return { kind: "malformed", problem: "a frame must be a JSON object" };
  const type = (frame as { type?: unknown }).type;
  if (typeof type !== "string") return { kind: "malformed", problem: 'a frame needs a string "type"' };
  const outOfBounds = jsonBoundsProblem(frame);
  if (outOfBounds) return { kind: "malformed", problem: `${type.slice(0, 64)} frame holds ${outOfBounds}` };
  const schema = Object.hasOwn(schemas, type) ? schemas[type] : undefined;
  if (!schema) return { kind: "unknown", type: type.slice(0, 64) };
  const parsed = schema.safeParse(frame);
  if (!parsed.success) {
    const issues = parsed.error.issues.slice(0, 5).map((i) => `${i.path.map(String).join(".") || "(root)"}: ${i.message}`);
    return { kind: "malformed", problem: `${type} frame is malformed: ${issues.join("; ")}` };
  }
  return { kind: "message", message: parsed.data };
}

const frameOf = (json: string): Buffer => {
  const body = Buffer.from(json, "utf8");
  const header = Buffer.alloc(4);
  header.writeUInt32BE(body.length, 0);
  return Buffer.concat([header, body]);
};

/** Decode `bytes` fed in pieces cut at `cuts`. */
function decode(bytes: Buffer, cuts: number[]): unknown[] {
  const decoder = new FrameDecoder();
  const out: unknown[] = [];
  let from = 0;
  for (const cut of [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b).concat(bytes.length)) {
    const { frames, error } = decoder.feed(bytes.subarray(from, cut));
    if (error) throw error;
    out.push(...frames);
    from = cut;
  }
  decoder.end();
  return out;
}

const deep = (n: number, leaf: string): string => "[".repeat(n) + leaf + "]".repeat(n);
/** Field texts as a child could write them: valid, wrong in type, or at a bound. */
const callIdText = fc.constantFrom('"c1"', '""', `"${"x".repeat(256)}"`, `"${"x".repeat(257)}"`, "1", "null", '["c"]', '"\\ud800"', '"\\u0000"');
const verifiedText = fc.constantFrom('"Verified"', '"Unverified"', '"NotApplicable"', '"verified"', '"toString"', '"__proto__"', "null", "true");
const valueText = fc.oneof(
  fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)),
  fc.constantFrom(
    "1e309",
    "-1e309",
    "-0",
    "1e-400",
    "123456789012345678901234567890",
    '{"__proto__":{"polluted":true}}',
    '{"__proto__":1e309}',
    '{"constructor":{"prototype":{"x":1}}}',
    '{"a":1,"a":1e309}',
    '{"a":1e309,"a":1}',
    '"\\ud800\\udfff\\udc00"',
    deep(63, "1"),
    deep(64, "1"),
    deep(65, "1"),
    deep(127, "1"),
    deep(128, "1"),
    deep(64, "1e309"),
    `[${Array.from({ length: 10_001 }, () => "0").join(",")}]`,
    `[${Array.from({ length: 10_001 }, () => "1e309").join(",")}]`,
    `{${Array.from({ length: 10_001 }, (_, i) => `"k${i}":0`).join(",")}}`,
    `"${"y".repeat(1024 * 1024 + 1)}"`,
  ),
);
const optionalField = (name: string, value: fc.Arbitrary<string>) =>
  fc.option(
    value.map((v) => `,"${name}":${v}`),
    { nil: "" },
  );
const boolText = fc.constantFrom("true", "false", "null", '"true"', "0");

const toolResult = fc
  .tuple(optionalField("call_id", callIdText), optionalField("verified", verifiedText), optionalField("output", valueText), optionalField("extra", valueText))
  .map((f) => `{"type":"ToolResult"${f.join("")}}`);
const invokeTool = fc
  .tuple(
    optionalField("call_id", callIdText),
    optionalField("tool_name", fc.constantFrom('"t"', '""', "1", "null")),
    optionalField("input", valueText),
    optionalField("turn_id", fc.constantFrom('"turn"', "1", "null")),
    optionalField("escalation_approved", boolText),
    optionalField("__proto__", valueText),
  )
  .map((f) => `{"type":"InvokeTool"${f.join("")}}`);

describe("review: fast reading of hot frames classifies as 6bc6d8a did", () => {
  it("ToolResult and InvokeTool written as JSON text, decoded in random pieces, alone and coalesced", () => {
    fc.assert(
      fc.property(fc.array(fc.oneof(toolResult, invokeTool), { minLength: 1, maxLength: 4 }), fc.array(fc.nat(), { maxLength: 6 }), (texts, cuts) => {
        const bytes = Buffer.concat(texts.map(frameOf));
        const frames = decode(bytes, cuts);
        expect(frames).toHaveLength(texts.length);
        for (const frame of frames) {
          const host = (frame as { type: string }).type === "InvokeTool";
          const now = host ? classifyHostMessage(frame) : classifyToolMessage(frame);
          // As JSON: own keys (a `__proto__` key included) and values, in order (toStrictEqual trips on an own `constructor` key).
          expect(JSON.stringify(now)).toBe(JSON.stringify(before(host ? hostSchemas : toolSchemas, frame)));
        }
      }),
      { numRuns: 300 },
    );
  });

  it("a hot frame split at every byte boundary reads the same as whole", () => {
    const text = '{"type":"ToolResult","call_id":"c\\u00e9","verified":"Verified","output":{"a":["ü",1.5,null,{"__proto__":{"b":true}}]}}';
    const bytes = Buffer.concat([frameOf(text), frameOf(text.replace("1.5", "1e309"))]);
    const whole = decode(bytes, []).map((f) => classifyToolMessage(f));
    expect(whole[0]).toMatchObject({ kind: "message" });
    expect(whole[1]).toMatchObject({ kind: "malformed" });
    for (let a = 0; a <= bytes.length; a++) expect(decode(bytes, [a, (a * 7) % bytes.length]).map((f) => classifyToolMessage(f))).toStrictEqual(whole);
  });

  it("a frame of a hot type that the schema refuses is refused whatever its size", () => {
    for (const output of [deep(129, "1"), deep(64, "1e309"), `{"a":{"b":1e309}}`]) {
      const [frame] = decode(frameOf(`{"type":"ToolResult","call_id":"c","verified":"Verified","output":${output}}`), []);
      expect(classifyToolMessage(frame)).toMatchObject({ kind: "malformed" });
      expect(JSON.stringify(classifyToolMessage(frame))).toBe(JSON.stringify(before(toolSchemas, frame)));
    }
  });
});

describe("review: what the fast reading accepted that the schema refused or changed", () => {
  it("InvokeTool without an input was refused (input is required); it still is", () => {
    const [frame] = decode(frameOf('{"type":"InvokeTool","call_id":"c1","tool_name":"t","turn_id":"turn"}'), []);
    expect(classifyHostMessage(frame)).toMatchObject({ kind: "malformed" });
  });

  it("a ToolResult output's __proto__ key was dropped by the schema's copy; the message handed on has none", () => {
    const [frame] = decode(frameOf('{"type":"ToolResult","call_id":"c1","verified":"Verified","output":{"a":{"__proto__":{"x":1}},"__proto__":{"y":2}}}'), []);
    const read = classifyToolMessage(frame);
    expect(JSON.stringify(read)).toBe(JSON.stringify(before(toolSchemas, frame)));
    expect(JSON.stringify(read)).not.toContain("__proto__");
  });
});
