import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { encodeFrame, FrameDecoder } from "../protocol/codec.js";
import { MAX_FRAME_BYTES } from "../protocol/messages.js";
import { processTool, serveToolProcess, type ProcessToolContext } from "./serve.js";

/** The SDK served over in-memory streams: what it writes, write by write, and its frames. */
function served(tools: Parameters<typeof serveToolProcess>[0]["tools"]) {
  const input = new PassThrough();
  const output = new PassThrough();
  const errors = new PassThrough();
  const writes: Buffer[] = [];
  const frames: { type: string; call_id?: string; [k: string]: unknown }[] = [];
  const decoder = new FrameDecoder();
  output.on("data", (chunk: Buffer) => {
    writes.push(chunk);
    frames.push(...(decoder.push(chunk) as typeof frames));
  });
  const done = serveToolProcess({ name: "streams", tools, input, output, errors });
  const noted: Buffer[] = [];
  errors.on("data", (chunk: Buffer) => noted.push(chunk));
  const send = (...messages: unknown[]): void => void input.write(Buffer.concat(messages.map((m) => encodeFrame(m))));
  const frame = async (match: (f: (typeof frames)[number]) => boolean) => {
    for (let i = 0; i < 2000; i++) {
      const found = frames.find(match);
      if (found) return found;
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
    throw new Error("no such frame");
  };
  const terminal = (callId: string) => frame((f) => f.call_id === callId && f.type !== "ToolEvent");
  const notes = () => Buffer.concat(noted).toString("utf8");
  return { send, frame, terminal, writes, frames, notes, done, stop: () => send({ type: "ToolShutdown" }) };
}

const invoke = (call_id: string, tool_name: string, input: unknown) => ({ type: "InvokeTool", call_id, tool_name, input, turn_id: "t" });
const pause = () => new Promise((resolve) => setTimeout(resolve, 20));

/** Start call c1 of `tool`, cancel it while it runs, then let its body finish; resolves with the call's terminal frame. */
async function cancelledWhileRunning(s: ReturnType<typeof served>, tool: string, release: () => void) {
  s.send({ type: "ToolHello", protocol_version: "0.1" }, invoke("c1", tool, {}));
  await pause();
  s.send({ type: "CancelInvocation", call_id: "c1" });
  await pause();
  release();
  return s.terminal("c1");
}

describe("serveToolProcess, frame by frame", () => {
  it("a body that never reads ctx.signal is still told of a cancel: its late result becomes cancelled", async () => {
    let release: () => void = () => undefined;
    const blind = processTool({
      name: "blind",
      description: "Never looks at its signal.",
      input: z.object({}),
      handler: () => new Promise((resolve) => (release = () => resolve({ finished: true }))),
    });
    const s = served([blind]);
    expect(await cancelledWhileRunning(s, "blind", () => release())).toEqual({ type: "ToolError", call_id: "c1", code: "cancelled", message: "cancelled" });
    s.stop();
    await s.done;
  });

  it("a body that reads ctx.signal only after the cancel finds it aborted, with the reason", async () => {
    let seen: AbortSignal | undefined;
    let release: () => void = () => undefined;
    const late = processTool({
      name: "late",
      description: "Reads its signal late.",
      input: z.object({}),
      handler: (_input: object, ctx: ProcessToolContext) =>
        new Promise((resolve) => {
          release = () => {
            seen = ctx.signal;
            resolve({ looked: true });
          };
        }),
    });
    const s = served([late]);
    expect(await cancelledWhileRunning(s, "late", () => release())).toMatchObject({ type: "ToolError", code: "cancelled" });
    expect(seen?.aborted).toBe(true);
    expect((seen?.reason as Error).message).toBe("cancelled");
    s.stop();
    await s.done;
  });

  it("a result over the frame limit, or not JSON at all, ends its call with invocation_failed; the process keeps serving", async () => {
    const big = processTool({ name: "big", description: "Too much.", input: z.object({}), handler: () => ({ pad: "x".repeat(MAX_FRAME_BYTES) }) });
    const fn = processTool({ name: "fn", description: "Not JSON.", input: z.object({}), handler: () => () => 1 });
    const wide = processTool({ name: "wide", description: "A BigInt.", input: z.object({}), handler: () => ({ n: 10n }) });
    const ok = processTool({ name: "ok", description: "Fine.", input: z.object({}), handler: () => ({ fine: true, nan: NaN }) });
    const s = served([big, fn, wide, ok]);
    s.send({ type: "ToolHello", protocol_version: "0.1" }, invoke("c1", "big", {}), invoke("c2", "fn", {}), invoke("c3", "wide", {}));
    expect(await s.terminal("c1")).toMatchObject({
      type: "ToolError",
      code: "invocation_failed",
      message: expect.stringMatching(/^the tool's answer could not be sent: frame of \d+ bytes exceeds the limit of 16777216 bytes$/),
    });
    expect(await s.terminal("c2")).toEqual({ type: "ToolError", call_id: "c2", code: "invocation_failed", message: "the tool's result is not a JSON value" });
    expect(await s.terminal("c3")).toMatchObject({ type: "ToolError", code: "invocation_failed", message: expect.stringMatching(/BigInt/) });
    s.send(invoke("c4", "ok", {}));
    expect(await s.terminal("c4")).toEqual({ type: "ToolResult", call_id: "c4", verified: "NotApplicable", output: { fine: true, nan: null } });
    s.stop();
    await s.done;
  });

  it("a frame left to the full check keeps its place: the frames after it wait for it, and all are answered in order", async () => {
    const echo = processTool({ name: "echo", description: "Echo.", input: z.object({ n: z.number() }), handler: ({ n }: { n: number }) => ({ n }) });
    const s = served([echo]);
    s.send(
      { type: "ToolHello", protocol_version: "0.1" },
      { type: "FutureThing", x: 1 },
      invoke("c1", "echo", { n: 1 }),
      { type: "InvokeTool", call_id: "", tool_name: "echo", input: {}, turn_id: "t" },
      invoke("c2", "echo", { n: 2 }),
      { type: "CancelInvocation", call_id: "c2" },
    );
    expect(await s.terminal("c2")).toMatchObject({ type: "ToolResult", output: { n: 2 } });
    expect(s.frames.map((f) => f.type)).toEqual(["ToolRegister", "ToolResult", "ToolResult"]);
    expect(s.frames.filter((f) => f.type === "ToolResult").map((f) => f.call_id)).toEqual(["c1", "c2"]);
    expect(s.notes()).toMatch(/skipped a frame of unknown type FutureThing[\s\S]*InvokeTool frame is malformed: call_id/);
    s.stop();
    await s.done;
  });

  it("answers to calls that arrive together leave together, in one write, in the order they finished", async () => {
    const echo = processTool({ name: "echo", description: "Echo.", input: z.object({ n: z.number() }), handler: ({ n }: { n: number }) => ({ n }) });
    const s = served([echo]);
    s.send({ type: "ToolHello", protocol_version: "0.1" });
    await s.frame((f) => f.type === "ToolRegister");
    const before = s.writes.length;
    s.send(...Array.from({ length: 64 }, (_, i) => invoke(`c${i}`, "echo", { n: i })));
    await s.terminal("c63");
    expect(s.writes.length - before).toBe(1);
    expect(s.frames.filter((f) => f.type === "ToolResult").map((f) => f.call_id)).toEqual(Array.from({ length: 64 }, (_, i) => `c${i}`));
    s.stop();
    await s.done;
  });
});
