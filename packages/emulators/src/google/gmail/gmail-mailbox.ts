import type { gmail_v1 } from "@googleapis/gmail";
import { isRecord } from "../../is-record.js";
import { ApiError, badRequest, notFound } from "../http.js";
import { GMAIL_METADATA_SCOPE } from "../scopes.js";
import { addressesIn, composeMime, decodeWords, headerValue, leavesOf, parseMime, textOf, type MimePart } from "./mime.js";
import { labelKey, parseGmailQuery, queryDateMs, type QueryTerm } from "./gmail-query.js";

/** A message in a Gmail fixture. Either `raw` (an RFC 2822 message) or the fields to build one. */
export interface GmailMessageSeed {
  readonly id?: string;
  /** Messages sharing a thread id form one thread; default: a thread of its own. */
  readonly threadId?: string;
  readonly raw?: string;
  readonly from?: string;
  readonly to?: string | readonly string[];
  readonly cc?: readonly string[];
  readonly subject?: string;
  readonly body?: string;
  readonly html?: string;
  /** RFC 3339; default the emulator's clock. */
  readonly date?: string;
  /** Default `["INBOX", "UNREAD"]`. */
  readonly labelIds?: readonly string[];
  readonly attachments?: readonly { readonly filename: string; readonly mimeType: string; readonly content: string }[];
  readonly headers?: Readonly<Record<string, string>>;
}

export interface GmailFixture {
  /** The mailbox owner's address; default `owner@example.test`. */
  readonly address?: string;
  readonly labels?: readonly { readonly id?: string; readonly name: string }[];
  readonly messages?: readonly GmailMessageSeed[];
  /** Drafts, each a message seed with its draft id (labelled DRAFT). */
  readonly drafts?: readonly (GmailMessageSeed & { readonly draftId: string })[];
}

/** A message the mailbox really sent (through messages.send or drafts.send). */
export interface SentMessage {
  readonly id: string;
  readonly threadId: string;
  readonly from: string;
  readonly to: readonly string[];
  readonly cc: readonly string[];
  readonly bcc: readonly string[];
  readonly subject: string;
  /** The text/plain body (or the html with tags removed when there is none). */
  readonly text: string;
  readonly attachments: readonly { readonly filename: string; readonly mimeType: string; readonly size: number }[];
  readonly headers: readonly (readonly [string, string])[];
  readonly viaDraft: boolean;
}

interface StoredMessage {
  readonly id: string;
  threadId: string;
  labelIds: Set<string>;
  internalDate: number;
  raw: Buffer;
  mime: MimePart;
  historyId: number;
}

const SYSTEM_LABELS = ["INBOX", "SENT", "DRAFT", "TRASH", "SPAM", "UNREAD", "STARRED", "IMPORTANT", "CATEGORY_PERSONAL", "CATEGORY_SOCIAL", "CATEGORY_PROMOTIONS", "CATEGORY_UPDATES", "CATEGORY_FORUMS"];
const UNAPPLICABLE = new Set(["DRAFT", "SENT"]);
const FORMATS = new Set(["minimal", "full", "raw", "metadata"]);

/** @internal one emulated Gmail mailbox. */
export class Mailbox {
  readonly address: string;
  private readonly messages = new Map<string, StoredMessage>();
  private readonly drafts = new Map<string, string>();
  private readonly labels = new Map<string, gmail_v1.Schema$Label>();
  private readonly sentLog: SentMessage[] = [];
  private counter = 0x18c0000000000;
  private draftCounter = 1;
  private labelCounter = 1;
  private history = 1000;

  constructor(
    fixture: GmailFixture,
    private readonly clock: () => number,
  ) {
    this.address = (fixture.address ?? "owner@example.test").toLowerCase();
    for (const id of SYSTEM_LABELS) this.labels.set(id, { id, name: id, type: "system", messageListVisibility: "show", labelListVisibility: "labelShow" });
    for (const label of fixture.labels ?? []) this.createLabel({ name: label.name, ...(label.id ? { id: label.id } : {}) });
    for (const seed of fixture.messages ?? []) this.seed(seed);
    for (const { draftId, ...seed } of fixture.drafts ?? []) {
      if (this.drafts.has(draftId)) throw new Error(`duplicate draft id ${draftId}`);
      this.drafts.set(draftId, this.seed({ ...seed, labelIds: ["DRAFT"] }));
    }
  }

  /** Messages really sent, oldest first. */
  get sent(): readonly SentMessage[] {
    return [...this.sentLog];
  }

  get messageCount(): number {
    return this.messages.size;
  }

  labelIdsOf(id: string): readonly string[] | undefined {
    const m = this.messages.get(id);
    return m ? [...m.labelIds] : undefined;
  }

