import { context, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from "@opentelemetry/sdk-trace-base";
import { generateText, streamText } from "ai";
import { afterAll, beforeEach, describe, expect, it } from "vitest";
import { createNotesGate, profiles } from "../fixtures/notes-family.js";
import { answered, done, scripted, toolCall } from "./fixtures/scripted-model.js";
import { toAiSdkTools } from "./tools.js";

/**
 * The gate's spans join the AI SDK's telemetry trace: with an SDK and a context manager registered
 * (as an app does), `toolgate.invoke` is a child of the SDK's `ai.toolCall` span for that call.
 */
const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
const contextManager = new AsyncLocalStorageContextManager().enable();
context.setGlobalContextManager(contextManager);
trace.setGlobalTracerProvider(provider);
afterAll(async () => {
  trace.disable();
  context.disable();
  await provider.shutdown();
});
beforeEach(() => exporter.reset());

const telemetry = { isEnabled: true, tracer: provider.getTracer("ai-sdk-test") };
const call = { principal: "ai-agent", tenant: "tests" };
const parentOf = (spans: readonly ReadableSpan[], span: ReadableSpan) => spans.find((s) => s.spanContext().spanId === span.parentSpanContext?.spanId);
const named = (spans: readonly ReadableSpan[], name: string) => spans.filter((s) => s.name === name);

describe("toAiSdkTools in the AI SDK's telemetry", () => {
  it("generateText: each call's toolgate.invoke is a child of its ai.toolCall span, in one trace, with the gate's step spans under it", async () => {
    const { gate } = createNotesGate();
    const tools = toAiSdkTools(gate, { ...call, profile: profiles.writer });
    const { model, prompts } = scripted(toolCall("c1", "notes.sync_notes", { steps: 2 }), toolCall("c2", "notes.word_count", { text: "a b" }), done);
    await generateText({ model, tools, prompt: "go", stopWhen: () => prompts.length >= 3, experimental_telemetry: telemetry });
    const spans = exporter.getFinishedSpans();
    const invokes = named(spans, "toolgate.invoke");
    expect(invokes).toHaveLength(2);
    for (const [invoke, callId, toolId] of [
      [invokes.find((s) => s.attributes["toolgate.tool.id"] === "notes.sync_notes")!, "c1", "notes.sync_notes"],
      [invokes.find((s) => s.attributes["toolgate.tool.id"] === "notes.word_count")!, "c2", "notes.word_count"],
    ] as const) {
      const parent = parentOf(spans, invoke);
      expect(parent?.name).toBe("ai.toolCall");
      expect(parent?.attributes["ai.toolCall.id"]).toBe(callId);
      expect(invoke.spanContext().traceId).toBe(named(spans, "ai.generateText")[0]!.spanContext().traceId);
      expect(invoke.attributes).toMatchObject({ "toolgate.tool.id": toolId, "toolgate.status": "ok", "gen_ai.tool.name": toolId });
      const steps = spans.filter((s) => parentOf(spans, s) === invoke).map((s) => s.name);
      expect(steps).toEqual(expect.arrayContaining(["toolgate.validate", "toolgate.run"]));
    }
    // The run span carries the progress the SDK got as preliminary results.
    const run = spans.find(
      (s) => s.name === "toolgate.run" && parentOf(spans, s) === invokes.find((i) => i.attributes["toolgate.tool.id"] === "notes.sync_notes"),
    );
    expect(run?.events.filter((e) => e.name === "toolgate.progress")).toHaveLength(2);
  });

  it("streamText: a refused call's toolgate.invoke sits under its ai.toolCall span with the refusal", async () => {
    const { gate } = createNotesGate();
    const tools = toAiSdkTools(gate, { ...call, profile: profiles.writer });
    const { model } = scripted(toolCall("c9", "notes.sync_notes", { steps: 99 }), done);
    const result = streamText({ model, tools, prompt: "go", experimental_telemetry: telemetry });
    await result.consumeStream();
    await result.steps;
    const spans = exporter.getFinishedSpans();
    const [invoke] = named(spans, "toolgate.invoke");
    expect(parentOf(spans, invoke!)).toMatchObject({ name: "ai.toolCall", attributes: expect.objectContaining({ "ai.toolCall.id": "c9" }) });
    expect(invoke!.attributes).toMatchObject({ "toolgate.status": "error", "toolgate.error.code": "invalid_input" });
  });

  it("an approval: the ask runs in the SDK's approval check (under ai.generateText), the approved call under its ai.toolCall", async () => {
    const { gate } = createNotesGate();
    const { operator } = await gate.authority.operators.add("alice", { role: "approver" }, gate.authority.owner());
    const tools = toAiSdkTools(gate, { ...call, profile: profiles.writer }, { approver: await gate.authority.actingAs(operator.id) });
    const { model } = scripted(toolCall("c1", "notes.add_note", { id: "n1", text: "hello" }), done);
    const first = await generateText({ model, tools, prompt: "save", experimental_telemetry: telemetry });
    await generateText({ model, tools, messages: answered("save", first), experimental_telemetry: telemetry });
    const spans = exporter.getFinishedSpans();
    const seen = named(spans, "toolgate.invoke").map((s) => [s.attributes["toolgate.status"], parentOf(spans, s)?.name]);
    expect(seen).toEqual([
      ["approval_required", "ai.generateText"],
      ["approval_required", "ai.toolCall"],
      ["ok", "ai.toolCall"],
    ]);
    const asked = named(spans, "toolgate.invoke")[0]!;
    expect(asked.events.map((e) => e.name)).toContain("toolgate.approval_requested");
  });
});
