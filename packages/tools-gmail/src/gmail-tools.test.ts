import { describeToolFamily } from "@toolgate/core/testing";
import { afterAll } from "vitest";
import { createGmailTools } from "./gmail-tools.js";
import { OWNER, startHarness } from "./fixtures/harness.js";

// One emulator for the file (the family needs its URL up front); every test gets a fresh mailbox
// and a fresh connection whose tokens came from the emulator's token endpoint.
const harness = await startHarness();
afterAll(() => harness.emulator.close());

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
});
