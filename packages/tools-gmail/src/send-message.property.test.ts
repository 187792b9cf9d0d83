/**
 * `gmail.send_message` end to end, property: through a real gate (approval granted) to the
 * emulator, which reads what it receives with postal-mime as mail software does. What the emulator
 * delivers is exactly what the human approved: every recipient, the subject, the text (its
 * SHA-256 and size) and each attachment's name, type and size.
 */
import { grantAsOwner } from "@toolgate/core/testing";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { composeSchema } from "./compose.js";
import { sha256 } from "./digest.js";
import { composeInput } from "./fixtures/compose-inputs.js";
import { call, freshHarness, gmailGate } from "./fixtures/drafts.js";
import { MAILBOX } from "./fixtures/harness.js";
import { resolveOptions } from "./options.js";

const options = { attachments: true, maxRecipients: 50 } as const;
const input = composeInput(composeSchema(resolveOptions(options), false));

describe("gmail.send_message against the emulator, property", () => {
  const harness = freshHarness();

  it("delivers exactly the recipients, subject, text and attachments the human approved", async () => {
    await fc.assert(
      fc.asyncProperty(input, async (message) => {
        harness().emulator.reset({ gmail: MAILBOX });
        // A gate of its own per message: the same input on one gate would replay the earlier send.
        const gate = gmailGate(harness(), options);
        const first = await gate.invoke("gmail.send_message", message, call);
        expect(first.status).toBe("approval_required");
        if (first.status !== "approval_required") return;
        const result = await gate.invoke("gmail.send_message", message, { ...call, approval: await grantAsOwner(gate, first.requestId) });
        expect(result.status).toBe("ok");
        const [sent, ...more] = harness().emulator.gmail.sent;
        expect(more).toHaveLength(0);
        const approved = first.preview.details as Record<string, unknown> & { attachments: { filename: string; mimeType: string; bytes: number }[] };
        expect({
          to: sent?.to,
          cc: sent?.cc,
          bcc: sent?.bcc,
          subject: sent?.subject,
          bodySha256: sha256(Buffer.from(sent?.text ?? "", "utf8")),
          attachments: sent?.attachments,
        }).toEqual({
          to: approved["to"],
          cc: approved["cc"],
          bcc: approved["bcc"],
          subject: approved["subject"],
          bodySha256: approved["bodySha256"],
          attachments: approved.attachments.map((a) => ({ filename: a.filename, mimeType: a.mimeType, size: a.bytes })),
        });
        expect(first.preview.body).toBe(sent?.text);
      }),
      { seed: 22_002, numRuns: 40 },
    );
  }, 120_000);
});
