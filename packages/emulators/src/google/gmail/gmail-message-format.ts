/**
 * A message as the mailbox stores it, and as `messages.get` answers with it in each `format`
 * (`minimal`, `full`, `raw`, `metadata`), within what the caller's scopes allow.
 */
import type { gmail_v1 } from "@googleapis/gmail";
import { ApiError, badRequest } from "../http.js";
import { GMAIL_METADATA_SCOPE } from "../scopes.js";
import { decodeWords, type MimePart, type ParsedMessage } from "./mime.js";

/** @internal one message of a mailbox. */
export interface StoredMessage {
  readonly id: string;
  threadId: string;
  labelIds: Set<string>;
  internalDate: number;
  raw: Buffer;
  /** The parse of `raw` (see `Mailbox.prepare`). */
  readonly mime: ParsedMessage;
  historyId: number;
}

const FORMATS = new Set(["minimal", "full", "raw", "metadata"]);

/** True when the only Gmail scope granted is `gmail.metadata`: no search, no bodies. */
export function metadataOnly(scopes: readonly string[]): boolean {
  return scopes.includes(GMAIL_METADATA_SCOPE) && !scopes.some((s) => s !== GMAIL_METADATA_SCOPE && (s.includes("gmail.") || s === "https://mail.google.com/"));
}

/** The message in the `format` (and `metadataHeaders`) the request asks for. */
export function formatMessage(m: StoredMessage, params: URLSearchParams, scopes: readonly string[]): gmail_v1.Schema$Message {
  const format = params.get("format") ?? "full";
  if (!FORMATS.has(format)) throw badRequest(`Invalid value for format: ${format}`, "invalidParameter");
  if ((format === "full" || format === "raw") && metadataOnly(scopes))
    throw new ApiError(403, "forbidden", `Metadata scope doesn't allow format ${format.toUpperCase()}`);
  const base: gmail_v1.Schema$Message = {
    id: m.id,
    threadId: m.threadId,
    labelIds: [...m.labelIds],
    snippet: m.mime.text.replace(/\s+/g, " ").trim().slice(0, 200),
    sizeEstimate: m.raw.length,
    historyId: String(m.historyId),
    internalDate: String(m.internalDate),
  };
  if (format === "minimal") return base;
  if (format === "raw") return { ...base, raw: m.raw.toString("base64url") };
  if (format === "metadata") {
    const wanted = params.getAll("metadataHeaders").map((h) => h.toLowerCase());
    const headers = m.mime.headers.filter(([name]) => wanted.length === 0 || wanted.includes(name.toLowerCase()));
    return { ...base, payload: { partId: "", mimeType: m.mime.mimeType, filename: "", headers: decodedHeaders(headers), body: { size: 0 } } };
  }
  return { ...base, payload: partOf(m.id, m.mime, "") };
}

/** Gmail returns header values with RFC 2047 encoded words decoded. */
function decodedHeaders(headers: readonly (readonly [string, string])[]): gmail_v1.Schema$MessagePartHeader[] {
  return headers.map(([name, value]) => ({ name, value: decodeWords(value) }));
}

function partOf(messageId: string, part: MimePart, partId: string): gmail_v1.Schema$MessagePart {
  const headers = decodedHeaders(part.headers);
  if (part.parts.length > 0) {
    return {
      partId,
      mimeType: part.mimeType,
      filename: "",
      headers,
      body: { size: 0 },
      parts: part.parts.map((child, i) => partOf(messageId, child, partId === "" ? String(i) : `${partId}.${i}`)),
    };
  }
  const body: gmail_v1.Schema$MessagePartBody =
    part.filename !== ""
      ? { attachmentId: `ANGjdJ_${Buffer.from(`${messageId}:${partId}`).toString("base64url")}`, size: part.body.length }
      : { size: part.body.length, data: part.body.toString("base64url") };
  return { partId, mimeType: part.mimeType, filename: part.filename, headers, body };
}
