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
import { approvedRaw, composeMessage, composePreview, composeSchema, type ComposeFields } from "./compose.js";
import { sha256 } from "./digest.js";
import { resolveOptions } from "./options.js";

const config = resolveOptions({ from: "owner@example.test", attachments: true, maxRecipients: 50 });
const schema = composeSchema(config, false);

const address = fc
  .tuple(fc.constantFrom("ana", "Bo.Ek", "x+tag", "o'brien", "a_b-c", "Z9"), fc.constantFrom("example.test", "Mail.Example.Test", "ex-ample.test"))
  .map(([local, domain]) => `${local}@${domain}`);
const list = (min: number) => fc.array(address, { minLength: min, maxLength: 4 });
/** Any well-formed text without controls: a header holds none (the schema refuses them). */
const headerText = fc
  .string({
    unit: fc.oneof(
      fc.constantFrom("a", " ", "\t", "é", "☕", "日", "😀", "=?", "?=", "_", '"', "@", ",", ";", "<", ">"),
      fc.string({ unit: "grapheme", maxLength: 1 }),
    ),
    maxLength: 200,
  })
  .filter((s) => !/[\u0000-\u0008\u000a-\u001f\u007f]/.test(s));
const body = fc.string({
  unit: fc.oneof(fc.constantFrom("\r\n", "\n", "\r", "\t", " ", "é", "😀", "=", "--", "\u0000"), fc.string({ unit: "grapheme", maxLength: 1 })),
  maxLength: 400,
});
const filename = fc
  .string({
    unit: fc.oneof(fc.constantFrom("a", "b", ".", " ", "é", "日", "(", ")", ",", ";", "'", "=?"), fc.string({ unit: "grapheme-ascii", maxLength: 1 })),
    minLength: 1,
    maxLength: 60,
  })
  .filter((s) => /^[^"\\/\u0000-\u001f\u007f]+$/.test(s) && s.trim() === s && s.trim() !== "");
const attachment = fc.record({
  filename,
  mimeType: fc.constantFrom("application/pdf", "image/png", "text/plain", "text/csv", "application/octet-stream", "Application/X-Custom+json"),
  contentBase64: fc.uint8Array({ maxLength: 300 }).map((b) => Buffer.from(b).toString("base64")),
});
const input: fc.Arbitrary<ComposeFields> = fc
  .record({ to: list(1), cc: list(0), bcc: list(0), subject: headerText, body, attachments: fc.array(attachment, { maxLength: 3 }) })
  .map((i) => schema.parse(i));

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
