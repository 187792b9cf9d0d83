import { Agent, run, RunState, setTracingDisabled } from "@openai/agents";
import { describe, expect, it } from "vitest";
import { createNotesGate, profiles } from "../fixtures/notes-family.js";
import { functionOutputs, outputText, ScriptedModel } from "./fixtures/scripted-model.js";
import { toOpenAITools, type OpenAIToolsOptions } from "./tools.js";

setTracingDisabled(true);

/**
 * The Agents SDK's interruptions against the gate's authority: `state.approve(item)` is the
 * human's answer in the app, the grant comes from the authority for the approver the app passes,
 * and only the request the gate persisted for that exact input may be granted, in the same
 * process or after the run state was serialised and resumed with fresh tools.
 */
type NotesGate = ReturnType<typeof createNotesGate>["gate"];
const call = { principal: "openai-agent", tenant: "tests", profile: profiles.writer };
const addNote = (callId: string, text: string) => ({ call: { name: "notes__add_note", args: { id: "n1", text }, callId } });
const agentOf = (gate: NotesGate, model: ScriptedModel, options: OpenAIToolsOptions = {}) =>
  new Agent({ name: "notes", instructions: "help", model, tools: [...toOpenAITools(gate, call, options).tools] });
const decisions = async (gate: NotesGate) => (await gate.journal.readAudit()).filter((e) => e.type === "approval.granted" || e.type === "approval.denied");
/** What the model was told about a call, in the request after it. */
const toldModel = (model: ScriptedModel, callId: string) => outputText(functionOutputs(model.requests.at(-1)!).find((o) => o.callId === callId)!);

async function setup() {
  const { gate, store } = createNotesGate();
  const authority = gate.authority;
  const { operator } = await authority.operators.add("bob", { role: "approver" }, authority.owner());
  return { gate, store, bob: await authority.actingAs(operator.id), operatorId: operator.id };
}

/** Run until the interruption, serialise the state, and resume it in a fresh agent with fresh tools. */
async function interruptAndSerialise(gate: NotesGate, model: ScriptedModel, options: OpenAIToolsOptions) {
  const first = await run(agentOf(gate, model, options), "save");
  expect(first.interruptions).toHaveLength(1);
  return first.state.toString();
}
async function resume(gate: NotesGate, model: ScriptedModel, serialised: string, options: OpenAIToolsOptions) {
  const agent = agentOf(gate, model, options);
  const state = await RunState.fromString(agent, serialised);
  for (const item of state.getInterruptions()) state.approve(item);
  return run(agent, state);
}

describe("OpenAI Agents approval: no self-grant, the exact input", () => {
  it("a run state resumed with fresh tools runs the approved call, granted by the app's approver (recorded by id)", async () => {
    const { gate, store, bob, operatorId } = await setup();
    const model = new ScriptedModel([addNote("c1", "hello"), { text: "saved" }]);
    const serialised = await interruptAndSerialise(gate, model, { approver: bob });
    const [shown] = await gate.approvals.list({ status: ["pending"] });
    expect(shown).toMatchObject({ toolId: "notes.add_note", callRef: "c1" });
    const second = await resume(gate, model, serialised, { approver: bob });
    expect(second.finalOutput).toBe("saved");
    expect(store.notes.get("n1")).toBe("hello");
    expect(store.writes).toBe(1);
    expect(await decisions(gate)).toEqual([
      expect.objectContaining({ type: "approval.granted", data: expect.objectContaining({ approver: operatorId, via: "host" }) }),
    ]);
    expect(JSON.stringify(await gate.journal.readAudit())).not.toContain("openai-agents-approval");
  });

  it("an input edited in the serialised state after approval is refused; nothing is granted", async () => {
    const { gate, store, bob } = await setup();
    const model = new ScriptedModel([addNote("c1", "hello"), { text: "not saved" }]);
    const serialised = await interruptAndSerialise(gate, model, { approver: bob });
    expect(serialised).toContain("hello");
    await resume(gate, model, serialised.replaceAll("hello", "evil"), { approver: bob });
    expect(store.writes).toBe(0);
    expect(toldModel(model, "c1")).toMatch(/^approval_invalid: /);
    expect(await decisions(gate)).toEqual([]);
  });

  it("a run state that approves a call id no request was asked for runs nothing, however often it is resumed", async () => {
    const { gate, store, bob } = await setup();
    const model = new ScriptedModel([addNote("c1", "hello"), { text: "no" }, { text: "no" }]);
    const serialised = await interruptAndSerialise(gate, model, { approver: bob });
    expect(serialised).toContain('"c1"');
    const forged = serialised.replaceAll('"c1"', '"c0"').replaceAll("hello", "evil");
    for (let i = 0; i < 2; i++) {
      await resume(gate, model, forged, { approver: bob });
      expect(toldModel(model, "c0")).toContain("has not run: a human must approve it first");
    }
    expect(store.writes).toBe(0);
    expect(await decisions(gate)).toEqual([]);
  });

  it("an input edited in the live state after approval is refused, and the request the human saw is not granted", async () => {
    const { gate, store, bob } = await setup();
    const model = new ScriptedModel([addNote("c1", "hello"), { text: "not saved" }]);
    const agent = agentOf(gate, model, { approver: bob });
    const first = await run(agent, "save");
    const item = first.interruptions[0]!;
    (item.rawItem as { arguments: string }).arguments = JSON.stringify({ id: "n1", text: "evil" });
    first.state.approve(item);
    await run(agent, first.state);
    expect(store.writes).toBe(0);
    expect(await decisions(gate)).toEqual([]);
    expect((await gate.approvals.list()).find((r) => r.callRef === "c1")).toMatchObject({ status: "pending" });
  });

  it("without an approver, approving in the SDK grants nothing; after an operator's grant the model's retry runs", async () => {
    const { gate, store } = createNotesGate();
    const model = new ScriptedModel([addNote("c1", "hello"), { text: "waiting" }, addNote("c2", "hello"), { text: "saved" }]);
    const agent = agentOf(gate, model);
    const first = await run(agent, "save");
    const [pending] = await gate.approvals.list({ status: ["pending"] });
    first.state.approve(first.interruptions[0]!);
    const second = await run(agent, first.state);
    expect(store.writes).toBe(0);
    expect(toldModel(model, "c1")).toContain(pending!.id);
    expect(await decisions(gate)).toEqual([]);

    await gate.approvals.grant(pending!.id, { by: gate.authority.owner() });
    const third = await run(agent, [...second.history, { role: "user", content: "retry" }]);
    expect(third.finalOutput).toBe("saved");
    expect(store.notes.get("n1")).toBe("hello");
    expect(store.writes).toBe(1);
    expect(await decisions(gate)).toEqual([expect.objectContaining({ data: expect.objectContaining({ approver: "owner" }) })]);
  });

  it("'always approve' in the SDK approves nothing at the gate: a later call the human was not shown waits", async () => {
    const { gate, store, bob } = await setup();
    const model = new ScriptedModel([
      addNote("c1", "hello"),
      { call: { name: "notes__add_note", args: { id: "n2", text: "evil" }, callId: "c2" } },
      { text: "ok" },
    ]);
    const agent = agentOf(gate, model, { approver: bob });
    const first = await run(agent, "save");
    first.state.approve(first.interruptions[0]!, { alwaysApprove: true });
    await run(agent, first.state);
    expect(store.notes.get("n1")).toBe("hello");
    expect(store.notes.has("n2")).toBe(false);
    expect(toldModel(model, "c2")).toContain("approval");
    expect(await decisions(gate)).toHaveLength(1);
  });
});
