/**
 * Approve with edits on the real gmail family, a real gate and the emulator: what the family lets an
 * approver edit (recipients, subject, body; never ids), refused edits write nothing, and an accepted
 * edit (a wrong recipient removed) is what is sent, once.
 */
import { createGate, createMemoryJournal, createToolRegistry, defineProfile, ToolError, type CallOptions } from "@toolgate/core";
import { askedRequest } from "@toolgate/core/testing";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createGmailTools } from "./gmail-tools.js";
import { GMAIL_PERMISSIONS, SEND_CONSENT } from "./permissions.js";
import { OWNER, startHarness, type Harness } from "./fixtures/harness.js";

const profile = defineProfile({ name: "assistant", allow: [...GMAIL_PERMISSIONS], maxRisk: "high", consents: [SEND_CONSENT], egress: ["personal"] });
const call: CallOptions = { principal: "agent-1", tenant: "home", profile };
const asked = { to: ["ana@example.test", "typo@team.example.test"], subject: "Lunch?", body: "Are you free on Friday?", threadId: "aa01" };

const refusal = async (promise: Promise<unknown>): Promise<ToolError> => {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(ToolError.is(error), String(error)).toBe(true);
  return error as ToolError;
};

describe("gmail: approve with edits", () => {
  let harness: Harness;
  beforeEach(async () => {
    harness = await startHarness();
  });
  afterEach(() => harness.emulator.close());

  const gateFor = () =>
    createGate({
      registry: createToolRegistry({
        families: [
          createGmailTools({
            rootUrl: harness.emulator.url,
            from: OWNER,
            retry: { baseDelayMs: 0 },
            recipientAllowlist: ["ana@example.test", "@team.example.test"],
          }),
        ],
      }),
      journal: createMemoryJournal(),
      connectors: harness.connectors,
      secrets: harness.secrets,
    });
  const ask = (gate: ReturnType<typeof gateFor>, id: string, input: unknown) => askedRequest(gate, id, input, call);

  it("records what the family lets an approver edit: send_message its recipients, subject and body; send_draft and trash_message nothing", async () => {
    const gate = gateFor();
    expect((await ask(gate, "gmail.send_message", asked)).request.editable).toEqual(["/to", "/cc", "/bcc", "/subject", "/body"]);
    expect((await ask(gate, "gmail.send_draft", { draftId: "r100" })).request.editable).toBe(false);
    expect((await ask(gate, "gmail.trash_message", { messageId: "aa01" })).request.editable).toBe(false);
  });

  it("refuses an edit of the thread, an off-allowlist recipient, and any edit of a draft send; nothing written, nothing sent", async () => {
    const gate = gateFor();
    const owner = gate.authority.owner();
    const send = await ask(gate, "gmail.send_message", asked);
    const draft = await ask(gate, "gmail.send_draft", { draftId: "r100" });
    const head = await gate.journal.head();
    const thread = await refusal(gate.approvals.previewEdit(send.id, { by: owner, input: { ...asked, threadId: "bb01" }, expect: send.expect }));
    expect([thread.code, thread.details]).toEqual(["edit_refused", { paths: ["/threadId"] }]);
    const outside = await refusal(
      gate.approvals.previewEdit(send.id, { by: owner, input: { ...asked, to: ["stranger@elsewhere.test"] }, expect: send.expect }),
    );
    expect(outside.code).toBe("invalid_input");
    expect(outside.message).toContain("not on the operator's recipient allowlist");
    const drafted = await refusal(gate.approvals.previewEdit(draft.id, { by: owner, input: { draftId: "r200" }, expect: draft.expect }));
    expect(drafted.code).toBe("edit_refused");
    expect(await gate.journal.head()).toEqual(head);
    expect(harness.emulator.gmail.sent).toHaveLength(0);
  });

  it("an approver removes the wrong recipient: the preview shows one, and the caller's retry with its own input sends the edited mail once", async () => {
    const gate = gateFor();
    const owner = gate.authority.owner();
    const send = await ask(gate, "gmail.send_message", asked);
    const shown = await gate.approvals.previewEdit(send.id, { by: owner, input: { ...asked, to: ["ana@example.test"] }, expect: send.expect });
    expect(shown.changes).toEqual([{ path: "/to", before: asked.to, after: ["ana@example.test"] }]);
    expect(JSON.stringify(shown.preview)).not.toContain("typo@team.example.test");
    expect((await gate.approvals.grant(send.id, { by: owner, expect: send.expect, edit: { input: shown.input, previewHash: shown.previewHash } })).status).toBe(
      "granted",
    );
    const ran = await gate.invoke("gmail.send_message", asked, call);
    expect(ran).toMatchObject({ status: "ok", edited: { requestId: send.id, version: 1 } });
    const again = await gate.invoke("gmail.send_message", asked, call);
    expect(again.status).toBe("ok");
    expect(harness.emulator.gmail.sent.map((m) => m.to)).toEqual([["ana@example.test"]]);
  });
});
