import { hash } from "node:crypto";

/**
 * JSON Canonicalization Scheme (RFC 8785): object keys sorted by UTF-16 code units, no
 * whitespace, numbers and strings serialized as ECMAScript's JSON does.
 *
 * Throws a TypeError on values JSON cannot carry faithfully (non-finite numbers, bigint,
 * functions, symbols, cycles), so what is hashed is always what is stored.
 */
export function canonicalJson(value: unknown): string {
  // Fast path: put keys in canonical order (copying only objects that are out of order), then let
  // the engine's JSON.stringify write it: for finite numbers and strings its output is RFC 8785's.
  // Objects with array-index keys ("1", "10") cannot be ordered by insertion, so they take the
  // slow path that writes every token itself.
  const prepared = prepare(value, []);
  return prepared === NEEDS_SLOW_PATH ? write(value, []) : (JSON.stringify(prepared) ?? "null");
}

const NEEDS_SLOW_PATH = Symbol("slow");
const INDEX_KEY = /^(?:0|[1-9]\d*)$/;

function prepare(value: unknown, ancestors: object[]): unknown {
  switch (typeof value) {
    case "string":
    case "boolean":
      return value;
    case "number":
      if (!Number.isFinite(value)) throw new TypeError(`canonical JSON cannot carry the number ${value}`);
      return value;
    case "object":
      if (value === null) return null;
      break;
    default:
      throw new TypeError(`canonical JSON cannot carry a ${typeof value}`);
  }
  const obj = value as { toJSON?: unknown };
  if (typeof obj.toJSON === "function") return prepare((obj.toJSON as () => unknown)(), ancestors);
  if (ancestors.includes(obj)) throw new TypeError("canonical JSON cannot carry a cycle");
  ancestors.push(obj);
  let result: unknown = obj;
  if (Array.isArray(obj)) {
    let copy: unknown[] | undefined;
    for (let i = 0; i < obj.length; i++) {
      const item: unknown = obj[i];
      const skip = item === undefined || typeof item === "function" || typeof item === "symbol";
      const next = skip ? null : prepare(item, ancestors);
      if (next === NEEDS_SLOW_PATH) return NEEDS_SLOW_PATH;
      if (next !== item && !copy) copy = obj.slice(0, i);
      if (copy) copy.push(next);
    }
    if (copy) result = copy;
  } else {
    const record = obj as Record<string, unknown>;
    const keys = Object.keys(record);
    let ordered = true;
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i]!;
      const first = key.charCodeAt(0); // an index key starts with a digit: most keys need no regular expression
      if (first >= 48 && first <= 57 && INDEX_KEY.test(key)) return NEEDS_SLOW_PATH;
      if (i > 0 && keys[i - 1]! > keys[i]!) ordered = false;
    }
    if (!ordered) keys.sort();
    // Copies have no prototype, so a key named `__proto__` (JSON.parse makes such own keys) stays a key.
    let copy: Record<string, unknown> | undefined = ordered ? undefined : (Object.create(null) as Record<string, unknown>);
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i]!;
      const item = record[key];
      if (item === undefined || typeof item === "function" || typeof item === "symbol") {
        if (!copy) {
          copy = Object.create(null) as Record<string, unknown>;
          for (let j = 0; j < i; j++) copy[keys[j]!] = record[keys[j]!];
        }
        continue;
      }
      const next = prepare(item, ancestors);
      if (next === NEEDS_SLOW_PATH) return NEEDS_SLOW_PATH;
      if (next !== item && !copy) {
        copy = Object.create(null) as Record<string, unknown>;
        for (let j = 0; j < i; j++) if (record[keys[j]!] !== undefined) copy[keys[j]!] = record[keys[j]!];
      }
      if (copy) copy[key] = next;
    }
    if (copy) result = copy;
  }
  ancestors.pop();
  return result;
}

/** Hex SHA-256 of a string (UTF-8). */
export function sha256Hex(text: string): string {
  // One-shot hashing: no Hash object per call.
  return hash("sha256", text, "hex");
}

/** Hex SHA-256 of the canonical JSON of `value`. */
export function hashCanonical(value: unknown): string {
  return sha256Hex(canonicalJson(value));
}

// Hot path: string concatenation, and an ancestor stack (short) instead of a Set for cycles.
function write(value: unknown, ancestors: object[]): string {
  switch (typeof value) {
    case "string":
      return JSON.stringify(value);
    case "number":
      if (!Number.isFinite(value)) throw new TypeError(`canonical JSON cannot carry the number ${value}`);
      return JSON.stringify(value);
    case "boolean":
      return value ? "true" : "false";
    case "object":
      if (value === null) return "null";
      break;
    default:
      throw new TypeError(`canonical JSON cannot carry a ${typeof value}`);
  }
  const obj = value as { toJSON?: unknown };
  if (typeof obj.toJSON === "function") return write((obj.toJSON as () => unknown)(), ancestors);
  if (ancestors.includes(obj)) throw new TypeError("canonical JSON cannot carry a cycle");
  ancestors.push(obj);
  let out: string;
  if (Array.isArray(obj)) {
    out = "[";
    for (let i = 0; i < obj.length; i++) {
      if (i > 0) out += ",";
      const item: unknown = obj[i];
      out += item === undefined || typeof item === "function" || typeof item === "symbol" ? "null" : write(item, ancestors);
    }
    out += "]";
  } else {
    const record = obj as Record<string, unknown>;
    const keys = Object.keys(record);
    if (keys.length > 1) keys.sort();
    out = "{";
    let first = true;
    for (const key of keys) {
      const item = record[key];
      if (item === undefined || typeof item === "function" || typeof item === "symbol") continue;
      out += `${first ? "" : ","}${JSON.stringify(key)}:${write(item, ancestors)}`;
      first = false;
    }
    out += "}";
  }
  ancestors.pop();
  return out;
}

/**
 * A deep, frozen copy made through canonical JSON: what the caller passed can no longer change
 * what was hashed and authorized.
 */
export function freezeCanonical<T>(value: T): { readonly value: T; readonly json: string; readonly hash: string } {
  const json = canonicalJson(value);
  return { value: deepFreeze(JSON.parse(json) as T), json, hash: sha256Hex(json) };
}

export function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === "object" && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const key of Object.keys(value)) deepFreeze((value as Record<string, unknown>)[key]);
  }
  return value;
}
