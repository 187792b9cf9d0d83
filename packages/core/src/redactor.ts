/** What replaces a secret wherever it appears. */
export const REDACTED = "[REDACTED]";

/** Secrets shorter than this are refused: redacting "a" everywhere would destroy every output. */
export const MIN_SECRET_LENGTH = 6;

export interface RedactorOptions {
  /** Milliseconds since the epoch, for registrations with `until`; default `Date.now`. */
  readonly clock?: () => number;
}

export interface SecretOptions {
  /**
   * Redact the secret only until this time (milliseconds on the redactor's clock): a grant's
   * token until the grant expires. Registering again with a later time extends it.
   */
  readonly until?: number;
}

/** One hold on a secret; `release()` ends it (once). The secret stays while any hold or registration does. */
export interface SecretLease {
  release(): void;
}

/**
 * Replaces every registered secret in strings and in every string inside a JSON-like value, in
 * its plain spelling and as any mix of these encodings of it, character by character:
 * percent-encoding (any character, UTF-8 bytes, hex digits in either case), form encoding (`+`
 * for a space) and JSON string escapes (`\"`, `\/`, `\uXXXX` in either case); and its base64 and
 * base64url spellings (at any of the three alignments, so inside a longer encoded value too), themselves in any of those encodings.
 *
 * A secret stays only as long as something holds it: `register(secret)` for good, `register(secret,
 * { until })` until a time, `hold(secret)` until the lease is released. So secrets of grants and
 * connections leave when those end, and the cost of redaction follows the live set, not every
 * secret ever seen. The matcher is rebuilt lazily, on the first use after the set changed.
 */
export interface Redactor {
  /** Redact `secret` from now on: for good, or until `options.until`. */
  register(secret: string, options?: SecretOptions): void;
  /** Hold `secret` until the lease is released (a call's connection tokens). */
  hold(secret: string): SecretLease;
  /** End a registration made with `until` now (a grant consumed before it expired). Permanent registrations and holds stay. */
  unregister(secret: string): void;
  redactText(text: string): string;
  redact<T>(value: T): T;
  /** True when `text` contains any registered secret. */
  contains(text: string): boolean;
  /** How many secrets are live now. */
  readonly size: number;
}

interface Entry {
  permanent: boolean;
  holds: number;
  until: number;
  /** The secret's part of the matcher, built once. */
  source: string | undefined;
}

