/**
 * Text a tool process wrote (an escalation reason, an error message, a status line) is the tool's
 * claim, never the host's own words. Before it reaches an approver or a model it is made plain and
 * bounded here; the gate then redacts it and, since every process tool is `untrustedOutput`, treats
 * it as untrusted.
 *
 * Plain: line breaks (CR, LF, VT, FF, NEL, U+2028, U+2029) and tabs become spaces, so the text cannot
 * draw lines of its own in a summary; control characters (C0, DEL, C1), format characters (bidi
 * embeddings, overrides and isolates, zero-width characters, the tag block, soft hyphen, BOM) and
 * lone surrogates are removed, and how many were removed is said.
 *
 * Bounded without a cut: text longer than the bound is withheld whole (its length is said). A cut
 * made here, before the gate's redaction, could keep the first part of a registered secret, which
 * the redactor would then no longer recognise.
 */
const BREAKS = /\r\n|[\t\n\v\f\r\u0085\u2028\u2029]/gu;
const HIDDEN = /[\p{Cc}\p{Cf}\p{Cs}]/gu;

export interface PlainText {
  /** The text, plain; empty when withheld. */
  readonly text: string;
  /** Control and format characters (and lone surrogates) that were removed. */
  readonly removed: number;
  /** The plain text's length when it was over the bound and so not kept; otherwise undefined. */
  readonly withheld: number | undefined;
}

export function plainText(raw: string, maxChars: number): PlainText {
  let removed = 0;
  const text = raw.replace(BREAKS, " ").replace(HIDDEN, () => {
    removed += 1;
    return "";
  });
  if (text.length > maxChars) return { text: "", removed, withheld: text.length };
  return { text, removed, withheld: undefined };
}

/** The text as one line of a message: plain, or a note that it was withheld. */
export function plainLine(raw: string, maxChars: number, what: string): string {
  const plain = plainText(raw, maxChars);
  if (plain.withheld !== undefined) return `[${what} withheld: ${plain.withheld} characters, over the ${maxChars}-character limit]`;
  return plain.text;
}

/** Something a tool process says about itself, labelled as such: data for an approver, never the host's wording. */
export interface ToolClaim {
  /** Who says it: `tool process <name>`. */
  readonly claimedBy: string;
  /** Always false: nothing checks what a tool says about its own call. */
  readonly verified: false;
  /** The tool's words, plain (see `plainText`); empty when withheld. */
  readonly text: string;
  /** How many control or format characters were removed from it, when any were. */
  readonly removedCharacters?: number;
  /** Set when the text was over the bound: its length, and nothing of it is shown. */
  readonly withheldCharacters?: number;
}

export function toolClaim(processName: string, raw: string, maxChars: number): ToolClaim {
  const plain = plainText(raw, maxChars);
  return {
    claimedBy: `tool process ${processName}`,
    verified: false,
    text: plain.text,
    ...(plain.removed > 0 ? { removedCharacters: plain.removed } : {}),
    ...(plain.withheld !== undefined ? { withheldCharacters: plain.withheld } : {}),
  };
}