  draftIds(): readonly string[] {
    return [...this.drafts.keys()];
  }

  seed(seed: GmailMessageSeed): string {
    const date = seed.date ? new Date(seed.date) : new Date(this.clock());
    if (Number.isNaN(date.getTime())) throw new Error(`fixture message date ${seed.date} is not RFC 3339`);
    const raw = seed.raw
      ? Buffer.from(seed.raw, "utf8")
      : composeMime({
          from: seed.from ?? "someone@example.test",
          to: typeof seed.to === "string" ? [seed.to] : (seed.to ?? [this.address]),
          ...(seed.cc ? { cc: seed.cc } : {}),
          subject: seed.subject ?? "",
          text: seed.body ?? "",
          ...(seed.html === undefined ? {} : { html: seed.html }),
          date,
          ...(seed.headers ? { headers: seed.headers } : {}),
          ...(seed.attachments ? { attachments: seed.attachments } : {}),
        });
    const id = seed.id ?? this.nextId();
    const message = this.store(raw, { id, threadId: seed.threadId ?? id, labelIds: seed.labelIds ?? ["INBOX", "UNREAD"], internalDate: date.getTime() });
    return message.id;
  }

  // ---------- messages ----------

  list(params: URLSearchParams, scopes: readonly string[]): gmail_v1.Schema$Message[] {
    const q = params.get("q") ?? "";
    if (q !== "" && metadataOnly(scopes)) throw new ApiError(403, "forbidden", "Metadata scope does not support 'q' parameter");
    const labelIds = params.getAll("labelIds");
    const includeSpamTrash = params.get("includeSpamTrash") === "true";
    const terms = parseGmailQuery(q);
    const matches = [...this.messages.values()]
      .filter((m) => labelIds.every((l) => m.labelIds.has(l)))
      .filter((m) => includeSpamTrash || terms.some((t) => t.operator === "in" || t.operator === "label") || labelIds.length > 0 || !(m.labelIds.has("TRASH") || m.labelIds.has("SPAM")))
      .filter((m) => terms.every((t) => this.matches(m, t) !== t.negated))
      .sort((a, b) => b.internalDate - a.internalDate || b.id.localeCompare(a.id));
    return matches.map((m) => ({ id: m.id, threadId: m.threadId }));
  }

  get(id: string, params: URLSearchParams, scopes: readonly string[]): gmail_v1.Schema$Message {
    const message = this.messages.get(id);
    if (!message) throw notFound();
    return this.format(message, params, scopes);
  }

  send(body: unknown, viaDraft = false, existing?: StoredMessage): gmail_v1.Schema$Message {
    const request = isRecord(body) ? (body as gmail_v1.Schema$Message) : {};
    const raw = decodeRaw(request.raw);
    const mime = parseMime(raw);
    const to = addressesIn(headerValue(mime.headers, "to"));
    const cc = addressesIn(headerValue(mime.headers, "cc"));
    const bcc = addressesIn(headerValue(mime.headers, "bcc"));
    if (to.length + cc.length + bcc.length === 0) throw badRequest("Recipient address required", "invalidArgument");
    let threadId: string;
    if (typeof request.threadId === "string" && request.threadId !== "") {
      if (![...this.messages.values()].some((m) => m.threadId === request.threadId)) throw notFound();
      threadId = request.threadId;
    } else threadId = existing?.threadId ?? "";
    let stored: StoredMessage;
    if (existing) {
      existing.raw = raw;
      existing.mime = mime;
      existing.labelIds = new Set(["SENT"]);
      existing.internalDate = this.clock();
      existing.historyId = ++this.history;
      if (threadId !== "") existing.threadId = threadId;
      stored = existing;
    } else {
      const id = this.nextId();
      stored = this.store(raw, { id, threadId: threadId || id, labelIds: ["SENT"], internalDate: this.clock() });
    }
    this.sentLog.push({
      id: stored.id,
      threadId: stored.threadId,
      from: this.address,
      to,
      cc,
      bcc,
      subject: decodeWords(headerValue(mime.headers, "subject") ?? ""),
      text: plainTextOf(mime),
      attachments: leavesOf(mime)
        .filter((p) => p.filename !== "")
        .map((p) => ({ filename: p.filename, mimeType: p.mimeType, size: p.body.length })),
      headers: mime.headers,
      viaDraft,
    });
    return { id: stored.id, threadId: stored.threadId, labelIds: [...stored.labelIds] };
  }

