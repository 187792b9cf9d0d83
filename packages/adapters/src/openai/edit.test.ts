/**
 * Approve with edits through the OpenAI Agents SDK's interruptions: `state.approve(item)` carries
 * no arguments and needs none — the run executes the model's original call and the gate runs the
 * operator's edit, whose notice is the function output the model reads. The app's approver, who saw
 * the input as asked, never approves a version an operator edited.
 */
import { Agent, run, RunState, setTracingDisabled } from "@openai/agents";
import type { CallOptions } from "@toolgate/core";
import { describe, expect, it } from "vitest";
import { EDIT_NOTICE as NOTICE, operatorEdits, twoApprovers, twoPersonWriter } from "../fixtures/edits.js";
import { createNotesGate, profiles } from "../fixtures/notes-family.js";
import { functionOutputs, outputText, ScriptedModel } from "./fixtures/scripted-model.js";
import { toOpenAITools, type OpenAIToolsOptions } from "./tools.js";

setTracingDisabled(true);

type NotesGate = ReturnType<typeof createNotesGate>["gate"];
const call: CallOptions = { principal: "openai-agent", tenant: "tests", profile: profiles.writer };
const twoPerson: CallOptions = { ...call, profile: twoPersonWriter };
const addNote = { call: { name: "notes__add_note", args: { id: "n1", text: "hello" }, callId: "c1" } };
const agentOf = (gate: NotesGate, model: ScriptedModel, options: OpenAIToolsOptions, on: CallOptions) =>
  new Agent({ name: "notes", instructions: "help", model, tools: [...toOpenAITools(gate, on, options).tools] });
const toldModel = (model: ScriptedModel) => outputText(functionOutputs(model.requests.at(-1)!).find((o) => o.callId === "c1")!);

async function setup() {
  const { gate, store } = createNotesGate();
  return { gate, store, ...(await twoApprovers(gate)) };
}

/** Run until the interruption, let the operator act, then resume the serialised state (fresh tools) with the app's approval. */
async function interruptEditResume(
  gate: NotesGate,
  model: ScriptedModel,
  options: OpenAIToolsOptions,
  on: CallOptions,
  operator: (id: string) => Promise<unknown>,
) {
  const first = await run(agentOf(gate, model, options, on), "save");
  expect(first.interruptions).toHaveLength(1);
  const [pending] = await gate.approvals.list({ status: ["pending"] });
  await operator(pending!.id);
  const agent = agentOf(gate, model, options, on);
  const state = await RunState.fromString(agent, first.state.toString());
  for (const item of state.getInterruptions()) state.approve(item);
  const resumed = await run(agent, state);
  return { requestId: pending!.id, resumed };
}

describe("OpenAI Agents: an operator's edit runs on the run's approval, and the model is told", () => {
  it("operator edit+grant, then state.approve: the edited call runs once and its function output carries the notice", async () => {
    const { gate, store, alice, bob } = await setup();
    const model = new ScriptedModel([addNote, { text: "saved" }]);
    const { requestId, resumed } = await interruptEditResume(gate, model, { approver: alice }, call, (id) => operatorEdits(gate, id, bob));
    expect(resumed.finalOutput).toBe("saved");
    expect(store.notes.get("n1")).toBe("hallo");
    expect(store.writes).toBe(1);
    expect(toldModel(model)).toContain(NOTICE);
    expect(toldModel(model)).toContain(requestId);
    expect((await gate.approvals.get(requestId))?.approvals?.map((a) => a.by)).toEqual([bob.id]);
  });

  it("the app's approver after an operator's edit (two-person, one approval so far): not approved, the model is told it waits, nothing ran", async () => {
    const { gate, store, alice, bob } = await setup();
    const model = new ScriptedModel([addNote, { text: "waiting" }]);
    const { requestId } = await interruptEditResume(gate, model, { approver: alice }, twoPerson, async (id) => {
      expect(await operatorEdits(gate, id, bob)).toMatchObject({ status: "needs_another" });
    });
    expect(store.writes).toBe(0);
    expect(toldModel(model)).toContain("has not run: a human must approve it first");
    const now = await gate.approvals.get(requestId);
    expect(now).toMatchObject({ status: "pending", edit: { version: 1 } });
    expect(now?.approvals?.map((a) => a.by)).toEqual([bob.id]);
  });

  it("plain function calling: the original call made again after the operator's edit runs the edit, told to the model", async () => {
    const { gate, store, bob } = await setup();
    const { invoke } = toOpenAITools(gate, call);
    const first = await invoke("notes__add_note", '{"id":"n1","text":"hello"}');
    expect(first.status).toBe("approval_required");
    await operatorEdits(gate, (first as { requestId: string }).requestId, bob);
    const second = await invoke("notes__add_note", '{"id":"n1","text":"hello"}');
    expect(second).toMatchObject({ status: "ok", edited: { version: 1 } });
    expect(second.status === "ok" && second.content).toContain(NOTICE);
    expect(store.notes.get("n1")).toBe("hallo");
  });
});
