import { defineProfile, type ProgressEvent } from "@toolgate/core";
import { generateText, stepCountIs, streamText, type TextStreamPart, type ToolSet } from "ai";
import { describe, expect, it } from "vitest";
import { awkwardGate, PROGRESS_SECRET } from "../fixtures/awkward-progress.js";
import { createNotesGate, profiles } from "../fixtures/notes-family.js";
import { answered, done, scripted, toolCall, toolResultsSent } from "./fixtures/scripted-model.js";
import { toAiSdkTools } from "./tools.js";

const base = { principal: "ai-agent", tenant: "tests" };

/**
 * The tool-result parts a streamText run emitted, in order: `progress` (preliminary results whose
 * output is a progress event) and `final` (the results that are not preliminary). The SDK also
 * streams the last value an iterable yielded as one more preliminary result before the final one.
 */
async function toolResultParts(stream: AsyncIterable<TextStreamPart<ToolSet>>) {
  const parts: { output: unknown; preliminary: boolean; toolCallId: string }[] = [];
  const errors: unknown[] = [];
  for await (const part of stream) {
    if (part.type === "tool-result") parts.push({ output: part.output, preliminary: part.preliminary === true, toolCallId: part.toolCallId });
    if (part.type === "tool-error") errors.push(part.error);
  }
  const isProgress = (p: (typeof parts)[number]) => (p.output as { status?: string }).status === "progress";
  // Progress is only ever preliminary, and comes before any ok value.
  const firstOther = parts.findIndex((p) => !isProgress(p));
  if (parts.some((p, i) => isProgress(p) && (!p.preliminary || (firstOther !== -1 && i > firstOther)))) throw new Error("progress out of place");
  return { progress: parts.filter(isProgress), final: parts.filter((p) => !p.preliminary), parts, errors };
}

