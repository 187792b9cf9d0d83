/** What replaces a secret wherever it appears. */
export const REDACTED = "[REDACTED]";

/** Secrets shorter than this are refused: redacting "a" everywhere would destroy every output. */
export const MIN_SECRET_LENGTH = 6;

/**
 * Replaces every registered secret — and its URL-encoded, JSON-escaped and base64 spellings — in
 * strings and in every string inside a JSON-like value.
 */
export interface Redactor {
  register(secret: string): void;
  redactText(text: string): string;
  redact<T>(value: T): T;
  /** True when `text` contains any registered secret. */
  contains(text: string): boolean;
  readonly size: number;
}

export function createRedactor(initial: readonly string[] = []): Redactor {
  const secrets = new Set<string>();
  let pattern: RegExp | null = null;

  const rebuild = (): void => {
    const forms = new Set<string>();
    for (const secret of secrets) {
      for (const form of spellings(secret)) if (form.length >= MIN_SECRET_LENGTH) forms.add(form);
    }
    const sorted = [...forms].sort((a, b) => b.length - a.length).map(escapeRegExp);
    pattern = sorted.length === 0 ? null : new RegExp(sorted.join("|"), "g");
  };

  const redactText = (text: string): string => (pattern === null || text.length === 0 ? text : text.replace(pattern, REDACTED));

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
    register(secret: string): void {
      if (typeof secret !== "string" || secret.length < MIN_SECRET_LENGTH || secrets.has(secret)) return;
      secrets.add(secret);
      rebuild();
    },
    redactText,
    redact<T>(value: T): T {
      if (pattern === null) return value;
      return redactValue(value, new WeakMap()) as T;
    },
    contains(text: string): boolean {
      if (pattern === null) return false;
      pattern.lastIndex = 0;
      const found = pattern.test(text);
      pattern.lastIndex = 0;
      return found;
    },
    get size(): number {
      return secrets.size;
    },
  };
  for (const s of initial) redactor.register(s);
  return redactor;
}

function spellings(secret: string): string[] {
  const json = JSON.stringify(secret).slice(1, -1);
  const base64 = Buffer.from(secret, "utf8").toString("base64");
  const base64url = Buffer.from(secret, "utf8").toString("base64url");
  return [secret, encodeURIComponent(secret), json, base64.replace(/=+$/, ""), base64url];
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
