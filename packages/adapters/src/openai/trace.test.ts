import {
  Agent,
  run,
  setTraceProcessors,
  setTracingDisabled,
  type RunItem,
  type RunStreamEvent,
  type RunToolCallOutputItem,
  type Span,
  type Trace,
  type TracingProcessor,
  withTrace,
} from "@openai/agents";
import { afterAll, beforeEach, describe, expect, it } from "vitest";
import { awkwardGate, PROGRESS_SECRET } from "../fixtures/awkward-progress.js";
import { createNotesGate, profiles } from "../fixtures/notes-family.js";
import { functionOutputs, ScriptedModel, type Step } from "./fixtures/scripted-model.js";
import { agentsTracerProvider } from "./otel-bridge.js";
import { toOpenAITools, type OpenAIToolProgress, type OpenAIToolsOptions } from "./tools.js";
import type { GateCallReport } from "./trace.js";

/** The Agents SDK's tracing, kept in memory: every span that ended, as the SDK serialises it. */
class MemoryProcessor implements TracingProcessor {
  spans: { id: string; trace_id: string; parent_id: string | null; span_data: Record<string, unknown>; error: unknown }[] = [];
  async onTraceStart(_trace: Trace) {}
  async onTraceEnd(_trace: Trace) {}
  async onSpanStart(_span: Span<never>) {}
  async onSpanEnd(span: Span<never>) {
    const json = span.toJSON() as (typeof this.spans)[number] | null;
    if (json) this.spans.push(json);
  }
  async shutdown() {}
  async forceFlush() {}
}
const memory = new MemoryProcessor();
setTraceProcessors([memory]);
setTracingDisabled(false);
afterAll(() => setTracingDisabled(true));
beforeEach(() => (memory.spans = []));

const base = { principal: "openai-agent", tenant: "tests" };
const gateSpans = () => memory.spans.filter((s) => s.span_data.type === "custom" && s.span_data.name === "toolgate.invoke");
const parentOf = (span: { parent_id: string | null }) => memory.spans.find((s) => s.id === span.parent_id);
/** The gate's report on each tool output item of a run, in order. */
const reportsOf = (items: readonly RunItem[]) =>
  items.filter((i) => i.type === "tool_call_output_item").map((i) => (i as RunToolCallOutputItem).customData?.toolgate as GateCallReport | undefined);
const dataOf = (span: { span_data: Record<string, unknown> }) => span.span_data.data as Record<string, unknown>;

function agentWith(gate: ReturnType<typeof createNotesGate>["gate"], steps: Step[], options: OpenAIToolsOptions = {}, profile = profiles.writer) {
  const model = new ScriptedModel(steps);
  const openai = toOpenAITools(gate, { ...base, profile }, options);
  return { model, agent: new Agent({ name: "notes", instructions: "help", model, tools: [...openai.tools] }) };
}

describe("toOpenAITools in the Agents SDK's trace", () => {
  it("each gate call is a custom span under the SDK's function span for that call, with tool id, status, code and call id", async () => {
    const { gate } = createNotesGate();
    const { agent } = agentWith(gate, [
      { call: { name: "notes__sync_notes", args: { steps: 2 }, callId: "c1" } },
      { call: { name: "notes__sync_notes", args: { steps: 99 }, callId: "c2" } },
      { text: "done" },
    ]);
    await run(agent, "sync");
    const spans = gateSpans();
    expect(spans).toHaveLength(2);
    const [ok, refused] = [spans.find((s) => dataOf(s)["gen_ai.tool.call.id"] === "c1")!, spans.find((s) => dataOf(s)["gen_ai.tool.call.id"] === "c2")!];
    for (const span of [ok, refused]) {
      expect(parentOf(span)?.span_data).toMatchObject({ type: "function", name: "notes__sync_notes" });
      expect(span.trace_id).toBe(parentOf(span)!.trace_id);
    }
    expect(dataOf(ok)).toEqual({
      "toolgate.tool.id": "notes.sync_notes",
      "gen_ai.tool.call.id": "c1",
      "toolgate.status": "ok",
      "toolgate.invocation.id": expect.stringMatching(/^inv_/),
      "toolgate.progress.count": 2,
    });
    expect(ok.error).toBeNull();
    expect(dataOf(refused)).toMatchObject({
      "toolgate.status": "error",
      "toolgate.error.code": "invalid_input",
      "toolgate.effect.boundary": "pre_effect_refusal",
    });
    expect(refused.error).toMatchObject({ message: "invalid_input" });
    // Nothing of the call's input or output rides on the span.
    expect(JSON.stringify(spans)).not.toMatch(/"steps"|pushed/);
  });

  it("an approval: the ask and the approved call are each a span, with the request id; tracing disabled records none", async () => {
    const { gate, store } = createNotesGate();
    const { operator } = await gate.authority.operators.add("bob", { role: "approver" }, gate.authority.owner());
    const { agent } = agentWith(gate, [{ call: { name: "notes__add_note", args: { id: "n1", text: "hello" }, callId: "c1" } }, { text: "saved" }], {
      approver: await gate.authority.actingAs(operator.id),
    });
    const first = await run(agent, "save");
    first.state.approve(first.interruptions[0]!);
    await run(agent, first.state);
    expect(store.writes).toBe(1);
    const seen = gateSpans().map((s) => [dataOf(s)["toolgate.status"], typeof dataOf(s)["toolgate.approval.request_id"]]);
    expect(seen).toEqual([
      ["approval_required", "string"],
      ["approval_required", "string"],
      ["ok", "undefined"],
    ]);
    // The ask runs in the SDK's approval check, under the turn; the approved call under its function span.
    expect(gateSpans().map((s) => parentOf(s)?.span_data.type)).toEqual(["custom", "function", "function"]);
    expect(parentOf(gateSpans()[0]!)?.span_data).toMatchObject({ name: "turn" });

    memory.spans = [];
    setTracingDisabled(true);
    try {
      const again = agentWith(gate, [{ call: { name: "notes__sync_notes", args: { steps: 1 }, callId: "c3" } }, { text: "done" }]);
      expect((await run(again.agent, "sync")).finalOutput).toBe("done");
      expect(memory.spans).toEqual([]);
    } finally {
      setTracingDisabled(false);
    }
  });
});