export function createRedactor(initial: readonly string[] = [], options: RedactorOptions = {}): Redactor {
  const clock = options.clock ?? Date.now;
  const entries = new Map<string, Entry>();
  let pattern: RegExp | null = null;
  const compiled = new Map<string, RegExp>();
  let dirty = false;
  /**
   * Short strings (object keys, enum-like values) the current matcher found nothing in: they recur
   * on every call. Only clean text is kept, never a secret; emptied whenever the matcher changes.
   */
  const clean = new Set<string>();
  /** The earliest `until` an entry's life depends on; the set is swept when the clock passes it. */
  let nextExpiry = Number.POSITIVE_INFINITY;

  const live = (e: Entry, now: number): boolean => e.permanent || e.holds > 0 || e.until > now;

  const forget = (secret: string, e: Entry): void => {
    if (live(e, clock())) return;
    entries.delete(secret);
    dirty = true;
  };

  const current = (): RegExp | null => {
    if (nextExpiry !== Number.POSITIVE_INFINITY && clock() >= nextExpiry) sweep();
    if (dirty) rebuild();
    return pattern;
  };

  const sweep = (): void => {
    const now = clock();
    nextExpiry = Number.POSITIVE_INFINITY;
    for (const [secret, e] of entries) {
      if (!live(e, now)) {
        entries.delete(secret);
        dirty = true;
      } else if (!e.permanent && e.holds === 0) nextExpiry = Math.min(nextExpiry, e.until);
    }
  };

  const rebuild = (): void => {
    dirty = false;
    clean.clear();
    if (entries.size === 0) {
      pattern = null;
      return;
    }
    // Longest first: where one secret contains another, the longer one is redacted whole.
    const sorted = [...entries].sort((a, b) => b[0].length - a[0].length);
    const source = sorted.map(([secret, e]) => (e.source ??= secretPattern(secret))).join("|");
    // A call's connection tokens come and go with it: the sets alternate, so the last few
    // compiled matchers are kept and reused rather than compiled again.
    pattern = compiled.get(source) ?? new RegExp(source, "g");
    compiled.delete(source);
    compiled.set(source, pattern);
    if (compiled.size > COMPILED_KEPT) compiled.delete(compiled.keys().next().value!);
  };

  const entryFor = (secret: string): Entry | undefined => {
    if (typeof secret !== "string" || secret.length < MIN_SECRET_LENGTH) return undefined;
    let e = entries.get(secret);
    if (!e) {
      e = { permanent: false, holds: 0, until: Number.NEGATIVE_INFINITY, source: undefined };
      entries.set(secret, e);
      dirty = true;
    }
    return e;
  };

  const redactText = (text: string): string => {
    if (typeof text !== "string" || text.length === 0) return text;
    const p = current();
    if (p === null) return text;
    const short = text.length <= CLEAN_TEXT_MAX;
    if (short && clean.has(text)) return text;
    const redacted = scrub(p, text);
    if (short && redacted === text) {
      if (clean.size >= CLEAN_KEPT) clean.clear();
      clean.add(text);
    }
    return redacted;
  };

  const scrub = (p: RegExp, text: string): string => {
    const redacted = text.replace(p, REDACTED);
    // A letter, digit or `._-` escaped (`%41`, `\u0041`) is decoded before a second look; the text
    // changes only where that finds a secret (decoding these is harmless to a URL and to JSON).
    if (!ESCAPED_PLAIN.test(redacted)) return redacted;
    const decoded = unescapePlain(redacted);
    p.lastIndex = 0;
    const found = p.test(decoded);
    p.lastIndex = 0;
    return found ? decoded.replace(p, REDACTED) : redacted;
  };

  // `seen` maps each object to its copy (shared parts stay shared, a cycle stays a cycle); it lives for one call.
  const redactValue = (value: unknown, seen: Map<object, unknown>): unknown => {
    if (typeof value === "string") return redactText(value);
    if (value === null || typeof value !== "object") return value;
    const existing = seen.get(value);
    if (existing !== undefined) return existing;
    if (Array.isArray(value)) {
      const out: unknown[] = [];
      seen.set(value, out);
      for (const item of value) out.push(redactValue(item, seen));
      return out;
    }
    if (value instanceof Uint8Array || value instanceof Date) return value;
    const out: Record<string, unknown> = {};
    seen.set(value, out);
    const record = value as Record<string, unknown>;
    for (const key of Object.keys(record)) {
      const shown = redactText(key);
      const item = redactValue(record[key], seen);
      // A name the prototype has (`__proto__`, `toString`) is defined, not assigned: it must stay a key, never a prototype or a setter's input.
      if (shown in out) Object.defineProperty(out, shown, { value: item, enumerable: true, writable: true, configurable: true });
      else out[shown] = item;
    }
    return out;
  };

  const redactor: Redactor = {
    register(secret, opts) {
      const until = opts?.until;
      if (until !== undefined && !(typeof until === "number" && until > clock())) return; // already over (or not a time)
      const e = entryFor(secret);
      if (!e) return;
      if (until === undefined) e.permanent = true;
      else {
        e.until = Math.max(e.until, until);
        if (!e.permanent && e.holds === 0) nextExpiry = Math.min(nextExpiry, e.until);
      }
    },
    hold(secret) {
      const e = entryFor(secret);
      if (!e) return { release: () => undefined };
      e.holds++;
      let released = false;
      return {
        release: () => {
          if (released) return;
          released = true;
          e.holds--;
          if (e.holds === 0 && !e.permanent && e.until !== Number.NEGATIVE_INFINITY) nextExpiry = Math.min(nextExpiry, e.until);
          if (entries.get(secret) === e) forget(secret, e);
        },
      };
    },
    unregister(secret) {
      const e = typeof secret === "string" ? entries.get(secret) : undefined;
      if (!e) return;
      e.until = Number.NEGATIVE_INFINITY;
      forget(secret, e);
    },
    redactText,
    redact<T>(value: T): T {
      if (current() === null) return value;
      return redactValue(value, new Map()) as T;
    },
    contains(text: string): boolean {
      const p = current();
      if (p === null || typeof text !== "string") return false;
      p.lastIndex = 0;
      const found = p.test(text) || (ESCAPED_PLAIN.test(text) && p.test(unescapePlain(text)));
      p.lastIndex = 0;
      return found;
    },
    get size(): number {
      current();
      return entries.size;
    },
  };
  for (const s of initial) redactor.register(s);
  return redactor;
}

