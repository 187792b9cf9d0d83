import canonicalizeModule from "canonicalize";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { canonicalJson, freezeCanonical, hashCanonical } from "./canonical-json.js";

// The reference implementation is CommonJS; take the function whichever way the loader hands it over.
type Serialize = (input: unknown) => string | undefined;
const loaded = canonicalizeModule as unknown as Serialize | { default: Serialize };
const canonicalize: Serialize = typeof loaded === "function" ? loaded : loaded.default;

describe("canonicalJson (RFC 8785)", () => {
  it("matches the reference implementation on the RFC's examples", () => {
    const sample = {
      numbers: [333333333.33333329, 1e30, 4.5, 2e-3, 0.000000000000000000000000001],
      string: '\u20ac$\u000F\nA\'B"\\\\"/',
      literals: [null, true, false],
    };
    expect(canonicalJson(sample)).toBe(canonicalize(sample));
    expect(canonicalJson({ "\u20ac": 1, "\r": 2, "\ud83d\ude00": 3, "1": 4, a: 5 })).toBe(
      canonicalize({ "\u20ac": 1, "\r": 2, "\ud83d\ude00": 3, "1": 4, a: 5 }),
    );
  });

  it("matches the reference implementation on generated JSON", () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        expect(canonicalJson(value)).toBe(canonicalize(value));
      }),
      { numRuns: 500 },
    );
  });

  it("orders array-index keys by code units, not numerically", () => {
    const value = { "10": 1, "9": 2, a: { b: [{ z: 1, y: undefined }], "2": 0 }, c: new Date(0) };
    expect(canonicalJson(value)).toBe(canonicalize(value));
    expect(canonicalJson(value)).toBe('{"10":1,"9":2,"a":{"2":0,"b":[{"z":1}]},"c":"1970-01-01T00:00:00.000Z"}');
    // Functions are dropped as JSON.stringify drops them (the reference writes an invalid `undefined`).
    expect(canonicalJson({ b: 1, a: () => 1 })).toBe('{"b":1}');
  });

  it("matches the reference on generated objects with shuffled and numeric keys", () => {
    const key = fc.oneof(fc.string(), fc.nat().map(String), fc.constantFrom("a", "b", "é", "\u20ac", "\ud83d\ude00"));
    const tree = fc.letrec((tie) => ({
      node: fc.oneof(
        { depthSize: "small" },
        fc.jsonValue({ maxDepth: 1 }),
        fc.array(tie("node"), { maxLength: 4 }),
        fc.dictionary(key, tie("node"), { maxKeys: 5 }),
      ),
    })).node;
    fc.assert(
      fc.property(tree, (value) => {
        expect(canonicalJson(value)).toBe(canonicalize(value));
      }),
      { numRuns: 500 },
    );
  });

  it("keeps an own key named __proto__ (as JSON.parse makes it) instead of dropping it", () => {
    for (const text of ['{"__proto__":[],"":[]}', '{"b":1,"__proto__":{"x":1},"a":2}', '{"z":{"__proto__":null,"a":1}}']) {
      const value: unknown = JSON.parse(text);
      expect(canonicalJson(value)).toBe(canonicalize(value));
    }
    expect(canonicalJson(JSON.parse('{"__proto__":[],"":[]}'))).toBe('{"":[],"__proto__":[]}');
  });

  it("is independent of key order", () => {
    expect(hashCanonical({ a: 1, b: [1, { d: 2, c: 3 }] })).toBe(hashCanonical({ b: [1, { c: 3, d: 2 }], a: 1 }));
  });

  it("refuses what JSON cannot carry faithfully", () => {
    const cyclic: Record<string, unknown> = {};
    cyclic["me"] = cyclic;
    for (const bad of [Number.NaN, Number.POSITIVE_INFINITY, 1n, cyclic, Symbol("s"), () => 1]) {
      expect(() => canonicalJson(bad)).toThrow(TypeError);
    }
  });

  it("freezes a deep copy", () => {
    const input = { a: { b: [1, 2] } };
    const frozen = freezeCanonical(input);
    input.a.b.push(3);
    expect(frozen.value).toEqual({ a: { b: [1, 2] } });
    expect(Object.isFrozen(frozen.value.a.b)).toBe(true);
  });
});
