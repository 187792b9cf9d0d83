/**
 * Approve with edits through the AI SDK's approval flow: the framework cannot carry edited
 * arguments and needs not — the approved call is executed with the model's original input and the
 * gate runs the operator's edit, whose notice reaches the model. The app's own approver, who saw
 * the input as asked, never approves a version an operator edited.
 */
import { generateText, type ModelMessage } from "ai";
import { defineProfile, type CallOptions, type Gate } from "@toolgate/core";
import { describe, expect, it } from "vitest";
import { EDIT_NOTICE as NOTICE, operatorEdits, twoApprovers, twoPersonWriter } from "../fixtures/edits.js";
import { createNotesGate, profiles } from "../fixtures/notes-family.js";
import { done, scripted, toolCall, toolResultsSent } from "./fixtures/scripted-model.js";
import type { ApprovalRequestEvent } from "../shared/approval-broker.js";
import { toAiSdkTools, type AiSdkToolsOptions } from "./tools.js";

type NotesGate = ReturnType<typeof createNotesGate>["gate"];
type Model = ReturnType<typeof scripted>["model"];
const call: CallOptions = { principal: "ai-agent", tenant: "tests", profile: profiles.writer };
const twoPerson: CallOptions = { ...call, profile: twoPersonWriter };

async function setup() {
  const { gate, store } = createNotesGate();
  return { gate, store, ...(await twoApprovers(gate)) };
}

function request(gate: NotesGate | Gate, model: Model, messages: ModelMessage[], options: AiSdkToolsOptions, on: CallOptions) {
  return generateText({ model, tools: toAiSdkTools(gate as NotesGate, on, options), messages });
}

/** The model calls notes.add_note "hello"; the app gets the approval request; the client's next request approves it. */
async function asked(gate: NotesGate, model: Model, options: AiSdkToolsOptions, on: CallOptions) {
  const first = await request(gate, model, [{ role: "user", content: "save" }], options, on);
  const approval = first.content.find((p) => p.type === "tool-approval-request")!;
  const approved: ModelMessage[] = [
    { role: "user", content: "save" },
    ...first.response.messages,
    { role: "tool", content: [{ type: "tool-approval-response", approvalId: approval.approvalId, approved: true }] },
  ];
  const [pending] = await gate.approvals.list({ status: ["pending"] });
  return { approved, pending: pending! };
}

const sentNext = (prompts: ReturnType<typeof scripted>["prompts"]) => JSON.stringify(toolResultsSent(prompts.at(-1)!));

describe("AI SDK: an operator's edit runs on the framework's approval, and the model is told", () => {
  for (const withApprover of [true, false]) {
    it(`operator edit+grant, then the framework's approval (${withApprover ? "with" : "without"} an app approver): the edited call runs once, the notice reaches the model`, async () => {
      const { gate, store, alice, bob } = await setup();
      const options = withApprover ? { approver: alice } : {};
      const { model, prompts } = scripted(toolCall("c1", "notes.add_note", { id: "n1", text: "hello" }), done, done, done);
      const { approved, pending } = await asked(gate, model, options, call);
      expect(pending.editable).toEqual([""]);
      await operatorEdits(gate, pending.id, bob);

      await request(gate, model, approved, options, call);
      expect(store.notes.get("n1")).toBe("hallo");
      expect(store.writes).toBe(1);
      expect(sentNext(prompts)).toContain(NOTICE);
      expect(sentNext(prompts)).toContain("/text");
      expect(sentNext(prompts)).toContain("hallo");
      // The app's approver decided nothing: the operator's version ran on the operator's grant.
      const request2 = await gate.approvals.get(pending.id);
      expect(request2?.approvals?.map((a) => a.by)).toEqual([bob.id]);

      // The client sends its history again: replayed with the notice, not run twice.
      await request(gate, model, approved, options, call);
      expect(store.writes).toBe(1);
      expect(sentNext(prompts)).toContain(NOTICE);
    });
  }

  it("onApprovalRequest tells the app what an approver may edit: the whole input, or what the profile narrows it to", async () => {
    const textOnly = defineProfile({
      name: "text-only",
      allow: ["notes:read", "notes:write"],
      maxRisk: "medium",
      approvalEdits: { "notes.add_note": ["/text"] },
    });
    for (const [on, editable] of [
      [call, [""]],
      [{ ...call, profile: textOnly }, ["/text"]],
    ] as const) {
      const { gate } = createNotesGate();
      const events: ApprovalRequestEvent[] = [];
      const { model } = scripted(toolCall("c1", "notes.add_note", { id: "n1", text: "hello" }), done);
      await request(gate, model, [{ role: "user", content: "save" }], { onApprovalRequest: (e) => events.push(e) }, on);
      expect(events.map((e) => e.editable)).toEqual([editable]);
    }
  });

  it("the app's approver after an operator's edit (two-person, one approval so far): not approved, approval_required, nothing ran", async () => {
    const { gate, store, alice, bob } = await setup();
    const { model, prompts } = scripted(toolCall("c1", "notes.add_note", { id: "n1", text: "hello" }), done, done, done);
    const { approved, pending } = await asked(gate, model, { approver: alice }, twoPerson);
    expect(await operatorEdits(gate, pending.id, bob)).toMatchObject({ status: "needs_another" });

    await request(gate, model, approved, { approver: alice }, twoPerson);
    expect(store.writes).toBe(0);
    expect(sentNext(prompts)).toContain("has not run: a human must approve it first");
    expect(sentNext(prompts)).toContain(pending.id);
    const now = await gate.approvals.get(pending.id);
    expect(now).toMatchObject({ status: "pending", edit: { version: 1 } });
    expect(now?.approvals?.map((a) => a.by)).toEqual([bob.id]);

    // A second person approves the edited version in the console, naming it: the retry runs it once.
    await gate.approvals.grant(pending.id, { by: alice, expect: { version: 1, previewHash: now!.edit!.previewHash } });
    await request(gate, model, approved, { approver: alice }, twoPerson);
    expect(store.notes.get("n1")).toBe("hallo");
    expect(store.writes).toBe(1);
    expect(sentNext(prompts)).toContain(NOTICE);
  });

  it("an operator's edit lands between the broker's look and its grant: the stale grant is refused, nothing ran", async () => {
    const { gate, store, alice, bob } = await setup();
    const { model, prompts } = scripted(toolCall("c1", "notes.add_note", { id: "n1", text: "hello" }), done, done, done);
    const { approved, pending } = await asked(gate, model, { approver: alice }, twoPerson);
    // The gate the app hands the adapter; the operator edits right after the broker has listed the request.
    let raced = false;
    const approvals = {
      ...gate.approvals,
      list: async (o?: Parameters<Gate["approvals"]["list"]>[0]) => {
        const listed = await gate.approvals.list(o);
        if (!raced) {
          raced = true;
          await operatorEdits(gate, pending.id, bob);
        }
        return listed;
      },
    };
    const racing = Object.create(gate, { approvals: { value: approvals } }) as Gate;
    await request(racing, model, approved, { approver: alice }, twoPerson);
    expect(raced).toBe(true);
    expect(store.writes).toBe(0);
    expect(sentNext(prompts)).toContain("has not run: a human must approve it first");
    const now = await gate.approvals.get(pending.id);
    expect(now?.approvals?.map((a) => a.by)).toEqual([bob.id]);
    expect((await gate.journal.readAudit()).filter((e) => e.type === "approval.granted")).toHaveLength(1);
  });
});