/** One secret's spellings as one alternative: its plain text and its base64 forms, each in any mix of encodings. */
function secretPattern(secret: string): string {
  const bytes = Buffer.from(secret, "utf8");
  const forms = new Set([secret, bytes.toString("base64").replace(/=+$/, ""), bytes.toString("base64url")]);
  for (const form of base64Cores(bytes)) forms.add(form);
  return [...forms].map((form) => Array.from(form, charPattern).join("")).join("|");
}

/**
 * The base64 (and base64url) characters that depend on the secret's bytes alone, for each of the
 * three places its first byte can take in a 3-byte group: a secret inside a longer encoded value
 * (`user:secret` in basic authorization, a token followed by more data) is found too. The one or
 * two characters at each end that mix in a neighbour's bits are left.
 */
function base64Cores(bytes: Buffer): string[] {
  const cores: string[] = [];
  for (let offset = 0; offset < 3; offset++) {
    const encoded = Buffer.concat([Buffer.alloc(offset), bytes]).toString("base64");
    const first = Math.ceil((offset * 8) / 6);
    const end = Math.floor(((offset + bytes.length) * 8) / 6);
    const core = encoded.slice(first, end);
    if (core.length < MIN_SECRET_LENGTH) continue;
    cores.push(core, core.replace(/\+/g, "-").replace(/\//g, "_"));
  }
  return cores;
}

const PLAIN = /^[A-Za-z0-9._-]$/;
/** A letter, digit or `._-` percent-encoded or JSON-escaped (either hex case). */
const ESCAPED_PLAIN = /%(?:2[dDeE]|3\d|[46][1-9a-fA-F]|[57][0-9aA]|5[fF])|\\u00(?:2[dDeE]|3\d|[46][1-9a-fA-F]|[57][0-9aA]|5[fF])/;
const ESCAPED_PLAIN_ALL = new RegExp(ESCAPED_PLAIN.source, "g");

/** `text` with every escaped letter, digit and `._-` written as itself. */
function unescapePlain(text: string): string {
  return text.replace(ESCAPED_PLAIN_ALL, (e) => String.fromCharCode(parseInt(e.slice(-2), 16)));
}
const COMPILED_KEPT = 4;
/** Clean short strings remembered per matcher (see `clean`): up to this length, this many. */
const CLEAN_TEXT_MAX = 64;
const CLEAN_KEPT = 1024;
const asciiPatterns = new Map<string, string>();

/**
 * Every way one character of a secret may be written: itself, percent-encoded, `+` for a space, a
 * JSON escape. Letters, digits and `._-` too: an encoder may escape every character (`%41`, `\u0041`).
 */
function charPattern(ch: string): string {
  if (PLAIN.test(ch)) return ch; // the main pattern keeps these literal; their escapes are decoded first (see unescapePlain)
  const cached = asciiPatterns.get(ch);
  if (cached !== undefined) return cached;
  const alternatives = new Set<string>([escapeRegExp(ch)]);
  alternatives.add([...Buffer.from(ch, "utf8")].map((b) => `%${hexDigits(b, 2)}`).join(""));
  if (ch === " ") alternatives.add("\\+");
  const json = JSON.stringify(ch).slice(1, -1);
  if (json !== ch) alternatives.add(escapeRegExp(json));
  if (ch === "/") alternatives.add("\\\\/");
  let units = "";
  for (let i = 0; i < ch.length; i++) units += `\\\\u${hexDigits(ch.charCodeAt(i), 4)}`;
  alternatives.add(units);
  const pattern = `(?:${[...alternatives].join("|")})`;
  if (ch.length === 1 && ch.charCodeAt(0) < 0x80) asciiPatterns.set(ch, pattern);
  return pattern;
}

/** Hex digits of `n` matching either case: 0x2f → `2[fF]`. */
function hexDigits(n: number, width: number): string {
  return Array.from(n.toString(16).padStart(width, "0"), (d) => (/[a-f]/.test(d) ? `[${d}${d.toUpperCase()}]` : d)).join("");
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
