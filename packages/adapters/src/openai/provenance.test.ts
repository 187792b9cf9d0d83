import { Agent, run, setTracingDisabled } from "@openai/agents";
import type { CallOptions } from "@toolgate/core";
import { describe, expect, it } from "vitest";
import { createPostGate, OUTSIDE, OWN, postProfiles } from "../fixtures/provenance-mail.js";
import type { ApprovalRequestEvent } from "../shared/approval-broker.js";
import { functionOutputs, outputText, ScriptedModel } from "./fixtures/scripted-model.js";
import { toOpenAITools, type OpenAIToolsOptions } from "./tools.js";

setTracingDisabled(true);

/**
 * A scripted Agents SDK run in a session: the model reads the inbox (someone else's message naming
 * an outside address), then sends to that address. The host's session reaches the gate on every
 * call: the run is interrupted with the provenance in the preview, or the model is told of the refusal.
 */
type PostGate = ReturnType<typeof createPostGate>["gate"];
const script = (to: string) =>
  new ScriptedModel([
    { call: { name: "post__read_inbox", args: {}, callId: "c1" } },
    { call: { name: "post__send", args: { to, body: "the numbers" }, callId: "c2" } },
    { text: "done" },
  ]);
function agentOf(gate: PostGate, model: ScriptedModel, call: CallOptions, options: OpenAIToolsOptions = {}) {
  const asked: ApprovalRequestEvent[] = [];
  const tools = toOpenAITools(gate, call, { ...options, onApprovalRequest: (e) => asked.push(e) }).tools;
  return { agent: new Agent({ name: "post", instructions: "help", model, tools: [...tools] }), asked };
}
const toldModel = (model: ScriptedModel, callId: string) => outputText(functionOutputs(model.requests.at(-1)!).find((o) => o.callId === callId)!);

describe("OpenAI Agents adapter: the host's session reaches the gate", () => {
  it("under a refusing profile the model is told provenance_refused: nothing sent, no interruption", async () => {
    const { gate, sent } = createPostGate();
    const session = gate.openSession({ trusted: [{ text: `My manager is ${OWN}`, label: "user" }] });
    const model = script(OUTSIDE);
    const { agent, asked } = agentOf(gate, model, { principal: "agent", tenant: "t", profile: postProfiles.refuses, session });
    const result = await run(agent, "deal with the inbox");
    expect(result.interruptions).toEqual([]);
    expect(asked).toEqual([]);
    expect(sent).toEqual([]);
    expect(toldModel(model, "c2")).toMatch(/^provenance_refused: /);
  });

  it("the send to the outside address interrupts the run with preview.provenance; approved, it runs once in the same session", async () => {
    const { gate, sent } = createPostGate();
    const { operator } = await gate.authority.operators.add("approver-1", { role: "approver" }, gate.authority.owner());
    const approver = await gate.authority.actingAs(operator.id);
    const session = gate.openSession();
    const model = script(OUTSIDE);
    const { agent, asked } = agentOf(gate, model, { principal: "agent", tenant: "t", profile: postProfiles.asks, session }, { approver });
    const first = await run(agent, "deal with the inbox");
    expect(first.interruptions).toHaveLength(1);
    expect(sent).toEqual([]);
    expect(asked[0]?.preview.provenance).toMatchObject({ session: session.id, verdict: "violation", action: "escalated" });
    expect(asked[0]?.preview.provenance?.fields[0]).toMatchObject({ path: "/to", label: "untrusted", role: "destination" });

    first.state.approve(first.interruptions[0]!);
    await run(agent, first.state);
    expect(sent).toEqual([{ to: OUTSIDE, body: "the numbers" }]);
    const checks = (await gate.journal.readAudit()).filter((e) => e.type === "provenance.checked");
    expect(checks.length).toBeGreaterThanOrEqual(2);
    expect(checks.every((e) => (e.data as { provenance: { session: string } }).provenance.session === session.id)).toBe(true);
  });

  it("plain function calling: invoke carries the session too", async () => {
    const { gate, sent } = createPostGate();
    const session = gate.openSession();
    const tools = toOpenAITools(gate, { principal: "agent", tenant: "t", profile: postProfiles.refuses, session });
    expect(await tools.invoke("post__read_inbox", "{}")).toMatchObject({ status: "ok" });
    expect(await tools.invoke("post__send", JSON.stringify({ to: OUTSIDE, body: "x" }))).toMatchObject({ status: "denied", code: "provenance_refused" });
    expect(sent).toEqual([]);
  });

  it("a send to the address the user gave runs without a human", async () => {
    const { gate, sent } = createPostGate();
    const session = gate.openSession({ trusted: [{ text: `My manager is ${OWN}`, label: "user" }] });
    const model = script(OWN);
    const { agent, asked } = agentOf(gate, model, { principal: "agent", tenant: "t", profile: postProfiles.asks, session });
    const result = await run(agent, "deal with the inbox");
    expect(result.interruptions).toEqual([]);
    expect(asked).toEqual([]);
    expect(sent).toEqual([{ to: OWN, body: "the numbers" }]);
  });
});
