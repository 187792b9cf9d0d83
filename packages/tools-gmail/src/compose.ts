import { createHash, randomBytes } from "node:crypto";
import { z } from "zod";
import { recipientAllowed, type GmailConfig } from "./options.js";
import { isSingleAddress, readWireHeaders, recipientAddresses, type WireHeaders } from "./recipients.js";

const NO_CONTROL = /^[^\u0000-\u0008\u000a-\u001f\u007f]*$/;

/** A bare address, as the family's one address parser reads it. CR, LF and every other control character are refused (header injection). */
export const addressSchema = z
  .string()
  .max(254)
  .refine((s) => !/[\r\n\u0000-\u001f\u007f]/.test(s), "must not contain line breaks or control characters (header injection)")
  .refine(isSingleAddress, "must be one bare email address like name@example.com (no display name, no list, no group)")
  .meta({ description: "A bare email address, e.g. ana@example.com." });

/** Gmail ids: hex for messages and threads, `r…` for drafts, letters and `_` for labels. */
export const idSchema = z.string().regex(/^[A-Za-z0-9_-]{1,128}$/, "must be a Gmail id");

const attachmentSchema = z
  .object({
    filename: z
      .string()
      .min(1)
      .max(255)
      .regex(/^[^"\\/\u0000-\u001f\u007f]+$/, "must be a plain file name (no quotes, slashes or control characters)"),
    mimeType: z.string().regex(/^[a-z0-9][a-z0-9!#$&^_.+-]{0,126}\/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}$/i, "must be a MIME type like application/pdf"),
    contentBase64: z.string().regex(/^[A-Za-z0-9+/]*={0,2}$/, "must be standard base64"),
  })
  .strict();

/** The fields of a message to compose, attachments aside. */
const composeBase = z.object({
  to: z.array(addressSchema).min(1).meta({ description: "Recipients." }),
  cc: z.array(addressSchema).optional(),
  bcc: z.array(addressSchema).optional(),
  subject: z.string().max(998).regex(NO_CONTROL, "must not contain line breaks or control characters (header injection)").meta({ description: "One line." }),
  body: z.string().max(500_000).meta({ description: "Plain text body." }),
  threadId: idSchema.optional().meta({ description: "Reply within this thread." }),
  inReplyTo: z
    .string()
    .max(998)
    .regex(/^<[^\s<>\u0000-\u001f]+>$/, "must be a Message-ID like <abc@example.com>")
    .optional()
    .meta({ description: "Message-ID header of the message replied to." }),
});

/** Every compose field, attachments included. */
const composeFields = composeBase.extend({ attachments: z.array(attachmentSchema).max(20).optional() });

/** A message `send_message` and `create_draft` compose, as their input schema yields it. */
export type ComposeFields = z.output<typeof composeFields>;

/** The compose input shared by `send_message` and `create_draft`, shaped by the operator's options. */
export function composeSchema(config: GmailConfig, enforceAllowlist: boolean) {
  // The type always admits attachments; the schema (and the JSON Schema a model sees) only when the operator allows them.
  const shaped = (config.attachments ? composeFields : composeBase) as typeof composeFields;
  return shaped.strict().superRefine((input, ctx) => {
    let recipients: string[];
    try {
      recipients = recipientAddresses(wireHeadersOf(config, input));
    } catch (cause) {
      ctx.addIssue({ code: "custom", path: ["to"], message: cause instanceof Error ? cause.message : "the recipients cannot be read" });
      return;
    }
    if (recipients.length > config.maxRecipients) {
      ctx.addIssue({ code: "custom", path: ["to"], message: `at most ${config.maxRecipients} recipients in all (to, cc and bcc); got ${recipients.length}` });
    }
    const attachments = input.attachments ?? [];
    const bytes = attachments.reduce((sum, a) => sum + Math.floor((a.contentBase64.length * 3) / 4), 0);
    if (bytes > config.maxAttachmentBytes)
      ctx.addIssue({ code: "custom", path: ["attachments"], message: `attachments total more than ${config.maxAttachmentBytes} bytes` });
    if (enforceAllowlist && config.allowlist) {
      if (config.allowlist.addresses.size === 0 && config.allowlist.domains.size === 0) {
        ctx.addIssue({ code: "custom", path: ["to"], message: "sending is disabled: the operator's recipient allowlist is empty" });
      } else {
        const refused = recipients.filter((r) => !recipientAllowed(config, r));
        if (refused.length > 0) ctx.addIssue({ code: "custom", path: ["to"], message: `not on the operator's recipient allowlist: ${refused.join(", ")}` });
      }
    }
  });
}

/** The composed message's header section read back by the same parser `send_draft` uses: the recipients are those the wire carries. */
export function wireHeadersOf(config: GmailConfig, input: ComposeFields): WireHeaders {
  return readWireHeaders(Buffer.from(`${composeHeaders(config, input, new Date(0)).join("\r\n")}\r\n\r\n`, "utf8"));
}

/** Every recipient of the composed message, lower-cased. */
export function recipientsOf(config: GmailConfig, input: ComposeFields): string[] {
  return recipientAddresses(wireHeadersOf(config, input));
}

export function sha256(data: string | Buffer): string {
  return createHash("sha256").update(data).digest("hex");
}

/** The facts a human approves before a message leaves: sender, every recipient, subject, exact body digest. */
export function composePreviewDetails(config: GmailConfig, input: ComposeFields): Record<string, unknown> {
  const wire = wireHeadersOf(config, input);
  return {
    from: config.from ?? "the connected Google account",
    to: wire.to.map((m) => m.address),
    cc: wire.cc.map((m) => m.address),
    bcc: wire.bcc.map((m) => m.address),
    subject: input.subject,
    bodySha256: sha256(Buffer.from(input.body, "utf8")),
    bodyBytes: Buffer.byteLength(input.body, "utf8"),
    attachments: (input.attachments ?? []).map((a) => {
      const data = Buffer.from(a.contentBase64, "base64");
      return { filename: a.filename, mimeType: a.mimeType, bytes: data.length, sha256: sha256(data) };
    }),
    ...(input.threadId ? { threadId: input.threadId } : {}),
  };
}

/** RFC 2822 message, base64url, as Gmail's `raw` wants it. Every header value was validated free of CR/LF. */
export function buildRaw(config: GmailConfig, input: ComposeFields, date: Date = new Date()): string {
  const headers = composeHeaders(config, input, date);
  const text = leaf("text/plain; charset=UTF-8", Buffer.from(input.body, "utf8"));
  const attachments = input.attachments ?? [];
  const body =
    attachments.length === 0
      ? text
      : multipart([
          text,
          ...attachments.map((a) =>
            leaf(
              `${a.mimeType}; name="${encodeHeader(a.filename)}"`,
              Buffer.from(a.contentBase64, "base64"),
              `attachment; filename="${encodeHeader(a.filename)}"`,
            ),
          ),
        ]);
  return Buffer.from(`${headers.join("\r\n")}\r\n${body}`, "utf8").toString("base64url");
}

/** The header lines of a composed message. Every value was validated free of CR/LF. */
function composeHeaders(config: GmailConfig, input: ComposeFields, date: Date): string[] {
  return [
    ...(config.from ? [`From: ${config.from}`] : []),
    `To: ${input.to.join(", ")}`,
    ...(input.cc && input.cc.length > 0 ? [`Cc: ${input.cc.join(", ")}`] : []),
    ...(input.bcc && input.bcc.length > 0 ? [`Bcc: ${input.bcc.join(", ")}`] : []),
    `Subject: ${encodeHeader(input.subject)}`,
    `Date: ${date.toUTCString().replace("GMT", "+0000")}`,
    ...(input.inReplyTo ? [`In-Reply-To: ${input.inReplyTo}`, `References: ${input.inReplyTo}`] : []),
    "MIME-Version: 1.0",
  ];
}

function leaf(contentType: string, data: Buffer, disposition?: string): string {
  return `Content-Type: ${contentType}\r\n${disposition ? `Content-Disposition: ${disposition}\r\n` : ""}Content-Transfer-Encoding: base64\r\n\r\n${data.toString("base64").replace(/.{1,76}/g, "$&\r\n")}`;
}

function multipart(parts: readonly string[]): string {
  const boundary = `tg-${randomBytes(12).toString("hex")}`;
  return `Content-Type: multipart/mixed; boundary="${boundary}"\r\n\r\n${parts.map((p) => `--${boundary}\r\n${p}`).join("\r\n")}\r\n--${boundary}--\r\n`;
}

/** RFC 2047 for anything outside printable ASCII. */
function encodeHeader(text: string): string {
  return /^[\x20-\x7e]*$/.test(text) ? text : `=?UTF-8?B?${Buffer.from(text, "utf8").toString("base64")}?=`;
}