  modify(id: string, body: unknown): gmail_v1.Schema$Message {
    const message = this.messages.get(id);
    if (!message) throw notFound();
    const request = (isRecord(body) ? body : {}) as gmail_v1.Schema$ModifyMessageRequest;
    const add = request.addLabelIds ?? [];
    const remove = request.removeLabelIds ?? [];
    for (const label of [...add, ...remove]) {
      if (!this.labels.has(label) || UNAPPLICABLE.has(label)) throw badRequest(`Invalid label: ${label}`, "invalidArgument");
    }
    for (const label of add) message.labelIds.add(label);
    for (const label of remove) message.labelIds.delete(label);
    message.historyId = ++this.history;
    return { id: message.id, threadId: message.threadId, labelIds: [...message.labelIds] };
  }

  trash(id: string): gmail_v1.Schema$Message {
    const message = this.messages.get(id);
    if (!message) throw notFound();
    message.labelIds.add("TRASH");
    message.labelIds.delete("INBOX");
    message.historyId = ++this.history;
    return { id: message.id, threadId: message.threadId, labelIds: [...message.labelIds] };
  }

  thread(id: string, params: URLSearchParams, scopes: readonly string[]): gmail_v1.Schema$Thread {
    const messages = [...this.messages.values()].filter((m) => m.threadId === id).sort((a, b) => a.internalDate - b.internalDate);
    if (messages.length === 0) throw notFound();
    return {
      id,
      historyId: String(Math.max(...messages.map((m) => m.historyId))),
      messages: messages.map((m) => this.format(m, params, scopes)),
    };
  }

  // ---------- drafts ----------

  createDraft(body: unknown): gmail_v1.Schema$Draft {
    const request = (isRecord(body) ? body : {}) as gmail_v1.Schema$Draft;
    const raw = decodeRaw(request.message?.raw);
    const id = this.nextId();
    const threadId = request.message?.threadId;
    if (threadId && ![...this.messages.values()].some((m) => m.threadId === threadId)) throw notFound();
    const stored = this.store(raw, { id, threadId: threadId || id, labelIds: ["DRAFT"], internalDate: this.clock() });
    const draftId = `r${(this.draftCounter++ * 7919 + 1_000_000_000).toString()}`;
    this.drafts.set(draftId, stored.id);
    return { id: draftId, message: { id: stored.id, threadId: stored.threadId, labelIds: [...stored.labelIds] } };
  }

  listDrafts(): gmail_v1.Schema$Draft[] {
    return [...this.drafts].map(([id, messageId]) => ({ id, message: { id: messageId, threadId: this.messages.get(messageId)?.threadId ?? messageId } }));
  }

  getDraft(id: string, params: URLSearchParams, scopes: readonly string[]): gmail_v1.Schema$Draft {
    const messageId = this.drafts.get(id);
    const message = messageId === undefined ? undefined : this.messages.get(messageId);
    if (!message) throw notFound();
    return { id, message: this.format(message, params, scopes) };
  }

  sendDraft(body: unknown): gmail_v1.Schema$Message {
    const request = (isRecord(body) ? body : {}) as gmail_v1.Schema$Draft;
    const messageId = typeof request.id === "string" ? this.drafts.get(request.id) : undefined;
    const message = messageId === undefined ? undefined : this.messages.get(messageId);
    if (!message || typeof request.id !== "string") throw notFound();
    const raw = request.message?.raw ? request.message.raw : message.raw.toString("base64url");
    const sent = this.send({ raw, ...(request.message?.threadId ? { threadId: request.message.threadId } : {}) }, true, message);
    this.drafts.delete(request.id);
    return sent;
  }

  // ---------- labels ----------

  listLabels(): gmail_v1.Schema$ListLabelsResponse {
    return { labels: [...this.labels.values()].map((l) => ({ ...l })) };
  }

  createLabel(body: unknown): gmail_v1.Schema$Label {
    const request = (isRecord(body) ? body : {}) as gmail_v1.Schema$Label;
    const name = typeof request.name === "string" ? request.name.trim() : "";
    if (name === "") throw badRequest("Invalid label name", "invalidArgument");
    if ([...this.labels.values()].some((l) => labelKey(l.name ?? "") === labelKey(name))) throw new ApiError(409, "duplicate", "Label name exists or conflicts");
    const id = request.id ?? `Label_${this.labelCounter++}`;
    const label: gmail_v1.Schema$Label = {
      id,
      name,
      type: "user",
      messageListVisibility: request.messageListVisibility ?? "show",
      labelListVisibility: request.labelListVisibility ?? "labelShow",
    };
    this.labels.set(id, label);
    return { ...label };
  }

  // ---------- internals ----------

  private nextId(): string {
    return (this.counter++).toString(16);
  }

  private store(raw: Buffer, fields: { id: string; threadId: string; labelIds: readonly string[]; internalDate: number }): StoredMessage {
    if (this.messages.has(fields.id)) throw new Error(`duplicate message id ${fields.id}`);
    const stored: StoredMessage = {
      id: fields.id,
      threadId: fields.threadId,
      labelIds: new Set(fields.labelIds),
      internalDate: fields.internalDate,
      raw,
      mime: parseMime(raw),
      historyId: ++this.history,
    };
    this.messages.set(stored.id, stored);
    return stored;
  }

