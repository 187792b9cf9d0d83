import { describe, expect, it } from "vitest";
import { canonicalJson, hashCanonical } from "../canonical-json.js";
import { intentHashOf, type IntentFields } from "./intent-hash.js";

/** A small seeded generator, so a failure names the case that broke. */
function random(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const PIECES = ["a", "Z", "é", "€", "😀", "\ud800", "\udc00", '"', "\\", "\n", "\u0000", "\u001f", "\u2028", " ", "/", "<", "1", "ß", "İ", "\u00ad"];
const KEYS = ["a", "b", "B", "", "__proto__", "constructor", "0", "1", "10", "01", "-1", "é", "😀", "a\u0000", "aa", "\ud800"];
const NUMBERS = [0, -0, 1, -1, 0.1, 1e21, 1e-7, -1e-7, 5e-324, Number.MAX_SAFE_INTEGER, 2 ** 53 + 2, 123.456, -98765.4321];

function text(next: () => number, max: number): string {
  let out = "";
  const length = Math.floor(next() * max);
  for (let i = 0; i < length; i++) out += PIECES[Math.floor(next() * PIECES.length)];
  return out;
}

function value(next: () => number, depth: number): unknown {
  const pick = Math.floor(next() * (depth > 3 ? 5 : 7));
  switch (pick) {
    case 0:
      return null;
    case 1:
      return next() < 0.5;
    case 2:
      return NUMBERS[Math.floor(next() * NUMBERS.length)]! * (next() < 0.5 ? 1 : next() * 1000);
    case 3:
    case 4:
      return text(next, 12);
    case 5:
      return Array.from({ length: Math.floor(next() * 4) }, () => value(next, depth + 1));
    default: {
      const record: Record<string, unknown> = {};
      const count = Math.floor(next() * 5);
      for (let i = 0; i < count; i++) {
        const key = next() < 0.7 ? KEYS[Math.floor(next() * KEYS.length)]! : text(next, 6);
        Object.defineProperty(record, key, { value: value(next, depth + 1), enumerable: true, writable: true, configurable: true });
      }
      return record;
    }
  }
}

function fieldsFor(next: () => number, input: unknown): IntentFields {
  return {
    key: text(next, 20) || "k",
    invocationId: `inv_${Math.floor(next() * 1e9).toString(36)}`,
    toolId: "notes.add_note",
    principal: text(next, 10),
    tenant: text(next, 10),
    inputHash: "0123456789abcdef".repeat(4),
    input,
    inputRedacted: false,
    effect: (["none", "read", "write", "destructive"] as const)[Math.floor(next() * 4)]!,
    idempotent: next() < 0.5,
    target: next() < 0.4 ? undefined : text(next, 16),
    at: new Date(Math.floor(next() * 4e12)).toISOString(),
  };
}

describe("intentHashOf", () => {
  it("equals hashCanonical of the intent for 3,000 random inputs and fields (the splice writes what the canonicalizer writes)", () => {
    const next = random(17);
    for (let i = 0; i < 3000; i++) {
      const inputJson = canonicalJson(value(next, 0));
      const fields = fieldsFor(next, JSON.parse(inputJson));
      const spliced = intentHashOf(fields, inputJson);
      if (spliced !== hashCanonical(fields)) expect.fail(`case ${i}: ${JSON.stringify(fields)}`);
    }
    expect(intentHashOf(fieldsFor(random(1), { a: 1 }), '{"a":1}')).toBe(hashCanonical(fieldsFor(random(1), { a: 1 })));
  });

  it("falls back to the canonicalizer when the input was redacted or a field is not what it should be", () => {
    const base = fieldsFor(random(5), { note: "[REDACTED]" });
    const redacted = { ...base, inputRedacted: true };
    // The text passed in is ignored where it cannot be trusted to be the input's canonical form.
    expect(intentHashOf(redacted, '{"note":"sk-live-secret"}')).toBe(hashCanonical(redacted));
    const odd = { ...base, principal: 42 as unknown as string, target: 7 as unknown as string, idempotent: "yes" as unknown as boolean };
    expect(intentHashOf(odd, '{"note":"[REDACTED]"}')).toBe(hashCanonical(odd));
    expect(intentHashOf(base, undefined)).toBe(hashCanonical(base));
  });
});
