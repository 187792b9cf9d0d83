import { describeToolFamily } from "@toolgate/core/testing";
import type { GmailFixture } from "@toolgate/emulators";
import { afterAll } from "vitest";
import { createGmailTools } from "./gmail-tools.js";
import { MAILBOX, OWNER, startHarness } from "./fixtures/harness.js";

// One emulator for the file (the family needs its URL up front); every test gets a fresh mailbox
// and a fresh connection whose tokens came from the emulator's token endpoint.
const harness = await startHarness();
afterAll(() => harness.emulator.close());

/**
 * The starting mailbox plus a secret in every place a tool reads back: a label (id and name), a
 * message (subject, body, label), a thread whose id is the secret (a reply within it is answered
 * with that id) and a draft in that thread.
 */
function mailboxWithSecret(secret: string): GmailFixture {
  const label = `Label_${secret}`;
  return {
    ...MAILBOX,
    labels: [...(MAILBOX.labels ?? []), { id: label, name: `Planted ${secret}` }],
    messages: [
      ...(MAILBOX.messages ?? []),
      {
        id: "cc01",
        threadId: "cc01",
        from: "Planter <planter@example.test>",
        to: OWNER,
        subject: `Code ${secret}`,
        body: `The code is ${secret}.`,
        date: "2025-03-05T10:00:00Z",
        labelIds: ["INBOX", "UNREAD", label],
      },
      {
        id: "cc02",
        threadId: secret,
        from: "Ana <ana@example.test>",
        to: OWNER,
        subject: "Thread",
        body: "A thread to reply in.",
        date: "2025-03-05T11:00:00Z",
      },
    ],
    drafts: [
      ...(MAILBOX.drafts ?? []),
      {
        draftId: "r200",
        id: "dd02",
        threadId: secret,
        from: OWNER,
        to: "ana@example.test",
        subject: "Re: Thread",
        body: "A reply.",
        date: "2025-03-05T12:00:00Z",
      },
    ],
  };
}

describeToolFamily(createGmailTools({ rootUrl: harness.emulator.url, from: OWNER, recipientAllowlist: ["@example.test"] }), {
  makeContext: async () => {
    harness.emulator.reset();
    const { connectors, secrets } = await harness.connect();
    return { connectors, secrets };
  },
  validInputs: {
    "gmail.search_messages": { query: "from:ana" },
    "gmail.read_message": { messageId: "aa01" },
    "gmail.read_thread": { threadId: "aa01" },
    "gmail.list_labels": {},
    "gmail.create_draft": { to: ["ana@example.test"], subject: "Hello", body: "Hi Ana" },
    "gmail.send_message": { to: ["ana@example.test"], subject: "Hello", body: "Hi Ana" },
    "gmail.send_draft": { draftId: "r100" },
    "gmail.modify_labels": { messageId: "aa01", addLabelIds: ["STARRED"] },
    "gmail.trash_message": { messageId: "aa01" },
  },
  invalidInputs: {
    "gmail.send_message": [
      { to: ["ana@example.test"], subject: "Hi\r\nBcc: spy@evil.test", body: "x" },
      { to: ["ana@example.test\r\nBcc: spy@evil.test"], subject: "Hi", body: "x" },
      { to: ["stranger@elsewhere.test"], subject: "Hi", body: "x" },
      { to: ["Ana <ana@example.test>"], subject: "Hi", body: "x" },
      { to: [], subject: "Hi", body: "x" },
    ],
    "gmail.create_draft": [{ to: ["ana@example.test"], subject: "a\nb", body: "x" }],
    "gmail.modify_labels": [{ messageId: "aa01" }],
  },
  // Each tool reads the secret back from the emulator's mailbox; the compose tools, whose answers
  // hold only ids, reply within the thread whose id is the secret.
  plantSecret: (toolId, secret) => {
    harness.emulator.reset({ gmail: mailboxWithSecret(secret) });
    const reply = { to: ["ana@example.test"], subject: "Re: Thread", body: "Noted.", threadId: secret };
    const inputs: Record<string, unknown> = {
      "gmail.search_messages": { query: "from:planter" },
      "gmail.read_message": { messageId: "cc01" },
      "gmail.read_thread": { threadId: "cc01" },
      "gmail.list_labels": {},
      "gmail.create_draft": reply,
      "gmail.send_message": reply,
      "gmail.send_draft": { draftId: "r200" },
      "gmail.modify_labels": { messageId: "cc01", addLabelIds: ["STARRED"] },
      "gmail.trash_message": { messageId: "cc01" },
    };
    return inputs[toolId];
  },
});
