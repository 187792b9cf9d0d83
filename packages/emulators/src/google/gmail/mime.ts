/**
 * A message as Gmail reads it, through `postal-mime` (what mail software parses): its part tree
 * (for `format=full`), who it is delivered to, its subject, text and attachments. Parsing is
 * asynchronous: the mailbox parses a message before a route handles it (see `Mailbox.prepare`).
 */
import { createHash, randomBytes } from "node:crypto";
import PostalMime, { decodeWords, type Address } from "postal-mime";

export { decodeWords };

/** One node of a parsed RFC 2822 / MIME message. */
export interface MimePart {
  /** Header fields in order, values unfolded (not decoded). */
  readonly headers: readonly (readonly [string, string])[];
  /** Lower-case `type/subtype`; `text/plain` when absent. */
  readonly mimeType: string;
  /** The decoded body of a leaf (empty for multiparts). */
  readonly body: Buffer;
  readonly parts: readonly MimePart[];
  readonly filename: string;
}

/** A whole message: its root part, and what a reader sees in it. */
export interface ParsedMessage extends MimePart {
  /** Every address of every To, Cc and Bcc header, groups flattened, lower-cased: what a mail system delivers to. */
  readonly to: readonly string[];
  readonly cc: readonly string[];
  readonly bcc: readonly string[];
  /** Decoded. */
  readonly subject: string;
  /** The text body: text/plain, else the HTML's text. */
  readonly text: string;
  readonly attachments: readonly { readonly filename: string; readonly mimeType: string; readonly size: number }[];
}

/** The part tree `postal-mime` 4.0 builds while parsing (not in its typings; the version is pinned and a test reads a tree). */
interface ParserNode {
  readonly headers: readonly { readonly originalKey: string; readonly value: string }[];
  readonly contentType: { readonly parsed: { readonly value: string; readonly params: Readonly<Record<string, string>> } };
  readonly contentDisposition: { readonly parsed: { readonly params: Readonly<Record<string, string>> } };
  readonly content: ArrayBuffer | null;
  readonly childNodes: readonly ParserNode[];
}

/** Parse a message as mail software does; rejects only what `postal-mime` refuses (nesting past 64 parts deep, 2 MiB of headers). */
export async function parseMessage(raw: Buffer): Promise<ParsedMessage> {
  const parser = new PostalMime({ maxNestingDepth: 64, attachmentEncoding: "arraybuffer" });
  const email = await parser.parse(raw);
  const root = (parser as unknown as { root?: ParserNode }).root;
  if (!root || !Array.isArray(root.childNodes)) throw new Error("postal-mime no longer keeps its part tree where 4.0 did");
  const addresses = (list: readonly Address[] | undefined): string[] =>
    (list ?? [])
      .flatMap((a) => (a.group ? a.group : [a]))
      .map((m) => (m.address ?? "").toLowerCase())
      .filter((a) => a !== "");
  return {
    ...partOf(root),
    to: addresses(email.to),
    cc: addresses(email.cc),
    bcc: addresses(email.bcc),
    subject: email.subject ?? "",
    text: email.text ?? "",
    attachments: email.attachments.map((a) => ({ filename: a.filename ?? "", mimeType: a.mimeType, size: (a.content as ArrayBuffer).byteLength })),
  };
}

function partOf(node: ParserNode): MimePart {
  const params = node.contentDisposition.parsed.params;
  const name = params["filename"] || node.contentType.parsed.params["name"] || "";
  return {
    headers: node.headers.map((h) => [h.originalKey, h.value] as const),
    mimeType: node.contentType.parsed.value || "text/plain",
    body: node.content ? Buffer.from(node.content) : Buffer.alloc(0),
    parts: node.childNodes.map(partOf),
    filename: decodeWords(name),
  };
}

/** A key for a message's bytes, to find its parse again. */
export function rawKey(raw: Buffer): string {
  return createHash("sha256").update(raw).digest("hex");
}

export function headerValue(headers: readonly (readonly [string, string])[], name: string): string | undefined {
  const lower = name.toLowerCase();
  return headers.find(([n]) => n.toLowerCase() === lower)?.[1];
}

/** Every leaf, depth first. */
export function leavesOf(part: MimePart): MimePart[] {
  return part.parts.length === 0 ? [part] : part.parts.flatMap(leavesOf);
}

/** What a fixture gives to build a message. */
export interface ComposeInput {
  readonly from: string;
  readonly to: readonly string[];
  readonly cc?: readonly string[];
  readonly subject: string;
  readonly text: string;
  readonly html?: string;
  readonly date: Date;
  readonly messageId?: string;
  readonly headers?: Readonly<Record<string, string>>;
  readonly attachments?: readonly { readonly filename: string; readonly mimeType: string; readonly content: string | Buffer }[];
}

/** Build an RFC 2822 message (fixtures only; the families compose their own). */
export function composeMime(input: ComposeInput): Buffer {
  const lines: string[] = [
    `From: ${input.from}`,
    `To: ${input.to.join(", ")}`,
    ...(input.cc && input.cc.length > 0 ? [`Cc: ${input.cc.join(", ")}`] : []),
    `Subject: ${encodeWord(input.subject)}`,
    `Date: ${input.date.toUTCString().replace("GMT", "+0000")}`,
    `Message-ID: ${input.messageId ?? `<${randomBytes(8).toString("hex")}@emulator.test>`}`,
    ...Object.entries(input.headers ?? {}).map(([k, v]) => `${k}: ${v}`),
    "MIME-Version: 1.0",
  ];
  const textPart = leaf("text/plain; charset=UTF-8", Buffer.from(input.text, "utf8"));
  const body = input.html === undefined ? textPart : multipart("alternative", [textPart, leaf("text/html; charset=UTF-8", Buffer.from(input.html, "utf8"))]);
  const all =
    input.attachments && input.attachments.length > 0
      ? multipart("mixed", [
          body,
          ...input.attachments.map((a) =>
            leaf(
              `${a.mimeType}; name="${a.filename}"`,
              typeof a.content === "string" ? Buffer.from(a.content, "utf8") : a.content,
              `attachment; filename="${a.filename}"`,
            ),
          ),
        ])
      : body;
  return Buffer.from(`${lines.join("\r\n")}\r\n${all}`, "utf8");
}

function leaf(contentType: string, data: Buffer, disposition?: string): string {
  const base64 = data.toString("base64").replace(/.{1,76}/g, "$&\r\n");
  return `Content-Type: ${contentType}\r\n${disposition ? `Content-Disposition: ${disposition}\r\n` : ""}Content-Transfer-Encoding: base64\r\n\r\n${base64}`;
}

function multipart(kind: string, parts: readonly string[]): string {
  const boundary = `emu-${randomBytes(8).toString("hex")}`;
  return `Content-Type: multipart/${kind}; boundary="${boundary}"\r\n\r\n${parts.map((p) => `--${boundary}\r\n${p}`).join("\r\n")}\r\n--${boundary}--\r\n`;
}

function encodeWord(text: string): string {
  return /^[\x20-\x7e]*$/.test(text) ? text : `=?UTF-8?B?${Buffer.from(text, "utf8").toString("base64")}?=`;
}
