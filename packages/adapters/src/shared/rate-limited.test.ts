import { Agent, run, setTracingDisabled } from "@openai/agents";
import { defineProfile } from "@toolgate/core";
import { generateText } from "ai";
import { describe, expect, it } from "vitest";
import { done, scripted, toolCall, toolResultsSent } from "../ai-sdk/fixtures/scripted-model.js";
import { toAiSdkTools } from "../ai-sdk/tools.js";
import { createNotesGate } from "../fixtures/notes-family.js";
import { functionOutputs, outputText, ScriptedModel } from "../openai/fixtures/scripted-model.js";
import { toOpenAITools } from "../openai/tools.js";
import type { GateCallReport } from "../openai/trace.js";

setTracingDisabled(true);

/** Two word counts a minute per principal: the third call is refused before it runs. */
const metered = defineProfile({
  name: "metered",
  allow: ["notes:read"],
  maxRisk: "low",
  limits: [{ name: "counts", tools: ["notes.word_count"], per: "principal", max: 2, windowMs: 60_000 }],
});
const call = { principal: "looper", tenant: "tests", profile: metered };
const LIMIT_TEXT = /^rate_limited: notes\.word_count: the limit "counts" allows 2 calls per principal every 1 min; the next call fits in /;

describe("a rate limit's refusal through the framework adapters", () => {
  it("AI SDK: the third call is a tool error the model reads in words, and the app gets retryAfterMs", async () => {
    const { gate } = createNotesGate();
    const tools = toAiSdkTools(gate, call);
    const { model, prompts } = scripted(
      toolCall("c1", "notes.word_count", { text: "a" }),
      toolCall("c2", "notes.word_count", { text: "a b" }),
      toolCall("c3", "notes.word_count", { text: "a b c" }),
      done,
    );
    const result = await generateText({ model, tools, prompt: "count", stopWhen: () => prompts.length >= 4 });
    expect(result.steps.map((s) => s.toolResults.length)).toEqual([1, 1, 0, 0]);
    const error = result.steps[2]!.content.find((p) => p.type === "tool-error")!;
    expect(error).toMatchObject({ error: { name: "GateCallError", result: { status: "denied", code: "rate_limited", boundary: "pre_effect_refusal" } } });
    expect((error.error as { result: { retryAfterMs: number } }).result.retryAfterMs).toBeGreaterThan(0);
    const told = toolResultsSent(prompts[3]!).find((p) => p.toolCallId === "c3")!;
    expect(JSON.stringify(told.output)).toMatch(/rate_limited: notes\.word_count: the limit \\"counts\\" allows 2 calls per principal every 1 min/);
  });

  it("OpenAI Agents: the model reads the refusal, and the run item's report carries the code and retryAfterMs", async () => {
    const { gate } = createNotesGate();
    const model = new ScriptedModel([
      { call: { name: "notes__word_count", args: { text: "a" }, callId: "c1" } },
      { call: { name: "notes__word_count", args: { text: "a b" }, callId: "c2" } },
      { call: { name: "notes__word_count", args: { text: "a b c" }, callId: "c3" } },
      { text: "stopped" },
    ]);
    const agent = new Agent({ name: "counter", instructions: "count", model, tools: [...toOpenAITools(gate, call).tools] });
    const result = await run(agent, "count");
    expect(result.finalOutput).toBe("stopped");
    expect(outputText(functionOutputs(model.requests[3]!).find((o) => o.callId === "c3")!)).toMatch(LIMIT_TEXT);
    const reports = result.newItems
      .filter((i) => i.type === "tool_call_output_item")
      .map((i) => (i as { customData?: { toolgate?: GateCallReport } }).customData?.toolgate);
    expect(reports.map((r) => r?.status)).toEqual(["ok", "ok", "denied"]);
    expect(reports[2]).toMatchObject({ code: "rate_limited", retryAfterMs: expect.any(Number) });
    expect(reports[2]!.retryAfterMs).toBeGreaterThan(0);
  });
});
