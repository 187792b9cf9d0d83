import { randomBytes } from "node:crypto";
import { addressParser } from "postal-mime";

/** One node of a parsed RFC 2822 / MIME message. */
export interface MimePart {
  /** Header fields in order, values unfolded (not decoded). */
  readonly headers: readonly (readonly [string, string])[];
  /** Lower-case `type/subtype`; `text/plain` when absent. */
  readonly mimeType: string;
  readonly params: Readonly<Record<string, string>>;
  /** The decoded body of a leaf (empty for multiparts). */
  readonly body: Buffer;
  readonly parts: readonly MimePart[];
  readonly filename: string;
}

/** Parse a message. Lenient where real mail is (LF line ends, missing headers); never throws on content. */
export function parseMime(raw: Buffer, depth = 0): MimePart {
  const text = raw.toString("latin1");
  const split = /\r?\n\r?\n/.exec(text);
  const headerText = split ? text.slice(0, split.index) : text;
  const bodyBytes = split ? raw.subarray(split.index + split[0].length) : Buffer.alloc(0);
  const headers = parseHeaders(headerText);
  const [mimeType, params] = parseContentType(headerValue(headers, "content-type") ?? "text/plain");
  const disposition = headerValue(headers, "content-disposition");
  const filename = decodeWords(paramOf(disposition ?? "", "filename") ?? params["name"] ?? "");
  if (mimeType.startsWith("multipart/") && params["boundary"] && depth < 16) {
    return {
      headers,
      mimeType,
      params,
      body: Buffer.alloc(0),
      parts: splitMultipart(bodyBytes, params["boundary"]).map((p) => parseMime(p, depth + 1)),
      filename,
    };
  }
  const encoding = (headerValue(headers, "content-transfer-encoding") ?? "7bit").trim().toLowerCase();
  return { headers, mimeType, params, body: decodeTransfer(bodyBytes, encoding), parts: [], filename };
}

function parseHeaders(text: string): [string, string][] {
  const out: [string, string][] = [];
  for (const line of text.split(/\r?\n/)) {
    if (/^[ \t]/.test(line) && out.length > 0) {
      const last = out[out.length - 1]!;
      last[1] = `${last[1]} ${line.trim()}`;
      continue;
    }
    const colon = line.indexOf(":");
    if (colon <= 0) continue;
    // Header bytes are taken as UTF-8 (RFC 6532) when they are.
    const value = Buffer.from(line.slice(colon + 1).trim(), "latin1").toString("utf8");
    out.push([line.slice(0, colon).trim(), value]);
  }
  return out;
}

export function headerValue(headers: readonly (readonly [string, string])[], name: string): string | undefined {
  const lower = name.toLowerCase();
  return headers.find(([n]) => n.toLowerCase() === lower)?.[1];
}

function parseContentType(value: string): [string, Record<string, string>] {
  const [type = "text/plain", ...rest] = value.split(";");
  const params: Record<string, string> = {};
  for (const piece of rest) {
    const eq = piece.indexOf("=");
    if (eq <= 0) continue;
    params[piece.slice(0, eq).trim().toLowerCase()] = piece
      .slice(eq + 1)
      .trim()
      .replace(/^"(.*)"$/, "$1");
  }
  return [type.trim().toLowerCase() || "text/plain", params];
}

function paramOf(value: string, name: string): string | undefined {
  return parseContentType(`x/x;${value.split(";").slice(1).join(";")}`)[1][name];
}

function splitMultipart(body: Buffer, boundary: string): Buffer[] {
  const text = body.toString("latin1");
  const delimiter = `--${boundary}`;
  const pieces = text.split(new RegExp(`(?:^|\\r?\\n)${escapeRegExp(delimiter)}`));
  const parts: Buffer[] = [];
  for (const piece of pieces.slice(1)) {
    if (piece.startsWith("--")) break;
    parts.push(Buffer.from(piece.replace(/^[ \t]*\r?\n/, ""), "latin1"));
  }
  return parts;
}

function decodeTransfer(body: Buffer, encoding: string): Buffer {
  if (encoding === "base64") return Buffer.from(body.toString("latin1").replace(/[^A-Za-z0-9+/=]/g, ""), "base64");
  if (encoding === "quoted-printable") {
    const text = body.toString("latin1").replace(/=\r?\n/g, "");
    return Buffer.from(
      text.replace(/=([0-9A-Fa-f]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16))),
      "latin1",
    );
  }
  return body;
}

/** Decode RFC 2047 encoded words (`=?UTF-8?B?…?=`, `=?UTF-8?Q?…?=`). */
export function decodeWords(value: string): string {
  return value
    .replace(/(=\?[^?]+\?[bBqQ]\?[^?]*\?=)\s+(?==\?)/g, "$1")
    .replace(/=\?([^?]+)\?([bBqQ])\?([^?]*)\?=/g, (_, charset: string, kind: string, text: string) => {
      const bytes =
        kind.toUpperCase() === "B"
          ? Buffer.from(text, "base64")
          : Buffer.from(
              text.replace(/_/g, " ").replace(/=([0-9A-Fa-f]{2})/g, (__, hex: string) => String.fromCharCode(parseInt(hex, 16))),
              "latin1",
            );
      return /^utf-?8$/i.test(charset) ? bytes.toString("utf8") : bytes.toString("latin1");
    });
}

/** The text of a leaf, decoded from its charset (UTF-8 and Latin-1 understood). */
export function textOf(part: MimePart): string {
  const charset = (part.params["charset"] ?? "utf-8").toLowerCase();
  return charset === "iso-8859-1" || charset === "latin1" || charset === "us-ascii" ? part.body.toString("latin1") : part.body.toString("utf8");
}

/** Every leaf, depth first. */
export function leavesOf(part: MimePart): MimePart[] {
  return part.parts.length === 0 ? [part] : part.parts.flatMap(leavesOf);
}

/** The text body: the text/plain leaf, or the text/html one with its tags removed; attachments are not read. */
export function plainTextOf(mime: MimePart): string {
  const leaves = leavesOf(mime).filter((p) => p.filename === "");
  const plain = leaves.find((p) => p.mimeType === "text/plain");
  if (plain) return textOf(plain);
  const html = leaves.find((p) => p.mimeType === "text/html");
  return html ? textOf(html).replace(/<[^>]*>/g, " ") : "";
}

/**
 * Every address in every header called `name` (To, Cc, Bcc may each occur more than once on the
 * wire), groups flattened, lower-cased: what a mail system delivers to. Read by a maintained
 * address parser (the one `postal-mime` uses), which decodes encoded words the way mail software does.
 */
export function recipientsIn(headers: readonly (readonly [string, string])[], name: string): string[] {
  const lower = name.toLowerCase();
  return headers
    .filter(([n]) => n.toLowerCase() === lower)
    .flatMap(([, value]) => addressParser(value, { flatten: true }))
    .map((entry) => (entry.address ?? "").toLowerCase())
    .filter((address) => address !== "");
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
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