  private matches(m: StoredMessage, term: QueryTerm): boolean {
    const v = term.value.toLowerCase();
    const header = (name: string): string => decodeWords(headerValue(m.mime.headers, name) ?? "").toLowerCase();
    switch (term.operator) {
      case "from":
        return header("from").includes(v);
      case "to":
        return ["to", "cc", "bcc"].some((h) => header(h).includes(v));
      case "cc":
        return header("cc").includes(v);
      case "bcc":
        return header("bcc").includes(v);
      case "subject":
        return header("subject").includes(v);
      case "after":
      case "newer":
        return m.internalDate >= queryDateMs(term.value);
      case "before":
      case "older":
        return m.internalDate < queryDateMs(term.value);
      case "label":
        return [...m.labelIds].some((id) => id.toLowerCase() === v || labelKey(this.labels.get(id)?.name ?? "") === labelKey(term.value));
      case "is":
        if (v === "unread") return m.labelIds.has("UNREAD");
        if (v === "read") return !m.labelIds.has("UNREAD");
        return m.labelIds.has(v.toUpperCase());
      case "in":
        return v === "anywhere" || m.labelIds.has(v === "drafts" ? "DRAFT" : v.toUpperCase());
      case "has":
        return v === "attachment" ? leavesOf(m.mime).some((p) => p.filename !== "") : false;
      default: {
        const haystack = [header("subject"), header("from"), header("to"), plainTextOf(m.mime).toLowerCase()].join("\n");
        return haystack.includes(v);
      }
    }
  }

  private format(m: StoredMessage, params: URLSearchParams, scopes: readonly string[]): gmail_v1.Schema$Message {
    const format = params.get("format") ?? "full";
    if (!FORMATS.has(format)) throw badRequest(`Invalid value for format: ${format}`, "invalidParameter");
    if ((format === "full" || format === "raw") && metadataOnly(scopes)) throw new ApiError(403, "forbidden", `Metadata scope doesn't allow format ${format.toUpperCase()}`);
    const base: gmail_v1.Schema$Message = {
      id: m.id,
      threadId: m.threadId,
      labelIds: [...m.labelIds],
      snippet: snippetOf(m.mime),
      sizeEstimate: m.raw.length,
      historyId: String(m.historyId),
      internalDate: String(m.internalDate),
    };
    if (format === "minimal") return base;
    if (format === "raw") return { ...base, raw: m.raw.toString("base64url") };
    if (format === "metadata") {
      const wanted = params.getAll("metadataHeaders").map((h) => h.toLowerCase());
      const headers = m.mime.headers.filter(([name]) => wanted.length === 0 || wanted.includes(name.toLowerCase()));
      return { ...base, payload: { partId: "", mimeType: m.mime.mimeType, filename: "", headers: headers.map(([name, value]) => ({ name, value: decodeWords(value) })), body: { size: 0 } } };
    }
    return { ...base, payload: partOf(m.id, m.mime, "") };
  }
}

function metadataOnly(scopes: readonly string[]): boolean {
  return scopes.includes(GMAIL_METADATA_SCOPE) && !scopes.some((s) => s !== GMAIL_METADATA_SCOPE && (s.includes("gmail.") || s === "https://mail.google.com/"));
}

function decodeRaw(raw: unknown): Buffer {
  if (typeof raw !== "string" || raw === "") throw badRequest("'raw' RFC822 payload message string or uploading message via /upload/* URL required", "invalidArgument");
  if (!/^[A-Za-z0-9_\-+/=\s]*$/.test(raw)) throw badRequest("Invalid value for ByteString", "invalidArgument");
  return Buffer.from(raw.replace(/\s/g, ""), raw.includes("+") || raw.includes("/") ? "base64" : "base64url");
}

function partOf(messageId: string, part: MimePart, partId: string): gmail_v1.Schema$MessagePart {
  // Gmail returns header values with RFC 2047 encoded words decoded.
  const headers = part.headers.map(([name, value]) => ({ name, value: decodeWords(value) }));
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

function plainTextOf(mime: MimePart): string {
  const leaves = leavesOf(mime).filter((p) => p.filename === "");
  const plain = leaves.find((p) => p.mimeType === "text/plain");
  if (plain) return textOf(plain);
  const html = leaves.find((p) => p.mimeType === "text/html");
  return html ? textOf(html).replace(/<[^>]*>/g, " ") : "";
}

function snippetOf(mime: MimePart): string {
  return plainTextOf(mime).replace(/\s+/g, " ").trim().slice(0, 200);
}
