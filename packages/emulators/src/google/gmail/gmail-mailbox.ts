import type { gmail_v1 } from "@googleapis/gmail";
import { isRecord } from "../../is-record.js";
import { ApiError, badRequest, notFound } from "../http.js";
import type { GmailFixture, GmailMessageSeed, SentMessage } from "./gmail-fixture.js";
import { formatMessage, metadataOnly, type StoredMessage } from "./gmail-message-format.js";
import { labelKey, searchMessages } from "./gmail-query.js";
import { composeMime, parseMessage, rawKey, type ParsedMessage } from "./mime.js";

const SYSTEM_LABELS = [
  "INBOX",
  "SENT",
  "DRAFT",
  "TRASH",
  "SPAM",
  "UNREAD",
  "STARRED",
  "IMPORTANT",
  "CATEGORY_PERSONAL",
  "CATEGORY_SOCIAL",
  "CATEGORY_PROMOTIONS",
  "CATEGORY_UPDATES",
  "CATEGORY_FORUMS",
];
const UNAPPLICABLE = new Set(["DRAFT", "SENT"]);

/**
 * @internal one emulated Gmail mailbox: its messages, drafts and labels, and what it sent.
 * Searching is in `gmail-query.ts`, rendering a message in `gmail-message-format.ts`, MIME in `mime.ts`.
 */
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
  /** Every message's parse, by `rawKey`: a parse fails with the reason. */
  private readonly parsed = new Map<string, ParsedMessage | Error>();
  /** Parses of seeded messages under way. */
  private readonly seeding: Promise<ParsedMessage | Error>[] = [];

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
    this.seeding.push(this.parse(raw));
    const id = seed.id ?? this.nextId();
    const message = this.store(raw, { id, threadId: seed.threadId ?? id, labelIds: seed.labelIds ?? ["INBOX", "UNREAD"], internalDate: date.getTime() });
    return message.id;
  }

  /**
   * Parse (asynchronously) every message a request carries and every seeded message, so that the
   * route, which answers synchronously, finds them parsed. No effect.
   */
  async prepare(body: unknown): Promise<void> {
    const failed = (await Promise.all(this.seeding.splice(0))).find((p) => p instanceof Error);
    if (failed) throw new Error(`a seeded message does not parse: ${failed.message}`);
    const request = isRecord(body) ? body : {};
    for (const candidate of [request["raw"], isRecord(request["message"]) ? request["message"]["raw"] : undefined]) {
      if (typeof candidate !== "string" || candidate === "") continue;
      let raw: Buffer;
      try {
        raw = decodeRaw(candidate);
      } catch {
        continue; // the route answers the bad request
      }
      await this.parse(raw);
    }
  }

  private async parse(raw: Buffer): Promise<ParsedMessage | Error> {
    const key = rawKey(raw);
    let parsed = this.parsed.get(key);
    if (parsed === undefined) {
      parsed = await parseMessage(raw).catch((cause: unknown) => (cause instanceof Error ? cause : new Error(String(cause))));
      this.parsed.set(key, parsed);
    }
    return parsed;
  }

  /** The parse of a message `prepare` saw; Gmail's 400 for one that does not parse. */
  private parsedOf(raw: Buffer): ParsedMessage {
    const found = this.parsed.get(rawKey(raw));
    if (found === undefined) throw new Error("the emulator handled a message it had not parsed (a route without prepare?)");
    if (found instanceof Error) throw badRequest("Invalid message: the MIME structure does not parse", "invalidArgument");
    return found;
  }

  // ---------- messages ----------

  list(params: URLSearchParams, scopes: readonly string[]): gmail_v1.Schema$Message[] {
    const q = params.get("q") ?? "";
    if (q !== "" && metadataOnly(scopes)) throw new ApiError(403, "forbidden", "Metadata scope does not support 'q' parameter");
    const search = { q, labelIds: params.getAll("labelIds"), includeSpamTrash: params.get("includeSpamTrash") === "true" };
    return searchMessages(this.messages.values(), search, (id) => this.labels.get(id)?.name ?? undefined).map((m) => ({ id: m.id, threadId: m.threadId }));
  }

  get(id: string, params: URLSearchParams, scopes: readonly string[]): gmail_v1.Schema$Message {
    return formatMessage(this.message(id), params, scopes);
  }

  send(body: unknown, viaDraft = false, existing?: StoredMessage): gmail_v1.Schema$Message {
    const request = isRecord(body) ? (body as gmail_v1.Schema$Message) : {};
    const raw = decodeRaw(request.raw);
    const mime = this.parsedOf(raw);
    const { to, cc, bcc } = mime;
    if (to.length + cc.length + bcc.length === 0) throw badRequest("Recipient address required", "invalidArgument");
    let threadId: string;
    if (typeof request.threadId === "string" && request.threadId !== "") {
      if (!this.hasThread(request.threadId)) throw notFound();
      threadId = request.threadId;
    } else threadId = existing?.threadId ?? "";
    let stored: StoredMessage;
    if (existing) {
      existing.raw = raw;
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
      to: [...to],
      cc: [...cc],
      bcc: [...bcc],
      subject: mime.subject,
      text: mime.text,
      attachments: mime.attachments,
      headers: mime.headers,
      viaDraft,
    });
    return summaryOf(stored);
  }

  modify(id: string, body: unknown): gmail_v1.Schema$Message {
    const message = this.message(id);
    const request = (isRecord(body) ? body : {}) as gmail_v1.Schema$ModifyMessageRequest;
    const add = request.addLabelIds ?? [];
    const remove = request.removeLabelIds ?? [];
    for (const label of [...add, ...remove]) {
      if (!this.labels.has(label) || UNAPPLICABLE.has(label)) throw badRequest(`Invalid label: ${label}`, "invalidArgument");
    }
    for (const label of add) message.labelIds.add(label);
    for (const label of remove) message.labelIds.delete(label);
    message.historyId = ++this.history;
    return summaryOf(message);
  }

  trash(id: string): gmail_v1.Schema$Message {
    const message = this.message(id);
    message.labelIds.add("TRASH");
    message.labelIds.delete("INBOX");
    message.historyId = ++this.history;
    return summaryOf(message);
  }

  thread(id: string, params: URLSearchParams, scopes: readonly string[]): gmail_v1.Schema$Thread {
    const messages = [...this.messages.values()].filter((m) => m.threadId === id).sort((a, b) => a.internalDate - b.internalDate);
    if (messages.length === 0) throw notFound();
    return {
      id,
      historyId: String(Math.max(...messages.map((m) => m.historyId))),
      messages: messages.map((m) => formatMessage(m, params, scopes)),
    };
  }

  // ---------- drafts ----------

  createDraft(body: unknown): gmail_v1.Schema$Draft {
    const request = (isRecord(body) ? body : {}) as gmail_v1.Schema$Draft;
    const raw = decodeRaw(request.message?.raw);
    this.parsedOf(raw);
    const id = this.nextId();
    const threadId = request.message?.threadId;
    if (threadId && !this.hasThread(threadId)) throw notFound();
    const stored = this.store(raw, { id, threadId: threadId || id, labelIds: ["DRAFT"], internalDate: this.clock() });
    const draftId = `r${(this.draftCounter++ * 7919 + 1_000_000_000).toString()}`;
    this.drafts.set(draftId, stored.id);
    return { id: draftId, message: summaryOf(stored) };
  }

  listDrafts(): gmail_v1.Schema$Draft[] {
    return [...this.drafts].map(([id, messageId]) => ({ id, message: { id: messageId, threadId: this.messages.get(messageId)?.threadId ?? messageId } }));
  }

  getDraft(id: string, params: URLSearchParams, scopes: readonly string[]): gmail_v1.Schema$Draft {
    return { id, message: formatMessage(this.draftMessage(id), params, scopes) };
  }

  sendDraft(body: unknown): gmail_v1.Schema$Message {
    const request = (isRecord(body) ? body : {}) as gmail_v1.Schema$Draft;
    if (typeof request.id !== "string") throw notFound();
    const message = this.draftMessage(request.id);
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
    if ([...this.labels.values()].some((l) => labelKey(l.name ?? "") === labelKey(name)))
      throw new ApiError(409, "duplicate", "Label name exists or conflicts");
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

  /** The message with this id; 404 when there is none. */
  private message(id: string): StoredMessage {
    const message = this.messages.get(id);
    if (!message) throw notFound();
    return message;
  }

  /** The message of the draft with this id; 404 when there is none. */
  private draftMessage(draftId: string): StoredMessage {
    const messageId = this.drafts.get(draftId);
    const message = messageId === undefined ? undefined : this.messages.get(messageId);
    if (!message) throw notFound();
    return message;
  }

  private hasThread(threadId: string): boolean {
    return [...this.messages.values()].some((m) => m.threadId === threadId);
  }

  private store(raw: Buffer, fields: { id: string; threadId: string; labelIds: readonly string[]; internalDate: number }): StoredMessage {
    if (this.messages.has(fields.id)) throw new Error(`duplicate message id ${fields.id}`);
    const parsedOf = (bytes: Buffer): ParsedMessage => this.parsedOf(bytes);
    let memo: { raw: Buffer; mime: ParsedMessage } | undefined;
    const stored: StoredMessage = {
      id: fields.id,
      threadId: fields.threadId,
      labelIds: new Set(fields.labelIds),
      internalDate: fields.internalDate,
      raw,
      // Read when a route answers, by then `prepare` has parsed it; follows `raw` when a draft is sent with new bytes.
      get mime(): ParsedMessage {
        if (memo?.raw !== this.raw) memo = { raw: this.raw, mime: parsedOf(this.raw) };
        return memo.mime;
      },
      historyId: ++this.history,
    };
    this.messages.set(stored.id, stored);
    return stored;
  }
}

/** What a write answers with: the message's id, thread and labels. */
function summaryOf(m: StoredMessage): gmail_v1.Schema$Message {
  return { id: m.id, threadId: m.threadId, labelIds: [...m.labelIds] };
}

function decodeRaw(raw: unknown): Buffer {
  if (typeof raw !== "string" || raw === "")
    throw badRequest("'raw' RFC822 payload message string or uploading message via /upload/* URL required", "invalidArgument");
  if (!/^[A-Za-z0-9_\-+/=\s]*$/.test(raw)) throw badRequest("Invalid value for ByteString", "invalidArgument");
  return Buffer.from(raw.replace(/\s/g, ""), raw.includes("+") || raw.includes("/") ? "base64" : "base64url");
}
