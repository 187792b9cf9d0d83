/** What a test seeds a Gmail mailbox with, and the record of what it really sent. */

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
