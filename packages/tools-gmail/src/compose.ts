/**
 * Composing a message: nodemailer's message composer builds the RFC 5322 bytes (headers, RFC 2047
 * encoded words, multipart, base64), and everything checked or shown is read back from those bytes
 * — recipients by the family's one address parser, text and attachments by `postal-mime`.
 */
import MailComposer from "nodemailer/lib/mail-composer";
import type MimeNode from "nodemailer/lib/mime-node";
import { ToolError } from "@toolgate/core";
import { z } from "zod";
import { sha256 } from "./digest.js";
import { contentOf } from "./message-content.js";
import { recipientAllowed, type GmailConfig } from "./options.js";
import { isSingleAddress, readWireHeaders, recipientAddresses, type WireHeaders } from "./recipients.js";

export { sha256 } from "./digest.js";

const NO_CONTROL = /^[^\u0000-\u0008\u000a-\u001f\u007f]*$/;

/** A bare address, as the family's one address parser reads it. CR, LF and every other control character are refused (header injection). */
export const addressSchema = z
  .string()
  .max(254)
  .refine((s) => !/[\r\n\u0000-\u001f\u007f]/.test(s), "must not contain line breaks or control characters (header injection)")
  .refine(isSingleAddress, "must be one bare email address like name@example.com (no display name, no list, no group)")
  // RFC 5322 dot-atom: a local part with a leading, trailing or doubled dot is written quoted by the composer, and a quoted local part is refused.
  .refine((s) => !/^\.|\.\.|\.@/.test(s), "must not start or end its local part with a dot or hold two dots in a row")
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
    mimeType: z
      .string()
      .regex(/^[a-z0-9][a-z0-9!#$&^_.+-]{0,126}\/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}$/i, "must be a MIME type like application/pdf")
      // A message/* or multipart/* part is read as part of the message (its text joins the body), not as a file.
      .refine((t) => !/^(message|multipart)\//i.test(t), "must be a file type, not message/* or multipart/*"),
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

/** The parts of a message that vary from one composition to the next: its date, Message-ID and multipart boundary. */
interface Envelope {
  readonly date: Date;
  readonly messageId: string;
  readonly boundary: string;
}

/** The envelope of every preview (a preview must come out the same each time it is built); a send gets a fresh one. */
const PREVIEW_ENVELOPE: Envelope = { date: new Date(0), messageId: "<preview@toolgate.invalid>", boundary: "0".repeat(16) };

/** What the human approved and the send must match: the digest of every fact the preview showed. */
const planSchema = z.object({ factsSha256: z.string().regex(/^[0-9a-f]{64}$/) });

/** The message tree as nodemailer's composer builds it. Every header value was validated free of CR/LF and control characters. */
function composer(config: GmailConfig, input: ComposeFields, envelope?: Envelope): MimeNode {
  const node = new MailComposer({
    ...(config.from ? { from: config.from } : {}),
    to: input.to,
    ...(input.cc && input.cc.length > 0 ? { cc: input.cc } : {}),
    ...(input.bcc && input.bcc.length > 0 ? { bcc: input.bcc } : {}),
    subject: input.subject,
    ...(input.inReplyTo ? { inReplyTo: input.inReplyTo, references: input.inReplyTo } : {}),
    // A Buffer, so an empty body is still a text part; base64, so the bytes arrive exactly as approved.
    text: Buffer.from(input.body, "utf8"),
    encoding: "base64",
    attachments: (input.attachments ?? []).map((a) => ({
      filename: a.filename,
      contentType: a.mimeType,
      content: Buffer.from(a.contentBase64, "base64"),
      contentDisposition: "attachment",
      contentTransferEncoding: "base64",
    })),
    ...(envelope ? { date: envelope.date, messageId: envelope.messageId, baseBoundary: envelope.boundary } : {}),
    newline: "\r\n",
    disableFileAccess: true,
    disableUrlAccess: true,
  }).compile();
  // Gmail reads Bcc from the message it is given (and removes it before delivery).
  node.keepBcc = true;
  return node;
}

/** The composed message's header section read back by the same parser `send_draft` uses: the recipients are those the wire carries. */
export function wireHeadersOf(config: GmailConfig, input: ComposeFields): WireHeaders {
  return readWireHeaders(Buffer.from(`${composer(config, input, PREVIEW_ENVELOPE).buildHeaders()}\r\n\r\n`, "utf8"));
}

/** Every recipient of the composed message, lower-cased. */
export function recipientsOf(config: GmailConfig, input: ComposeFields): string[] {
  return recipientAddresses(wireHeadersOf(config, input));
}

/** Compose the message (with `envelope`, else a fresh date, Message-ID and boundary): its bytes, and what a reader sees in them. */
export async function composeMessage(config: GmailConfig, input: ComposeFields, envelope?: Envelope) {
  const bytes = await composer(config, input, envelope).build();
  return { bytes, wire: readWireHeaders(bytes), ...(await contentOf(bytes)) };
}

/** Every fact of a composed message a human approves: sender, every recipient, subject, text and attachments with their digests. */
function factsOf(message: Awaited<ReturnType<typeof composeMessage>>, input: ComposeFields) {
  const { wire } = message;
  const addresses = (list: WireHeaders["to"]) => list.map((m) => m.address);
  return {
    from: wire.from.length > 0 ? addresses(wire.from).join(", ") : "the connected Google account",
    to: addresses(wire.to),
    cc: addresses(wire.cc),
    bcc: addresses(wire.bcc),
    subject: wire.subject,
    bodySha256: sha256(Buffer.from(message.text, "utf8")),
    bodyBytes: Buffer.byteLength(message.text, "utf8"),
    attachments: message.attachments,
    ...(input.threadId ? { threadId: input.threadId } : {}),
  };
}

/** The preview of a send, every fact read back from the composed message; the plan binds the send to those facts. */
export async function composePreview(config: GmailConfig, input: ComposeFields) {
  const message = await composeMessage(config, input, PREVIEW_ENVELOPE);
  const details = factsOf(message, input);
  return {
    summary: `Send an email to ${recipientAddresses(message.wire).length} recipient(s): ${JSON.stringify(details.subject)} (cannot be undone)`,
    details,
    body: message.text,
    plan: { factsSha256: sha256(JSON.stringify(details)) },
  };
}

/** A freshly composed message, base64url, as Gmail's `raw` wants it (drafts: nothing to match). */
export async function buildRaw(config: GmailConfig, input: ComposeFields): Promise<string> {
  return (await composeMessage(config, input)).bytes.toString("base64url");
}

/**
 * The message to send, base64url: composed afresh (its own date, Message-ID and boundary) and read
 * back; `conflict` unless every fact a reader sees in it is what the human approved.
 */
export async function approvedRaw(config: GmailConfig, input: ComposeFields, plan: unknown): Promise<string> {
  const approved = planSchema.safeParse(plan);
  if (!approved.success) throw new ToolError("conflict", "no approved message to send; ask for approval again", { boundary: "pre_effect_refusal" });
  const message = await composeMessage(config, input);
  if (sha256(JSON.stringify(factsOf(message, input))) !== approved.data.factsSha256)
    throw new ToolError("conflict", "the message to send is not the one approved; ask for approval again", { boundary: "pre_effect_refusal" });
  return message.bytes.toString("base64url");
}
