/** Gmail's search syntax, parsed, and whether a stored message matches a term of it. */
import { badRequest } from "../http.js";
import type { StoredMessage } from "./gmail-message-format.js";
import { decodeWords, headerValue, leavesOf } from "./mime.js";

/** One term of a Gmail search query. */
export interface QueryTerm {
  readonly negated: boolean;
  /** `from`, `to`, `subject`, `after`, `before`, `label`, `is`, `in`, `has`, or `text` for a bare word or phrase. */
  readonly operator: string;
  readonly value: string;
}

const OPERATORS = new Set(["from", "to", "cc", "bcc", "subject", "after", "before", "newer", "older", "label", "is", "in", "has"]);

/**
 * Parse the subset of Gmail's search syntax the emulator understands: `operator:value` and
 * `operator:"quoted value"` for the operators above, bare words and quoted phrases (all terms
 * ANDed), and `-` to negate a term. Anything else is a bare word.
 */
export function parseGmailQuery(q: string): QueryTerm[] {
  const terms: QueryTerm[] = [];
  const pattern = /(-?)(?:([a-z]+):)?(?:"([^"]*)"|(\S+))/gi;
  for (const match of q.matchAll(pattern)) {
    const [, minus = "", op, quoted, bare] = match;
    const value = (quoted ?? bare ?? "").trim();
    const operator = op && OPERATORS.has(op.toLowerCase()) ? op.toLowerCase() : "text";
    const text = operator === "text" && op ? `${op}:${value}` : value;
    if (text === "" || (operator === "text" && /^(and|or)$/i.test(text))) continue;
    terms.push({ negated: minus === "-", operator, value: text });
  }
  return terms;
}

/** `after:`/`before:` values: `YYYY/MM/DD`, `YYYY-MM-DD` (UTC midnight here) or seconds since the epoch. */
export function queryDateMs(value: string): number {
  if (/^\d{9,11}$/.test(value)) return Number(value) * 1000;
  const m = /^(\d{4})[/-](\d{1,2})[/-](\d{1,2})$/.exec(value);
  if (!m) throw badRequest(`Invalid date in query: ${value}`, "invalidArgument");
  return Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]));
}

/** Label names compare case-insensitively, with spaces, slashes and hyphens equivalent. */
export function labelKey(name: string): string {
  return name.toLowerCase().replace(/[\s/_-]+/g, "-");
}

/** Whether a message matches one (un-negated) term; `labelName` gives a label id's name. */
export function messageMatches(m: StoredMessage, term: QueryTerm, labelName: (id: string) => string | undefined): boolean {
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
      return [...m.labelIds].some((id) => id.toLowerCase() === v || labelKey(labelName(id) ?? "") === labelKey(term.value));
    case "is":
      if (v === "unread") return m.labelIds.has("UNREAD");
      if (v === "read") return !m.labelIds.has("UNREAD");
      return m.labelIds.has(v.toUpperCase());
    case "in":
      return v === "anywhere" || m.labelIds.has(v === "drafts" ? "DRAFT" : v.toUpperCase());
    case "has":
      return v === "attachment" ? leavesOf(m.mime).some((p) => p.filename !== "") : false;
    default: {
      const haystack = [header("subject"), header("from"), header("to"), m.mime.text.toLowerCase()].join("\n");
      return haystack.includes(v);
    }
  }
}

/** The messages a search finds, newest first: every label in `labelIds`, every term of `q`. Spam and trash only when asked for. */
export function searchMessages(
  messages: Iterable<StoredMessage>,
  search: { readonly q: string; readonly labelIds: readonly string[]; readonly includeSpamTrash: boolean },
  labelName: (id: string) => string | undefined,
): StoredMessage[] {
  const terms = parseGmailQuery(search.q);
  const namesPlace = terms.some((t) => t.operator === "in" || t.operator === "label") || search.labelIds.length > 0;
  return [...messages]
    .filter((m) => search.labelIds.every((l) => m.labelIds.has(l)))
    .filter((m) => search.includeSpamTrash || namesPlace || !(m.labelIds.has("TRASH") || m.labelIds.has("SPAM")))
    .filter((m) => terms.every((t) => messageMatches(m, t, labelName) !== t.negated))
    .sort((a, b) => b.internalDate - a.internalDate || b.id.localeCompare(a.id));
}
