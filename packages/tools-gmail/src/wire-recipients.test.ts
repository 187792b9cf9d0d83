/**
 * Recipients as the wire sees them: what the allowlist checks and the human approves is exactly
 * the set the emulator delivers to (every address of every To/Cc/Bcc header), or the send is refused.
 */
import { createHash } from "node:crypto";
import { beforeEach, describe, expect, it } from "vitest";
import { call, draftRaw, freshHarness, gmailGate, sendDraftThrough, type Seen } from "./fixtures/drafts.js";
import { OWNER, type Harness } from "./fixtures/harness.js";
import { grantAsOwner } from "@toolgate/core/testing";

const word = (text: string): string => `=?UTF-8?B?${Buffer.from(text, "utf8").toString("base64")}?=`;

describe("recipients as the wire sees them, through the gate, the real client and the emulator", () => {
  let harness: Harness;
  const current = freshHarness();
  beforeEach(() => {
    harness = current();
  });

  describe("gmail.send_draft sees every recipient the wire carries", () => {
    // ---------- hidden recipients are seen: the allowlist refuses them, the preview lists them ----------

    const hidden: readonly (readonly [string, string, Seen])[] = [
      ["a quoted local part after a comma", 'To: ana@example.test, "mallory"@evil.test', { to: ["ana@example.test", "mallory@evil.test"], cc: [], bcc: [] }],
      ["a group", "To: friends: ana@example.test, mallory@evil.test;", { to: ["ana@example.test", "mallory@evil.test"], cc: [], bcc: [] }],
      ["a comment before the comma", "To: ana@example.test (x) , mallory@evil.test", { to: ["ana@example.test", "mallory@evil.test"], cc: [], bcc: [] }],
      ["a semicolon between addresses", "To: ana@example.test; mallory@evil.test", { to: ["ana@example.test", "mallory@evil.test"], cc: [], bcc: [] }],
      ["a folded header (CRLF + space)", "To: ana@example.test,\r\n mallory@evil.test", { to: ["ana@example.test", "mallory@evil.test"], cc: [], bcc: [] }],
      ["a folded header (CRLF + tab)", "To: ana@example.test,\r\n\tmallory@evil.test", { to: ["ana@example.test", "mallory@evil.test"], cc: [], bcc: [] }],
      [
        "lower- and upper-case header names",
        "to: ana@example.test\r\nCC: bo@example.test, mallory@evil.test",
        { to: ["ana@example.test"], cc: ["bo@example.test", "mallory@evil.test"], bcc: [] },
      ],
      ["a Bcc hidden in the draft", "To: ana@example.test\r\nbcc: mallory@evil.test", { to: ["ana@example.test"], cc: [], bcc: ["mallory@evil.test"] }],
      ["an upper-case address", "To: ana@example.test, MALLORY@EVIL.TEST", { to: ["ana@example.test", "mallory@evil.test"], cc: [], bcc: [] }],
    ];

    for (const [name, headers, seen] of hidden) {
      it(`refuses ${name} outside the allowlist, nothing sent`, async () => {
        const send = sendDraftThrough(harness, { recipientAllowlist: ["@example.test"] });
        const { first } = await send(draftRaw(headers));
        expect(first.status === "error" && [first.code, first.boundary]).toEqual(["permission_denied", "pre_effect_refusal"]);
        expect(JSON.stringify(first)).toContain("mallory@evil.test");
        expect(harness.emulator.gmail.sent).toHaveLength(0);
      });

      it(`previews ${name} as exactly the recipients the message is delivered to`, async () => {
        const { previewed, delivered, result } = await sendDraftThrough(harness)(draftRaw(headers));
        expect(previewed).toEqual(seen);
        expect(result?.status).toBe("ok");
        expect(delivered).toEqual(seen);
      });
    }

    // ---------- what cannot be read one way is refused, before any send ----------

    const ambiguous: readonly (readonly [string, string])[] = [
      ["a second To header", "To: ana@example.test\r\nTo: mallory@evil.test"],
      ["a second To header spelled in lower case", "To: ana@example.test\r\nto: mallory@evil.test"],
      ["a second Cc header", "To: ana@example.test\r\nCc: bo@example.test\r\nCc: mallory@evil.test"],
      ["a second Bcc header", "To: ana@example.test\r\nBcc: bo@example.test\r\nBCC: mallory@evil.test"],
      ["a second From header", `To: ana@example.test\r\nFrom: mallory@evil.test`],
      ["a second Subject header", "To: ana@example.test\r\nSubject: Other"],
      ["a second Reply-To header", "To: ana@example.test\r\nReply-To: ana@example.test\r\nReply-To: mallory@evil.test"],
      ["a second Sender header", "To: ana@example.test\r\nSender: ana@example.test\r\nSender: mallory@evil.test"],
      ["a quoted local part holding a comma and an address", 'To: "ana@example.test, x"@evil.test'],
      ["a display name that is another address", 'To: "ana@example.test" <mallory@evil.test>'],
      ["a display name that is another address, encoded", `To: ${word("ana@example.test")} <mallory@evil.test>`],
      ["an encoded word hiding an angle address", `To: ${word("<mallory@evil.test>")}`],
      ["an encoded word hiding an address beside a real one", `To: ${word("Ana <mallory@evil.test>")} <ana@example.test>`],
      ["two addresses without a comma", "To: ana@example.test mallory@evil.test"],
      ["two angle addresses without a comma", "To: <ana@example.test> <mallory@evil.test>"],
      ["a folded header without a comma", "To: ana@example.test\r\n mallory@evil.test"],
      ["an address in a comment", "To: ana@example.test (mallory@evil.test)"],
      ["a display name that is the address itself, unquoted", '"bo"@example.test "bo"@example.test'.replace(/^/, "To: ")],
      ["a display name that is the address itself", 'To: "ana@example.test" <ana@example.test>'],
      ["an encoded word as the address", "To: =?UTF-8?Q?mallory?=@evil.test"],
      ["a display name in an encoding that cannot be decoded", "To: =?UTF-8?X?PG1hbGxvcnk+?= <ana@example.test>"],
      ["an entry without an address", "To: ana@example.test, mallory"],
      ["a Resent-To header", "To: ana@example.test\r\nResent-To: mallory@evil.test"],
      ["a Resent-Bcc header", "To: ana@example.test\r\nresent-bcc: mallory@evil.test"],
      ["a bare CR in the header", "To: ana@example.test\rBcc: mallory@evil.test"],
      ["a header line without a name", "To: ana@example.test\r\nmallory@evil.test"],
      ["a space before the colon", "To: ana@example.test\r\nBcc : mallory@evil.test"],
      ["a NUL in a header", "To: ana@example.test\u0000, mallory@evil.test"],
      ["a NUL in a display name", 'To: "Ana\u0000" <ana@example.test>'],
      ["a percent-relay address (an allowed domain forwards it elsewhere)", "To: mallory%evil.test@example.test"],
      ["a bang-path address (an allowed domain forwards it elsewhere)", "Cc: evil.test!mallory@example.test"],
    ];

    for (const [name, headers] of ambiguous) {
      it(`refuses a draft with ${name}, with a typed error and nothing sent`, async () => {
        const { first } = await sendDraftThrough(harness)(draftRaw(headers));
        expect(first.status === "error" && [first.code, first.boundary]).toEqual(["preview_invalid", "pre_effect_refusal"]);
        expect(first.status === "error" && first.message).toMatch(/\nthe draft cannot be read one way: /);
        expect(harness.emulator.gmail.sent).toHaveLength(0);
      });
    }

    // ---------- display names are data, shown beside the address they label ----------

    it("shows display names (commas, encoded words) as data beside their address, never as the recipient", async () => {
      const headers = `To: "Ana, Finance" <ana@example.test>, ${word("Bö Müller")} <bo@example.test>\r\nReply-To: Ana <ana@example.test>`;
      const { preview, previewed, delivered } = await sendDraftThrough(harness)(draftRaw(headers));
      expect(previewed).toEqual({ to: ["ana@example.test", "bo@example.test"], cc: [], bcc: [] });
      expect(preview?.details).toMatchObject({
        displayNames: [
          { field: "to", address: "ana@example.test", name: "Ana, Finance" },
          { field: "to", address: "bo@example.test", name: "Bö Müller" },
        ],
        replyTo: ["ana@example.test"],
      });
      expect(preview?.summary).toContain("ana@example.test, bo@example.test");
      expect(preview?.summary).not.toContain("Finance");
      expect(delivered).toEqual(previewed);
    });

    it("counts every recipient of every header against maxRecipients", async () => {
      const { first } = await sendDraftThrough(harness, { maxRecipients: 2 })(
        draftRaw("To: friends: ana@example.test, bo@example.test;\r\nBcc: cy@example.test"),
      );
      expect(first.status === "error" && first.code).toBe("limit_exceeded");
      expect(harness.emulator.gmail.sent).toHaveLength(0);
    });
  });

  describe("gmail.send_draft shows the rest of the message from the same bytes it sends", () => {
    it("lists a draft's attachments (name, type, size, digest) beside its text, and sends exactly that", async () => {
      const pdf = Buffer.from("%PDF-1.7 quarterly figures");
      const raw = [
        `From: ${OWNER}`,
        "To: ana@example.test",
        "Subject: Figures",
        'Content-Type: multipart/mixed; boundary="b1"',
        "",
        "--b1",
        "Content-Type: text/plain; charset=UTF-8",
        "",
        "See attached.",
        "--b1",
        'Content-Type: application/pdf; name="q3.pdf"',
        'Content-Disposition: attachment; filename="q3.pdf"',
        "Content-Transfer-Encoding: base64",
        "",
        pdf.toString("base64"),
        "--b1--",
        "",
      ].join("\r\n");
      const { preview, delivered } = await sendDraftThrough(harness)(raw);
      expect(preview?.body?.trimEnd()).toBe("See attached.");
      expect(preview?.details).toMatchObject({
        subject: "Figures",
        attachments: [{ filename: "q3.pdf", mimeType: "application/pdf", bytes: pdf.length, sha256: createHash("sha256").update(pdf).digest("hex") }],
      });
      expect(delivered).toEqual({ to: ["ana@example.test"], cc: [], bcc: [] });
      expect(harness.emulator.gmail.sent[0]?.attachments).toEqual([{ filename: "q3.pdf", mimeType: "application/pdf", size: pdf.length }]);
    });

    it("refuses a draft whose MIME structure does not parse (nested past the limit), nothing sent", async () => {
      let body = "Content-Type: text/plain\r\n\r\nhidden\r\n";
      for (let i = 0; i < 20; i++) body = `Content-Type: multipart/mixed; boundary="n${i}"\r\n\r\n--n${i}\r\n${body}--n${i}--\r\n`;
      const { first } = await sendDraftThrough(harness)(`From: ${OWNER}\r\nTo: ana@example.test\r\nSubject: Deep\r\n${body}`);
      expect(first.status === "error" && [first.code, first.boundary]).toEqual(["preview_invalid", "pre_effect_refusal"]);
      expect(harness.emulator.gmail.sent).toHaveLength(0);
    });

    it("shows the text of an HTML-only draft", async () => {
      const raw = `From: ${OWNER}\r\nTo: ana@example.test\r\nSubject: Hi\r\nContent-Type: text/html; charset=UTF-8\r\n\r\n<p>Hello <b>Ana</b></p>\r\n`;
      const { preview } = await sendDraftThrough(harness)(raw);
      expect(preview?.body).toContain("Hello");
      expect(preview?.body).not.toContain("<b>");
    });
  });

  describe("gmail.send_message and gmail.create_draft take one bare address per entry, read by the same parser", () => {
    const smuggled: readonly (readonly [string, Record<string, string[]>])[] = [
      ["two addresses with a comma", { to: ["ana@example.test, mallory@evil.test"] }],
      ["two addresses with a semicolon", { cc: ["ana@example.test; mallory@evil.test"] }],
      ["two addresses with a space", { bcc: ["ana@example.test mallory@evil.test"] }],
      ["a display name", { to: ["Ana <ana@example.test>"] }],
      ["a quoted local part", { to: ['"mallory"@evil.test'] }],
      ["a group", { to: ["friends: ana@example.test;"] }],
      ["a comment", { to: ["ana@example.test (mallory@evil.test)"] }],
      ["an encoded word", { to: [`${word("mallory@evil.test")}`] }],
      ["surrounding space", { to: [" ana@example.test"] }],
      ["a percent-relay address", { to: ["mallory%evil.test@example.test"] }],
      ["a bang-path address", { bcc: ["evil.test!mallory@example.test"] }],
    ];

    for (const [name, fields] of smuggled) {
      it(`refuses ${name} in a recipient entry, before any request`, async () => {
        const gate = gmailGate(harness);
        for (const tool of ["gmail.send_message", "gmail.create_draft"]) {
          const result = await gate.invoke(tool, { to: ["ana@example.test"], subject: "Hi", body: "x", ...fields }, call);
          expect(result.status === "error" && result.code, tool).toBe("invalid_input");
        }
        expect(harness.emulator.requests.filter((r) => r.endpoint.startsWith("gmail."))).toHaveLength(0);
      });
    }

    it("previews exactly the recipients the composed message is delivered to", async () => {
      const gate = gmailGate(harness);
      const input = { to: ["ana@example.test", "Bo@Example.test"], cc: ["cy@example.test"], bcc: ["di@example.test"], subject: "Hi", body: "x" };
      const first = await gate.invoke("gmail.send_message", input, call);
      expect(first.status).toBe("approval_required");
      if (first.status !== "approval_required") return;
      const seen = { to: ["ana@example.test", "bo@example.test"], cc: ["cy@example.test"], bcc: ["di@example.test"] };
      expect(first.preview.details).toMatchObject(seen);
      const grant = await grantAsOwner(gate, first.requestId);
      expect((await gate.invoke("gmail.send_message", input, { ...call, approval: grant })).status).toBe("ok");
      expect(harness.emulator.gmail.sent[0]).toMatchObject(seen);
    });
  });
});