describe("agentsTracerProvider: the gate's own spans, with step timings, in the Agents trace", () => {
  it("the adapter's toolgate.invoke span carries the gate's attributes and events, and one child span per step with its start and end", async () => {
    const { gate } = createNotesGate({ telemetry: { tracerProvider: agentsTracerProvider() } });
    const { agent } = agentWith(gate, [
      { call: { name: "notes__sync_notes", args: { steps: 2 }, callId: "c1" } },
      { call: { name: "notes__sync_notes", args: { steps: 99 }, callId: "c2" } },
      { text: "done" },
    ]);
    await run(agent, "sync");
    const calls = gateSpans();
    expect(calls).toHaveLength(2);
    const ok = calls.find((s) => dataOf(s)["gen_ai.tool.call.id"] === "c1")!;
    expect(parentOf(ok)?.span_data.type).toBe("function");
    expect(dataOf(ok)).toMatchObject({
      "toolgate.tool.id": "notes.sync_notes",
      "toolgate.tool.family": "notes",
      "toolgate.tool.effect": "write",
      "toolgate.status": "ok",
      "gen_ai.operation.name": "execute_tool",
    });
    const steps = memory.spans.filter((s) => s.parent_id === ok.id);
    expect(steps.map((s) => s.span_data.name)).toEqual(expect.arrayContaining(["toolgate.validate", "toolgate.run"]));
    for (const step of steps) {
      const timed = step as unknown as { started_at: string; ended_at: string };
      expect(Date.parse(timed.ended_at)).toBeGreaterThanOrEqual(Date.parse(timed.started_at));
      expect(dataOf(step)["toolgate.step"]).toBe(String(step.span_data.name).replace("toolgate.", ""));
    }
    const runStep = steps.find((s) => s.span_data.name === "toolgate.run")!;
    expect((dataOf(runStep).events as { name: string }[]).map((e) => e.name)).toEqual(["toolgate.progress", "toolgate.progress"]);
    const refused = calls.find((s) => dataOf(s)["gen_ai.tool.call.id"] === "c2")!;
    expect((dataOf(refused).events as { name: string; attributes: Record<string, unknown> }[])[0]).toMatchObject({
      name: "toolgate.refusal",
      attributes: { "toolgate.error.code": "invalid_input", "toolgate.step": "validate" },
    });
    expect(refused.error).toMatchObject({ message: "invalid_input" });
    expect(JSON.stringify(memory.spans.filter((s) => String(s.span_data.name).startsWith("toolgate.")))).not.toMatch(/"steps"|pushed/);
  });

  it("a gate call inside an Agents trace but not through the adapter gets its own spans; outside any trace nothing is recorded", async () => {
    const { gate } = createNotesGate({ telemetry: { tracerProvider: agentsTracerProvider() } });
    const call = { ...base, profile: profiles.writer };
    await withTrace("direct", () => gate.invoke("notes.word_count", { text: "a b c" }, call));
    const [root] = gateSpans();
    expect(dataOf(root!)).toMatchObject({ "toolgate.tool.id": "notes.word_count", "toolgate.status": "ok" });
    expect(memory.spans.filter((s) => s.parent_id === root!.id).length).toBeGreaterThan(0);
    memory.spans = [];
    expect(await gate.invoke("notes.word_count", { text: "a b" }, call)).toMatchObject({ status: "ok", output: { words: 2 } });
    expect(memory.spans).toEqual([]);
  });
});

