import type { gmail_v1 } from "@googleapis/gmail";
import { decodeWords } from "postal-mime";
import { z } from "zod";

/** A message as the read tools return it. Everything in it was written by someone else. */
export const messageOutput = z.object({
  id: z.string(),
  threadId: z.string(),
  labelIds: z.array(z.string()),
  from: z.string(),
  to: z.string(),
  cc: z.string(),
  subject: z.string(),
  date: z.string(),
  snippet: z.string(),
  body: z.string(),
  bodyTruncated: z.boolean(),
  attachments: z.array(z.object({ filename: z.string(), mimeType: z.string(), bytes: z.number().int() })),
});

export type MessageOutput = z.infer<typeof messageOutput>;

/** A header's value (Gmail returns them decoded; encoded words left over are decoded here, as mail software decodes them). */
export function headerOf(part: gmail_v1.Schema$MessagePart | undefined, name: string): string {
  const lower = name.toLowerCase();
  const value = part?.headers?.find((h) => h.name?.toLowerCase() === lower)?.value ?? "";
  return decodeWords(value);
}

export function toMessageOutput(message: gmail_v1.Schema$Message, maxBodyChars: number): MessageOutput {
  const payload = message.payload;
  const leaves = leavesOf(payload);
  const plain = leaves.find((p) => p.mimeType === "text/plain" && !p.filename);
  const html = leaves.find((p) => p.mimeType === "text/html" && !p.filename);
  const text = plain ? decodeData(plain.body?.data) : html ? htmlToText(decodeData(html.body?.data)) : "";
  return {
    id: message.id ?? "",
    threadId: message.threadId ?? "",
    labelIds: message.labelIds ?? [],
    from: headerOf(payload, "From"),
    to: headerOf(payload, "To"),
    cc: headerOf(payload, "Cc"),
    subject: headerOf(payload, "Subject"),
    date: headerOf(payload, "Date"),
    snippet: message.snippet ?? "",
    body: text.slice(0, maxBodyChars),
    bodyTruncated: text.length > maxBodyChars,
    attachments: leaves.filter((p) => p.filename).map((p) => ({ filename: p.filename ?? "", mimeType: p.mimeType ?? "", bytes: p.body?.size ?? 0 })),
  };
}

function leavesOf(part: gmail_v1.Schema$MessagePart | undefined): gmail_v1.Schema$MessagePart[] {
  if (!part) return [];
  return part.parts && part.parts.length > 0 ? part.parts.flatMap(leavesOf) : [part];
}

function decodeData(data: string | null | undefined): string {
  return data ? Buffer.from(data, "base64url").toString("utf8") : "";
}

/** Readable text of an HTML body: scripts and styles dropped, tags removed, common entities decoded. */
export function htmlToText(html: string): string {
  return html
    .replace(/<(script|style)[\s\S]*?<\/\1>/gi, " ")
    .replace(/<br\s*\/?>|<\/p>/gi, "\n")
    .replace(/<[^>]*>/g, " ")
    .replace(/&nbsp;/g, " ")
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">")
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&amp;/g, "&")
    .replace(/[ \t]+/g, " ")
    .trim();
}
