/**
 * Recipients as the wire sees them. One reading of a message's header section, used everywhere
 * the family checks or shows recipients: `send_message` and `create_draft` read back the headers
 * they compose, `send_draft` reads the exact bytes it will send. Address headers are parsed with
 * a maintained RFC 5322 address parser (nodemailer's); whatever that parser, or another mail
 * system, could read more than one way is refused rather than guessed.
 */
import addressparser from "nodemailer/lib/addressparser";
import { ToolError } from "@toolgate/core";
import { isAddress } from "./options.js";
import { decodeWords } from "postal-mime";

export type RecipientField = "to" | "cc" | "bcc";

/** One mailbox of an address header: its address (lower-cased) and its display name, which is data written by whoever wrote the header. */
export interface Mailbox {
  readonly address: string;
  readonly name: string;
}

/** What a message's header section says about who receives it and who it claims to be from. */
export interface WireHeaders {
  readonly to: readonly Mailbox[];
  readonly cc: readonly Mailbox[];
  readonly bcc: readonly Mailbox[];
  readonly from: readonly Mailbox[];
  readonly replyTo: readonly Mailbox[];
  readonly subject: string;
}

/** RFC 5322 §3.6: the fields a message carries at most once. */
const SINGLE_INSTANCE = ["date", "from", "sender", "reply-to", "to", "cc", "bcc", "message-id", "in-reply-to", "references", "subject"];
/** ftext (RFC 5322 §2.2): printable US-ASCII but the colon. */
const FIELD_LINE = /^([!-9;-~]+):(.*)$/s;

function unreadable(reason: string): ToolError {
  return new ToolError("preview_invalid", `the draft cannot be read one way: ${reason}`, { boundary: "pre_effect_refusal", details: { reason } });
}

/**
 * The header fields of a raw message, in order, names lower-cased, folded lines unfolded. Refuses
 * (`preview_invalid`) what mail systems disagree on: a bare CR, a control character, a line that
 * is neither a field nor a continuation, a space before the colon.
 */
export function headerFields(raw: Buffer): [string, string][] {
  const text = raw.toString("latin1");
  const end = /\r?\n\r?\n/.exec(text);
  const section = end ? text.slice(0, end.index) : text;
  // A bare CR, a NUL and the like end or split a line for some readers and not for others.
  if (/[\u0000-\u0008\u000b-\u001f\u007f]/.test(section.replace(/\r?\n/g, ""))) throw unreadable("a header holds a control character (a bare CR, a NUL, …)");
  const fields: [string, string][] = [];
  for (const line of section.split(/\r?\n/)) {
    if (/^[ \t]/.test(line)) {
      const last = fields.at(-1);
      if (!last) throw unreadable("the header section starts with a continuation line");
      last[1] += line;
      continue;
    }
    const match = FIELD_LINE.exec(line);
    if (!match) throw unreadable(`a header line is not "Name: value": ${JSON.stringify(line.slice(0, 80))}`);
    fields.push([match[1]!.toLowerCase(), match[2]!]);
  }
  // Header bytes are taken as UTF-8 (RFC 6532) when they are.
  return fields.map(([name, value]) => [name, Buffer.from(value, "latin1").toString("utf8")]);
}

/**
 * The mailboxes of one address-list header, groups flattened. Every entry must be a plain
 * address (`local@domain`, no encoded word, no quoted specials), and the header holds no `@` but
 * those of its addresses: a reader, or another parser, could take any other for a recipient.
 */
export function mailboxesIn(value: string, field: string): Mailbox[] {
  const mailboxes = addressparser(value, { flatten: true }).map((entry) => {
    const address = entry.address.trim().toLowerCase();
    const name = decodeWords(entry.name).trim();
    const shown = JSON.stringify((name || address || value).slice(0, 120));
    if (address === "") throw unreadable(`an entry of ${field} has no address: ${shown}`);
    if (address.includes("=?") || !isAddress(address))
      throw unreadable(`an entry of ${field} is not a plain address: ${JSON.stringify(address.slice(0, 120))}`);
    if (name.includes("=?")) throw unreadable(`the display name ${shown} of ${address} in ${field} holds an encoded word that could not be decoded`);
    // Relay syntax: a server of the allowed domain may forward `x%other@allowed` or `other!x@allowed`
    // to another domain, which the allowlist and the human would not see.
    if (/[%!]/.test(address.slice(0, address.lastIndexOf("@"))))
      throw unreadable(
        `${JSON.stringify(address.slice(0, 120))} in ${field} uses relay syntax (% or ! in the local part), which a mail server may forward to another domain`,
      );
    return { address, name };
  });
  // Each plain address holds one "@"; any other (a doubled address the parser folded into one, an
  // address in a comment, a quoted local part, an encoded word) is text another reader may deliver to.
  const ats = decodeWords(value).split("@").length - 1;
  if (ats !== mailboxes.length) throw unreadable(`${field} holds ${ats} "@" for ${mailboxes.length} address(es); the rest could be read as recipients`);
  return mailboxes;
}

/**
 * Everything the family needs from a message's header section, read once. Refuses a message
 * with a single-instance field twice (RFC 5322 §3.6) or any `Resent-*` field (whether a provider
 * delivers to those is not ours to guess).
 */
export function readWireHeaders(raw: Buffer): WireHeaders {
  const fields = headerFields(raw);
  const seen = new Set<string>();
  for (const [name] of fields) {
    if (name.startsWith("resent-")) throw unreadable(`it carries a ${name} header; resent messages are not sent from here`);
    if (SINGLE_INSTANCE.includes(name)) {
      if (seen.has(name)) throw unreadable(`the ${name} header occurs more than once`);
      seen.add(name);
    }
  }
  const value = (name: string): string => fields.find(([n]) => n === name)?.[1] ?? "";
  const list = (name: string): Mailbox[] => (seen.has(name) ? mailboxesIn(value(name), name) : []);
  return { to: list("to"), cc: list("cc"), bcc: list("bcc"), from: list("from"), replyTo: list("reply-to"), subject: decodeWords(value("subject").trim()) };
}

/** Every recipient address (to, cc, bcc), in header order. */
export function recipientAddresses(headers: Pick<WireHeaders, RecipientField>): string[] {
  return [...headers.to, ...headers.cc, ...headers.bcc].map((m) => m.address);
}

/** True when `value` is one bare address and nothing else, as the address parser reads it. */
export function isSingleAddress(value: string): boolean {
  try {
    const found = mailboxesIn(value, "address");
    return found.length === 1 && found[0]!.name === "" && found[0]!.address === value.toLowerCase();
  } catch {
    return false;
  }
}
