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
 * base64url spellings (aligned at the secret's start), themselves in any of those encodings.
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
    return p === null ? text : text.replace(p, REDACTED);
  };

  const redactValue = (value: unknown, seen: WeakMap<object, unknown>): unknown => {
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
    // defineProperty, not assignment: a key named `__proto__` must stay a key, never a prototype.
    for (const [key, item] of Object.entries(value)) {
      Object.defineProperty(out, redactText(key), { value: redactValue(item, seen), enumerable: true, writable: true, configurable: true });
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
      return redactValue(value, new WeakMap()) as T;
    },
    contains(text: string): boolean {
      const p = current();
      if (p === null || typeof text !== "string") return false;
      p.lastIndex = 0;
      const found = p.test(text);
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
  return [...forms].map((form) => Array.from(form, charPattern).join("")).join("|");
}

const PLAIN = /^[A-Za-z0-9._-]$/;
const COMPILED_KEPT = 4;
const asciiPatterns = new Map<string, string>();

/**
 * Every way one character of a secret may be written: itself, percent-encoded, `+` for a space, a
 * JSON escape. Letters, digits and `._-` stay literal: no URL, form or JSON encoder changes them.
 */
function charPattern(ch: string): string {
  if (PLAIN.test(ch)) return ch; // no encoder changes these
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
