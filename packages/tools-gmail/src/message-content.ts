/** What a human reads of a message: one `postal-mime` parse of the exact bytes that are sent. */
import { ToolError } from "@toolgate/core";
import PostalMime from "postal-mime";
import { htmlToText } from "./read.js";
import { sha256 } from "./digest.js";

/** One attachment as the parse yields it: its name, type, size and SHA-256 of the decoded bytes. */
export interface AttachmentSeen {
  readonly filename: string;
  readonly mimeType: string;
  readonly bytes: number;
  readonly sha256: string;
}

/** The text a human reads (text/plain, else the HTML's text) and every attachment, digested. */
export async function contentOf(bytes: Buffer): Promise<{ text: string; attachments: AttachmentSeen[] }> {
  let email: Awaited<ReturnType<typeof PostalMime.parse>>;
  try {
    email = await PostalMime.parse(bytes, { maxNestingDepth: 16, attachmentEncoding: "arraybuffer" });
  } catch {
    throw new ToolError("preview_invalid", "the draft cannot be read one way: its MIME structure does not parse", { boundary: "pre_effect_refusal" });
  }
  const text = email.text ?? (email.html ? htmlToText(email.html) : "");
  const attachments = email.attachments.map((a) => {
    const data = Buffer.from(typeof a.content === "string" ? Buffer.from(a.content, "utf8") : new Uint8Array(a.content as ArrayBuffer));
    return { filename: a.filename ?? "", mimeType: a.mimeType, bytes: data.length, sha256: sha256(data) };
  });
  return { text, attachments };
}
