import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import { eventually, gateOver, startFixture } from "../fixtures/helpers.js";
import type { ToolProcessHandle } from "./options.js";

// The frame decoder and classifier fuzzed end to end: a real tool process (the fixture's "emit"
// tool) writes scripted frames — good ones, then one that breaks the protocol, then more — cut
// into separate writes at random points, and the host reads them through the gate. Pinned seed
// (TOOLGATE_FC_SEED) and a bounded number of runs; each run gets a fresh process.
//
// Properties: gate.invoke answers (never throws); a call whose terminal frame arrived whole before
// the bad frame keeps its result, otherwise it fails with protocol_error; the process is killed and
// restarted; the restarted process answers a good call; the host never crashes (an exception out of
// the stdout handler would fail this file).

const MAX_FRAME = 16 * 1024 * 1024;

type Piece = { frame: string } | { raw: string };
const frame = (text: string): Piece => ({ frame: text });
const raw = (bytes: Buffer): Piece => ({ raw: bytes.toString("base64") });
const header = (n: number): Buffer => {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n >>> 0, 0);
  return b;
};

const hostileKey = fc.constantFrom("__proto__", "constructor", "prototype", "toString", "valueOf", "");
const edgeNumber = fc.constantFrom("-0", "1e308", "-1e308", "5e-324", "123456789012345678901234567890", "9007199254740993");
const jsonText = fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v));

/** Frames a tool may send mid-call: events for the call (duplicate keys, the last one winning), events of unknown kinds, frames of unknown types. */
const goodMidCall: fc.Arbitrary<Piece> = fc.oneof(
  fc.string({ maxLength: 40 }).map((s) => frame(`{"type":"ToolEvent","call_id":"$CALL","event":{"kind":"Status","status":${JSON.stringify(s)}}}`)),
  fc
    .tuple(hostileKey, edgeNumber)
    .map(([k, n]) => frame(`{"type":"ToolEvent","call_id":"nobody","call_id":"$CALL","event":{"kind":"Sparkle",${JSON.stringify(k)}:${n}}}`)),
  fc.tuple(hostileKey, jsonText, edgeNumber).map(([k, v, n]) => frame(`{"type":"FutureThing",${JSON.stringify(k)}:${v},"n":${n},"type":"FutureThing"}`)),
);

/** The call's terminal frame: a result whose output carries hostile keys and edge numbers. */
const terminal: fc.Arbitrary<Piece> = fc
  .tuple(hostileKey, jsonText, edgeNumber)
  .map(([k, v, n]) => frame(`{"type":"ToolResult","call_id":"$CALL","verified":"Unverified","output":{"n":${n},${JSON.stringify(k)}:${v},"done":true}}`));

/** One frame (or header) that breaks the protocol, each of a different kind. */
const bad: fc.Arbitrary<Piece> = fc.oneof(
  fc.constantFrom(MAX_FRAME + 1, 2 ** 31 - 1, 2 ** 32 - 1).map((n) => raw(header(n))),
  fc.constantFrom("", "{", "nul", "[1,]", "{}{}", "1e").map((t) => raw(Buffer.concat([header(Buffer.byteLength(t)), Buffer.from(t)]))),
  fc
    .constantFrom([0xff], [0xc0, 0xaf], [0xed, 0xa0, 0x80], [0x80])
    .map((b) => raw(Buffer.concat([header(b.length + 2), Buffer.from('"'), Buffer.from(b), Buffer.from('"')]))),
  fc
    .integer({ min: 129, max: 20_000 })
    .map((d) => frame(`{"type":"ToolResult","call_id":"$CALL","verified":"Verified","output":${"[".repeat(d)}${"]".repeat(d)}}`)),
  fc.integer({ min: 129, max: 5_000 }).map((d) => frame(`{"type":"FutureThing","x":${'{"a":'.repeat(d)}1${"}".repeat(d)}}`)),
  fc.constant(frame(`{"type":"ToolEvent","call_id":"$CALL","event":[${"0,".repeat(100_000)}0]}`)),
  fc.constantFrom("1e309", "-1e309").map((n) => frame(`{"type":"ToolResult","call_id":"$CALL","verified":"Verified","output":${n}}`)),
  fc.constant(frame('{"type":"ToolResult","call_id":"$CALL","call_id":"nobody","verified":"Verified","output":1}')),
  fc.constantFrom("[1]", '"ToolResult"', "null", '{"type":1}', '{"type":"ToolRegister","tool_process_name":"again","tools":[]}').map(frame),
);

