/**
 * Round trip of the composer: a message `send_message` / `create_draft` composes, parsed back by
 * `postal-mime` (what the emulator and mail software read), yields exactly the recipients, subject,
 * body and attachments of the input; the preview a human approves shows exactly that parse; the
 * message then sent carries the same facts; and every header is RFC 5322/2047-conformant
 * (encoded words of at most 75 characters, lines of at most 78).
 */
import fc from "fast-check";
import PostalMime from "postal-mime";
import { describe, expect, it } from "vitest";
import { approvedRaw, composeMessage, composePreview, composeSchema } from "./compose.js";
import { composeInput } from "./fixtures/compose-inputs.js";
import { sha256 } from "./digest.js";
import { resolveOptions } from "./options.js";

const config = resolveOptions({ from: "owner@example.test", attachments: true, maxRecipients: 50 });
const input = composeInput(composeSchema(config, false));

describe("compose, parsed back by postal-mime", () => {
  it("yields exactly the input's recipients, subject, body and attachments, as previewed and as sent", async () => {
    await fc.assert(
      fc.asyncProperty(input, async (i) => {
        const preview = await composePreview(config, i);
        const { bytes } = await composeMessage(config, i, undefined);
        for (const raw of [bytes, Buffer.from(await approvedRaw(config, i, preview.plan), "base64url")]) {
          const parsed = await PostalMime.parse(raw, { attachmentEncoding: "arraybuffer" });
          const seen = (field: "to" | "cc" | "bcc") => (parsed[field] ?? []).map((a) => a.address?.toLowerCase());
          expect({ to: seen("to"), cc: seen("cc"), bcc: seen("bcc") }).toEqual({
            to: i.to.map((a) => a.toLowerCase()),
            cc: (i.cc ?? []).map((a) => a.toLowerCase()),
            bcc: (i.bcc ?? []).map((a) => a.toLowerCase()),
          });
          // Surrounding white space is not part of an unstructured header's text (RFC 5322 §3.2.2 folding); all else arrives as written.
          expect((parsed.subject ?? "").trim()).toBe(i.subject.trim());
          expect(parsed.text ?? "").toBe(i.body);
          const files = parsed.attachments.map((a) => ({ filename: a.filename, mimeType: a.mimeType, sha256: sha256(Buffer.from(a.content as ArrayBuffer)) }));
          expect(files).toEqual(
            (i.attachments ?? []).map((a) => ({
              filename: a.filename,
              mimeType: a.mimeType.toLowerCase(),
              sha256: sha256(Buffer.from(a.contentBase64, "base64")),
            })),
          );
          // The preview shows the parse: what the human approves is what a reader of the sent bytes sees.
          expect(preview.details).toMatchObject({
            to: seen("to"),
            cc: seen("cc"),
            bcc: seen("bcc"),
            subject: parsed.subject ?? "",
            bodySha256: sha256(Buffer.from(parsed.text ?? "", "utf8")),
            attachments: files.map((f, n) => ({ ...f, filename: f.filename ?? "", bytes: Buffer.from(parsed.attachments[n]!.content as ArrayBuffer).length })),
          });
          expect(preview.body).toBe(parsed.text ?? "");
          const head = raw.toString("latin1").split("\r\n\r\n")[0]!;
          for (const line of head.split("\r\n")) expect(line.length).toBeLessThanOrEqual(78);
          for (const word of head.match(/=\?[^?\s]+\?[BQbq]\?[^?\s]*\?=/g) ?? []) expect(word.length).toBeLessThanOrEqual(75);
        }
      }),
      { seed: 22_001, numRuns: 150 },
    );
  }, 120_000);
});
