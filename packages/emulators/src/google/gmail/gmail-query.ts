import { badRequest } from "../http.js";

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