const handles: ToolProcessHandle[] = [];
afterEach(async () => {
  await Promise.all(handles.splice(0).map((h) => h.stop()));
});

async function emitter() {
  const { handle } = await startFixture("emit", {
    // Unsandboxed by explicit choice: this is about the host's reading, and each run starts a process.
    sandbox: "none",
    restart: { maxRestarts: 1, backoffMs: 1 },
    tools: { emit: { effect: "read", risk: "low" }, echo: { effect: "read", risk: "low" } },
  });
  handles.push(handle);
  return { handle, ...gateOver(handle) };
}

const script = (pieces: Piece[], cuts: number[]): string => Buffer.from(JSON.stringify({ pieces, cuts })).toString("base64");

async function afterTheBadFrame(
  handle: ToolProcessHandle,
  gate: Awaited<ReturnType<typeof emitter>>["gate"],
  call: Awaited<ReturnType<typeof emitter>>["call"],
) {
  // The process broke the protocol: killed, restarted once, and the new one answers.
  const status = await eventually(
    () => handle.status(),
    (s) => s.state === "ready" && s.restarts === 1,
  );
  expect(status).toMatchObject({ state: "ready", restarts: 1 });
  expect(await gate.invoke("fx.echo", { text: "after" }, call)).toMatchObject({ status: "ok", output: { output: { text: "after" } } });
}

describe("the host reads a fuzzed frame stream from a real process", () => {
  it("a bad frame is a protocol_error for the call it interrupts (a result that arrived first stands), a restart, and the host lives on", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(goodMidCall, { maxLength: 4 }),
        fc.boolean(),
        bad,
        fc.array(fc.oneof(goodMidCall, terminal), { maxLength: 3 }),
        fc.array(fc.nat(), { maxLength: 12 }),
        async (before, answeredFirst, breaking, after, cuts) => {
          const { handle, gate, call } = await emitter();
          try {
            const pieces = [...before, ...(answeredFirst ? [fc.sample(terminal, { numRuns: 1, seed: cuts.length })[0]!] : []), breaking, ...after];
            const result = await gate.invoke("fx.emit", { script: script(pieces, cuts) }, call);
            if (answeredFirst) expect(result).toMatchObject({ status: "ok", output: { verified: "Unverified", output: { done: true } } });
            else expect(result).toMatchObject({ status: "error", code: "protocol_error", boundary: "effect_failed" });
            expect(Object.prototype).not.toHaveProperty("done");
            await afterTheBadFrame(handle, gate, call);
          } finally {
            await handle.stop();
          }
        },
      ),
      { numRuns: 30 },
    );
  });

  it("a result followed by garbage in the same write keeps its result (it was lost with the framing error before)", async () => {
    const { handle, gate, call } = await emitter();
    const pieces = [frame('{"type":"ToolResult","call_id":"$CALL","verified":"Verified","output":{"kept":true}}'), raw(Buffer.from("garbage, not a frame"))];
    const result = await gate.invoke("fx.emit", { script: script(pieces, []) }, call);
    expect(result).toMatchObject({ status: "ok", output: { verified: "Verified", output: { kept: true } } });
    await afterTheBadFrame(handle, gate, call);
  });

  it("good frames with hostile keys, duplicate keys and edge numbers are read as JSON reads them, and the call completes", async () => {
    const { handle, gate, call } = await emitter();
    const pieces = [
      frame('{"type":"ToolEvent","call_id":"nobody","call_id":"$CALL","event":{"kind":"Status","status":"working","__proto__":{"polluted":1}}}'),
      frame('{"type":"FutureThing","constructor":{"prototype":{"polluted":1}},"n":1e308}'),
      frame(
        '{"type":"ToolResult","call_id":"$CALL","verified":"Verified","output":{"zero":-0,"big":123456789012345678901234567890,"constructor":1,"prototype":2,"x":1,"x":2}}',
      ),
    ];
    const result = await gate.invoke("fx.emit", { script: script(pieces, [3, 50, 51]) }, call);
    expect(result).toMatchObject({ status: "ok", output: { output: { zero: -0, big: 1.2345678901234568e29, constructor: 1, prototype: 2, x: 2 } } });
    expect(Object.prototype).not.toHaveProperty("polluted");
    expect(handle.status()).toMatchObject({ state: "ready", restarts: 0 });
  });
});