describe("toOpenAITools: the gate's progress reaches the run", () => {
  it("a streamed run exposes each call's progress on its tool_output item; onProgress gets it live with the call id; the model never sees it", async () => {
    const { gate } = createNotesGate();
    const log: string[] = [];
    const live: OpenAIToolProgress[] = [];
    const { model, agent } = agentWith(gate, [{ call: { name: "notes__sync_notes", args: { steps: 3 }, callId: "c1" } }, { text: "done" }], {
      onProgress: (event) => {
        live.push(event);
        log.push(`progress ${event.message}`);
      },
    });
    const result = await run(agent, "sync", { stream: true });
    const outputs: RunStreamEvent[] = [];
    for await (const event of result) {
      if (event.type === "run_item_stream_event" && event.name === "tool_output") {
        outputs.push(event);
        log.push("tool_output");
      }
    }
    await result.completed;
    expect(result.finalOutput).toBe("done");
    expect(live.map((e) => [e.callId, e.message, e.fraction])).toEqual([
      ["c1", "step 1 of 3", 1 / 3],
      ["c1", "step 2 of 3", 2 / 3],
      ["c1", "step 3 of 3", 1],
    ]);
    expect(log.at(-1)).toBe("tool_output");
    expect(outputs).toHaveLength(1);
    const item = (outputs[0] as Extract<RunStreamEvent, { type: "run_item_stream_event" }>).item as { customData?: Record<string, unknown> };
    expect(item.customData).toEqual({
      toolgate: {
        toolId: "notes.sync_notes",
        invocationId: expect.stringMatching(/^inv_/),
        status: "ok",
        progress: [
          { status: "progress", toolId: "notes.sync_notes", message: "step 1 of 3", fraction: 1 / 3 },
          { status: "progress", toolId: "notes.sync_notes", message: "step 2 of 3", fraction: 2 / 3 },
          { status: "progress", toolId: "notes.sync_notes", message: "step 3 of 3", fraction: 1 },
        ],
      },
    });
    // The same item is in the run's items; the model's next request carries the output, not the progress.
    expect(result.newItems.some((i) => (i as { customData?: unknown }).customData !== undefined)).toBe(true);
    const sent = JSON.stringify(functionOutputs(model.requests[1]!));
    expect(sent).toContain("pushed");
    expect(sent).not.toMatch(/step 1 of 3|toolgate/);
  });

  it("a refused call's item reports its code and no progress", async () => {
    const { gate } = createNotesGate();
    const { agent } = agentWith(gate, [{ call: { name: "notes__sync_notes", args: { steps: 0 }, callId: "c1" } }, { text: "done" }]);
    const result = await run(agent, "sync");
    expect(reportsOf(result.newItems)).toHaveLength(1);
    expect(reportsOf(result.newItems)[0]).toMatchObject({ status: "error", code: "invalid_input", progress: [] });
  });

  it("progress data that is not JSON, a listener that throws, and instructions in an untrusted tool's progress never break the run", async () => {
    const { gate, profile } = awkwardGate();
    const model = new ScriptedModel([
      { call: { name: "odd__weird_progress", args: {}, callId: "c1" } },
      { call: { name: "odd__relay", args: {}, callId: "c2" } },
      { text: "done" },
    ]);
    const openai = toOpenAITools(
      gate,
      {
        ...base,
        profile,
        onProgress: () => {
          throw new Error("host listener broke");
        },
      },
      {
        onProgress: () => {
          throw new Error("app listener broke");
        },
      },
    );
    const result = await run(new Agent({ name: "odd", instructions: "help", model, tools: [...openai.tools] }), "go");
    expect(result.finalOutput).toBe("done");
    const reports = reportsOf(result.newItems);
    expect(reports[0]!.progress.map((p) => [p.message, p.data])).toEqual([
      ["a bigint", undefined],
      ["a cycle", undefined],
      ["not finite", undefined],
      ["plain", { step: 2 }],
    ]);
    expect(reports[1]!.progress.every((p) => p.untrusted === true)).toBe(true);
    expect(JSON.stringify(reports[1])).not.toContain("IGNORE PREVIOUS INSTRUCTIONS");
  });

  it("a secret the tool registered reaches neither the run's item, the live listener, nor any span (with the gate's spans bridged)", async () => {
    const { gate, profile } = awkwardGate({ telemetry: { tracerProvider: agentsTracerProvider() } });
    const live: OpenAIToolProgress[] = [];
    const model = new ScriptedModel([{ call: { name: "odd__leaky", args: {}, callId: "c1" } }, { text: "done" }]);
    const openai = toOpenAITools(gate, { ...base, profile }, { onProgress: (e) => live.push(e) });
    const result = await run(new Agent({ name: "odd", instructions: "help", model, tools: [...openai.tools] }), "go");
    expect(reportsOf(result.newItems)[0]!.progress).toHaveLength(1);
    expect(live).toEqual([expect.objectContaining({ callId: "c1", message: expect.stringMatching(/^using \S/) })]);
    expect(gateSpans()).toHaveLength(1);
    expect(JSON.stringify(memory.spans.filter((s) => s.span_data.name === "toolgate.run"))).toContain("using ");
    expect(JSON.stringify([reportsOf(result.newItems), live, memory.spans])).not.toContain(PROGRESS_SECRET);
  });
});