describe("toAiSdkTools: the gate's progress as preliminary tool results", () => {
  it("streamText streams each progress event as a preliminary result, then the ok result; the model reads only the final one", async () => {
    const { gate, store } = createNotesGate();
    const hostSaw: ProgressEvent[] = [];
    const tools = toAiSdkTools(gate, { ...base, profile: profiles.writer, onProgress: (e) => hostSaw.push(e) });
    const { model, prompts } = scripted(toolCall("c1", "notes.sync_notes", { steps: 3 }), done);
    const result = streamText({ model, tools, prompt: "sync", stopWhen: stepCountIs(2) });
    const { progress, final, parts, errors } = await toolResultParts(result.fullStream);
    expect(errors).toEqual([]);
    expect(progress.map((p) => [p.toolCallId, p.preliminary])).toEqual([
      ["c1", true],
      ["c1", true],
      ["c1", true],
    ]);
    expect(progress[0]!.output).toEqual({ status: "progress", toolId: "notes.sync_notes", message: "step 1 of 3", fraction: 1 / 3 });
    expect(progress[2]!.output).toMatchObject({ message: "step 3 of 3", fraction: 1 });
    expect(final).toEqual([expect.objectContaining({ toolCallId: "c1", output: expect.objectContaining({ status: "ok", output: { pushed: 0 } }) })]);
    expect(parts.at(-1)).toBe(final[0]);
    // The host's own listener still hears every event.
    expect(hostSaw.map((e) => e.message)).toEqual(["step 1 of 3", "step 2 of 3", "step 3 of 3"]);
    const sent = JSON.stringify(toolResultsSent(prompts[1]!));
    expect(sent).toContain("pushed");
    expect(sent).not.toContain("step 1 of 3");
    expect(store.writes).toBe(1);
  });

  it("generateText's tool result is the gate's ok result, unchanged; progress never takes its place", async () => {
    const { gate } = createNotesGate();
    const tools = toAiSdkTools(gate, { ...base, profile: profiles.writer });
    const { model, prompts } = scripted(toolCall("c1", "notes.sync_notes", { steps: 2 }), done);
    const result = await generateText({ model, tools, prompt: "sync", stopWhen: () => prompts.length >= 2 });
    const results = result.steps[0]!.toolResults;
    expect(results).toHaveLength(1);
    expect(results[0]!.output).toMatchObject({ status: "ok", output: { pushed: 0 }, untrusted: false, replayed: false });
    expect(result.steps[0]!.content.filter((p) => p.type === "tool-result")).toHaveLength(1);
  });

  it("the SDK's abort still reaches the tool while its progress streams: it is cancelled and writes nothing", async () => {
    const { gate, store } = createNotesGate();
    const controller = new AbortController();
    const tools = toAiSdkTools(gate, { ...base, profile: profiles.writer });
    const { model } = scripted(toolCall("c1", "notes.sync_notes", { steps: 1, waitForAbort: true }), done);
    const result = streamText({ model, tools, prompt: "sync", abortSignal: controller.signal, onError: () => undefined });
    const seen: string[] = [];
    try {
      for await (const part of result.fullStream) {
        if (part.type === "tool-result" && part.preliminary) {
          seen.push("progress");
          controller.abort();
        } else if (part.type === "tool-result") seen.push("result");
      }
    } catch {
      seen.push("threw");
    }
    await expect.poll(() => store.cancelled).toBe(1);
    expect(seen[0]).toBe("progress");
    expect(seen).not.toContain("result");
    expect(store.writes).toBe(0);
  });

  it("a refused call yields no progress and ends as a tool error with its code", async () => {
    const { gate, store } = createNotesGate();
    const tools = toAiSdkTools(gate, { ...base, profile: profiles.writer });
    const { model } = scripted(toolCall("c1", "notes.sync_notes", { steps: 99 }), done);
    const { parts, errors } = await toolResultParts(streamText({ model, tools, prompt: "sync" }).fullStream);
    expect(parts).toEqual([]);
    expect(errors).toEqual([expect.objectContaining({ name: "GateCallError", result: expect.objectContaining({ code: "invalid_input" }) })]);
    expect(store.writes).toBe(0);
  });

  it("an approved call streams the progress of its run after the grant", async () => {
    const { gate, store } = createNotesGate();
    const { operator } = await gate.authority.operators.add("alice", { role: "approver" }, gate.authority.owner());
    const tools = toAiSdkTools(gate, { ...base, profile: profiles.writer }, { approver: await gate.authority.actingAs(operator.id) });
    const { model } = scripted(toolCall("c1", "notes.add_note", { id: "n1", text: "hello" }), done);
    const first = await generateText({ model, tools, prompt: "save" });
    const { progress, final } = await toolResultParts(streamText({ model, tools, messages: answered("save", first) }).fullStream);
    expect(progress.map((p) => p.output)).toEqual([
      { status: "progress", toolId: "notes.add_note", message: "writing note n1", fraction: 0.5, data: { id: "n1" } },
    ]);
    expect(final.map((p) => p.output)).toEqual([expect.objectContaining({ status: "ok", output: { id: "n1", bytes: 5 } })]);
    expect(store.writes).toBe(1);
  });

  it("progress data that is not JSON is left out, never a crash; a host listener that throws does not stop the framework's", async () => {
    const { gate, profile } = awkwardGate();
    const tools = toAiSdkTools(gate, {
      ...base,
      profile,
      onProgress: () => {
        throw new Error("host listener broke");
      },
    });
    const { model } = scripted(toolCall("c1", "odd.weird_progress", {}), done);
    const { progress, final, errors } = await toolResultParts(streamText({ model, tools, prompt: "go" }).fullStream);
    expect(errors).toEqual([]);
    expect(progress.map((p) => p.output)).toEqual([
      { status: "progress", toolId: "odd.weird_progress", message: "a bigint" },
      { status: "progress", toolId: "odd.weird_progress", message: "a cycle" },
      { status: "progress", toolId: "odd.weird_progress", message: "not finite" },
      { status: "progress", toolId: "odd.weird_progress", message: "plain", fraction: 1, data: { step: 2 } },
    ]);
    expect(final).toEqual([expect.objectContaining({ output: expect.objectContaining({ status: "ok", output: { ok: true } }) })]);
  });

  it("an untrusted tool's progress is marked untrusted, and withheld when it reads like instructions", async () => {
    const { gate, profile } = awkwardGate();
    const tools = toAiSdkTools(gate, { ...base, profile });
    const { model } = scripted(toolCall("c1", "odd.relay", {}), done);
    const parts = await toolResultParts(streamText({ model, tools, prompt: "go" }).fullStream);
    const progress = parts.progress.map((p) => p.output as { message: string; untrusted?: boolean });
    expect(progress).toHaveLength(2);
    expect(progress.every((p) => p.untrusted === true)).toBe(true);
    expect(JSON.stringify(progress)).not.toContain("IGNORE PREVIOUS INSTRUCTIONS");
    expect(progress[1]!.message).toBe("read 3 messages");
  });

  it("a call the approval check already ran (held-output profile, clean output) hands on the progress that run reported", async () => {
    const { gate, runs } = awkwardGate();
    const profile = defineProfile({ name: "odd-hold", allow: ["odd:read"], maxRisk: "low", onInjection: "hold" });
    const tools = toAiSdkTools(gate, { ...base, profile });
    const { model } = scripted(toolCall("c1", "odd.relay", {}), done);
    const { progress, final } = await toolResultParts(streamText({ model, tools, prompt: "go" }).fullStream);
    expect(progress.map((p) => (p.output as { message: string }).message)).toEqual([expect.stringContaining("withheld"), "read 3 messages"]);
    expect(final).toEqual([expect.objectContaining({ output: expect.objectContaining({ status: "ok", untrusted: true }) })]);
    // The body ran once, in the approval check.
    expect(runs.relay).toBe(1);
  });

  it("a secret the tool registered never reaches a preliminary result", async () => {
    const { gate, profile } = awkwardGate();
    const tools = toAiSdkTools(gate, { ...base, profile });
    const { model } = scripted(toolCall("c1", "odd.leaky", {}), done);
    const { progress } = await toolResultParts(streamText({ model, tools, prompt: "go" }).fullStream);
    expect(progress).toHaveLength(1);
    expect(JSON.stringify(progress)).not.toContain(PROGRESS_SECRET);
  });
});
