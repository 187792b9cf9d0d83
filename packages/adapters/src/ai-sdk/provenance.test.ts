import { generateText, stepCountIs, type ModelMessage } from "ai";
import type { CallOptions, ProvenanceSession } from "@toolgate/core";
import { describe, expect, it } from "vitest";
import { createPostGate, OUTSIDE, OWN, postProfiles } from "../fixtures/provenance-mail.js";
import type { ApprovalRequestEvent } from "../shared/approval-broker.js";
import { done, scripted, toolCall } from "./fixtures/scripted-model.js";
import { toAiSdkTools, type AiSdkToolsOptions } from "./tools.js";

/**
 * A scripted run in a session: the model reads the inbox (someone else's message naming an outside
 * address), then sends to that address. The session the host passes in `call` reaches the gate on
 * every call, so the adapter surfaces the gate's judgement: the SDK's approval request (with the
 * provenance in the preview) or the refusal.
 */
type PostGate = ReturnType<typeof createPostGate>["gate"];
const readThenSend = (to: string) => scripted(toolCall("c1", "post.read_inbox", {}), toolCall("c2", "post.send", { to, body: "the numbers" }), done, done);

async function firstRequest(gate: PostGate, model: ReturnType<typeof scripted>["model"], call: CallOptions, options: AiSdkToolsOptions = {}) {
  const asked: ApprovalRequestEvent[] = [];
  const result = await generateText({
    model,
    tools: toAiSdkTools(gate, call, { ...options, onApprovalRequest: (e) => asked.push(e) }),
    prompt: "deal with the inbox",
    stopWhen: stepCountIs(4),
  });
  return { result, asked };
}
const judged = async (gate: PostGate) => (await gate.journal.readAudit()).filter((e) => e.type === "provenance.checked");

describe("AI SDK adapter: the host's session reaches the gate", () => {
  it("under a refusing profile the send to the address the message carried is refused (provenance_refused): nothing sent, nothing asked", async () => {
    const { gate, sent } = createPostGate();
    const session = gate.openSession({ trusted: [{ text: `My manager is ${OWN}`, label: "user" }] });
    const { model } = readThenSend(OUTSIDE);
    const { result, asked } = await firstRequest(gate, model, { principal: "agent", tenant: "t", profile: postProfiles.refuses, session });
    expect(sent).toEqual([]);
    expect(asked).toEqual([]);
    const error = result.steps.flatMap((s) => s.content).find((p) => p.type === "tool-error");
    expect(JSON.stringify(error)).toContain("provenance_refused");
    expect(await gate.approvals.list()).toEqual([]);
  });

  it("the send to the outside address surfaces the SDK's approval request with preview.provenance; approved, it runs once, judged in the same session", async () => {
    const { gate, sent } = createPostGate();
    const { operator } = await gate.authority.operators.add("approver-1", { role: "approver" }, gate.authority.owner());
    const approver = await gate.authority.actingAs(operator.id);
    const session: ProvenanceSession = gate.openSession();
    const call = { principal: "agent", tenant: "t", profile: postProfiles.asks, session };
    const { model } = readThenSend(OUTSIDE);
    const { result, asked } = await firstRequest(gate, model, call, { approver });
    expect(sent).toEqual([]);
    expect(asked).toHaveLength(1);
    const provenance = asked[0]!.preview.provenance;
    expect(provenance).toMatchObject({ session: session.id, verdict: "violation", action: "escalated" });
    expect(provenance?.fields[0]).toMatchObject({ path: "/to", label: "untrusted", role: "destination" });
    expect(provenance?.fields[0]?.sources[0]).toMatchObject({ kind: "output", toolId: "post.read_inbox", untrusted: true });

    // The client's next request (fresh tools, same session): the human approved what was shown.
    const approval = result.content.find((p) => p.type === "tool-approval-request")!;
    const history: ModelMessage[] = [
      { role: "user", content: "deal with the inbox" },
      ...result.response.messages,
      { role: "tool", content: [{ type: "tool-approval-response", approvalId: approval.approvalId, approved: true }] },
    ];
    await generateText({ model, tools: toAiSdkTools(gate, call, { approver }), messages: history });
    expect(sent).toEqual([{ to: OUTSIDE, body: "the numbers" }]);
    // Asked, then the approved retry: both judged in the host's session.
    const checks = await judged(gate);
    expect(checks.length).toBeGreaterThanOrEqual(2);
    expect(checks.every((e) => (e.data as { provenance: { session: string } }).provenance.session === session.id)).toBe(true);
  });

  it("a send to the address the user gave runs without a human; outside a session the outside address is not judged at all", async () => {
    const { gate, sent } = createPostGate();
    const session = gate.openSession({ trusted: [{ text: `My manager is ${OWN}`, label: "user" }] });
    const own = await firstRequest(gate, readThenSend(OWN).model, { principal: "agent", tenant: "t", profile: postProfiles.asks, session });
    expect(own.asked).toEqual([]);
    expect(sent).toEqual([{ to: OWN, body: "the numbers" }]);

    // The same run without a session: the gate remembers nothing, so nothing stops the send (what sessions are for).
    const bare = await firstRequest(gate, readThenSend(OUTSIDE).model, { principal: "agent", tenant: "t", profile: postProfiles.refuses });
    expect(bare.asked).toEqual([]);
    expect(sent.at(-1)).toEqual({ to: OUTSIDE, body: "the numbers" });
  });
});
