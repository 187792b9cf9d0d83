/** Review of issue 16 through the adapters: a tool call without an id runs once and is counted once. */
import { Agent, run, setTracingDisabled } from "@openai/agents";
import { defineProfile } from "@toolgate/core";
import { generateText } from "ai";
import { describe, expect, it } from "vitest";
import { done, scripted, toolCall } from "../ai-sdk/fixtures/scripted-model.js";
import { toAiSdkTools } from "../ai-sdk/tools.js";
import { createNotesGate, profiles } from "../fixtures/notes-family.js";
import { mailGate } from "../fixtures/review-mail.js";
import { ScriptedModel } from "../openai/fixtures/scripted-model.js";
import { toOpenAITools } from "../openai/tools.js";

setTracingDisabled(true);

/**
 * An untrusted read under a profile that holds flagged output: the adapters' approval check asks
 * the gate (and so runs the call) before `execute`. The read is metered per principal.
 */
function meteredMail() {
  const runs = { count: 0 };
  const gate = mailGate("mail.count_unread", () => ({ n: ++runs.count }));
  const profile = defineProfile({
    name: "held",
    allow: ["mail:read"],
    maxRisk: "low",
    onInjection: "hold",
    limits: [{ name: "reads", tools: ["mail.count_unread"], per: "principal", max: 10, windowMs: 60_000 }],
  });
  const charged = async () => (await gate.journal.readAudit({ limit: 1000 })).filter((e) => e.type === "limit.charged").length;
  return { gate, runs, call: { principal: "p", tenant: "t", profile }, charged };
}

describe("review: a model's tool call with an empty id", () => {
  it("AI SDK: the body runs once and the budget counts it once (the approval check's run was lost and the call ran again)", async () => {
    const m = meteredMail();
    const { model, prompts } = scripted(toolCall("", "mail.count_unread", {}), done);
    const result = await generateText({ model, tools: toAiSdkTools(m.gate, m.call), prompt: "count", stopWhen: () => prompts.length >= 2 });
    expect(result.steps[0]!.toolResults).toHaveLength(1);
    expect(m.runs.count).toBe(1);
    expect(await m.charged()).toBe(1);
  });

  it("OpenAI Agents: the same", async () => {
    const m = meteredMail();
    const { tools } = toOpenAITools(m.gate, m.call);
    const model = new ScriptedModel([{ call: { name: "mail__count_unread", args: {}, callId: "" } }, { text: "done" }]);
    await run(new Agent({ name: "a", model, tools: [...tools] }), "count");
    expect(m.runs.count).toBe(1);
    expect(await m.charged()).toBe(1);
  });

  it("a call without an id that needs a human still runs only on a grant: the model reads approval_required, nothing is written", async () => {
    const { gate, store } = createNotesGate();
    const { model, prompts } = scripted(toolCall("", "notes.add_note", { id: "n1", text: "hi" }), done);
    const result = await generateText({
      model,
      tools: toAiSdkTools(gate, { principal: "p", tenant: "t", profile: profiles.writer }),
      prompt: "save",
      stopWhen: () => prompts.length >= 2,
    });
    const error = result.steps[0]!.content.find((p) => p.type === "tool-error");
    expect(error).toMatchObject({ error: { name: "GateCallError", result: { status: "approval_required" } } });
    expect(store.writes).toBe(0);
    expect(await gate.approvals.list({ status: ["pending"] })).toHaveLength(1);
  });

  it("two calls under one id (a model that repeats ids): each gets its own input's result, each runs and is counted once", async () => {
    const runs: string[] = [];
    const gate = mailGate("mail.count_unread", (input) => {
      runs.push(input.folder ?? "");
      return { folder: input.folder };
    });
    const profile = defineProfile({ name: "held", allow: ["mail:read"], maxRisk: "low", onInjection: "hold" });
    const step = toolCall("c1", "mail.count_unread", { folder: "inbox" });
    step.content = [...step.content, { ...step.content[0]!, input: JSON.stringify({ folder: "spam" }) } as (typeof step.content)[number]];
    const { model, prompts } = scripted(step, done);
    const result = await generateText({
      model,
      tools: toAiSdkTools(gate, { principal: "p", tenant: "t", profile }),
      prompt: "x",
      stopWhen: () => prompts.length >= 2,
    });
    const told = result.steps[0]!.toolResults.map((r) => {
      const { input, output } = r as unknown as { input: { folder: string }; output: { output: { folder: string } } };
      return [input.folder, output.output.folder];
    });
    expect(told).toEqual([
      ["inbox", "inbox"],
      ["spam", "spam"],
    ]);
    expect(runs.sort()).toEqual(["inbox", "spam"]);
  });
});
