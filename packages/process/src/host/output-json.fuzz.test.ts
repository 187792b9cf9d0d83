import { jsonSchemaOf } from "@toolgate/core";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { VERIFICATION_STATES } from "../protocol/frames.js";
import { processOutputSchema } from "./manifests.js";
import { isCertifiedJson } from "./output-json.js";

// The process output check takes a fast path for plain JSON data. It must never accept what
// `z.json()` refuses, must hand back what `z.json()` would, and must render the same JSON Schema.

/** The schema as it was before the fast path. */
const before = z.object({ verified: z.enum(VERIFICATION_STATES), output: z.json() });

/** Structural equality, stricter than toEqual: prototypes, -0, property kinds, extensibility, sharing and cycles. */
function sameStructure(a: unknown, b: unknown, pairs = new Map<object, object>()): boolean {
  if (typeof a !== typeof b) return false;
  if (a === null || b === null || typeof a !== "object") return Object.is(a, b);
  const x = a as Record<string, unknown>;
  const y = b as Record<string, unknown>;
  if (pairs.has(x)) return pairs.get(x) === y;
  pairs.set(x, y);
  if (Array.isArray(x) !== Array.isArray(y) || Object.getPrototypeOf(x) !== Object.getPrototypeOf(y)) return false;
  if (Object.isExtensible(x) !== Object.isExtensible(y) || Object.getOwnPropertySymbols(x).length + Object.getOwnPropertySymbols(y).length > 0) return false;
  const names = Object.getOwnPropertyNames(x);
  if (JSON.stringify(names) !== JSON.stringify(Object.getOwnPropertyNames(y))) return false;
  return names.every((name) => {
    const dx = Object.getOwnPropertyDescriptor(x, name)!;
    const dy = Object.getOwnPropertyDescriptor(y, name)!;
    if (dx.enumerable !== dy.enumerable || dx.writable !== dy.writable || dx.configurable !== dy.configurable || "get" in dx || "get" in dy) return false;
    return sameStructure(dx.value, dy.value, pairs);
  });
}

let getterReads = 0;
const hostileMinusZero = () => -0;
const hostileShared = () => {
  const shared = { s: "shared" };
  return [shared, { inner: shared }];
};
/** Values `z.json()` refuses, or accepts only as a different copy: each made fresh (cycles, counters). */
const hostile: readonly (() => unknown)[] = [
  () => NaN,
  () => Infinity,
  () => -Infinity,
  hostileMinusZero,
  () => undefined,
  () => () => 1,
  () => Symbol("s"),
  () => 10n,
  () => new Date(0),
  () => new Map([["a", 1]]),
  () =>
    new (class Box {
      a = 1;
    })(),
  () => Object.assign(Object.create(null) as object, { a: 1 }),
  () => Object.create({ inherited: 1 }) as unknown,
  () => JSON.parse('{"__proto__":{"x":1},"a":1}') as unknown,
  () => ({ [Symbol("k")]: 1, a: 1 }),
  () => Object.defineProperty({ a: 1 }, "hidden", { value: 2, enumerable: false }),
  () => Object.defineProperty({ a: 1 }, "fixed", { value: 2, enumerable: true, writable: false, configurable: true }),
  () => Object.freeze({ a: 1 }),
  () => Object.freeze([1, 2]),
  () => Object.preventExtensions({ a: 1 }),
  () => [1, , 3],
  () => [undefined],
  () => Object.assign([1, 2], { extra: 3 }),
  () => Object.defineProperty([1, 2], "hidden", { value: 3, enumerable: false }),
  () => Object.defineProperty([1, 2], 0, { get: () => (getterReads++, 1), enumerable: true, configurable: true }),
  () => Object.defineProperty({}, "g", { get: () => (getterReads++, "x"), enumerable: true, configurable: true }),
  () => new (class List extends Array<number> {})(),
  () => new Proxy({ a: 1 }, {}),
  () => new Proxy([1], {}),
  () => new String("s"),
  () => new Uint8Array(2),
  () => {
    const cycle: Record<string, unknown> = { a: 1 };
    cycle["self"] = cycle;
    return cycle;
  },
  hostileShared,
  () => {
    let deep: unknown = "leaf";
    for (let i = 0; i < 80; i++) deep = { d: deep };
    return deep;
  },
  () => Array.from({ length: 10_001 }, () => 0),
  () => Array.from({ length: 257 }, (_, i) => ({ i })),
];

/** A plain JSON value (as JSON.parse makes it) with one hostile value put at a chosen place in it. */
const values = fc
  .tuple(fc.jsonValue({ maxDepth: 3 }), fc.integer({ min: 0, max: hostile.length - 1 }), fc.nat(), fc.boolean())
  .map(([json, which, where, spoil]) => {
    const value = JSON.parse(JSON.stringify(json) ?? "null") as unknown;
    if (!spoil) return value;
    const containers: Record<string | number, unknown>[] = [];
    const walk = (v: unknown): void => {
      if (v === null || typeof v !== "object") return;
      containers.push(v as Record<string, unknown>);
      for (const child of Object.values(v)) walk(child);
    };
    walk(value);
    const bad = hostile[which]!();
    if (containers.length === 0) return bad;
    const target = containers[where % containers.length]!;
    if (Array.isArray(target)) target.push(bad);
    else target[`k${where % 7}`] = bad;
    return value;
  });

function agree(output: unknown): void {
  const old = before.safeParse({ verified: "Verified", output });
  const now = processOutputSchema.safeParse({ verified: "Verified", output });
  expect(now.success).toBe(old.success);
  if (old.success && now.success) expect(sameStructure(now.data, old.data)).toBe(true);
  else expect(now.error?.issues).toEqual(old.error?.issues);
}

describe("the process output check agrees with z.json()", () => {
  it("on plain JSON and on JSON with a hostile value inside: the same verdict, an equal value, the same issues", () => {
    fc.assert(fc.property(values, agree), { numRuns: 3000 });
  });

  it("on every hostile value alone, at the root and nested", () => {
    for (const make of hostile) {
      agree(make());
      agree({ a: [make()] });
    }
    expect(hostile.length).toBeGreaterThan(30);
  });

  it("certifies plain JSON as JSON.parse makes it, and none of the hostile values", () => {
    fc.assert(
      fc.property(fc.jsonValue(), (json) => {
        const text = JSON.stringify(json) ?? "null";
        // Only a "__proto__" key is left to z.json() (its copy drops the key).
        expect(isCertifiedJson(JSON.parse(text))).toBe(!text.includes('"__proto__":'));
      }),
      { numRuns: 500 },
    );
    const certified = hostile.map((make) => [isCertifiedJson(make()), isCertifiedJson({ a: [make()] })]);
    // -0 is JSON's number (the copy keeps it), and a subtree reached twice is copied once and shared; the rest is left to z.json().
    const plainData = new Set([hostile.indexOf(hostileMinusZero), hostile.indexOf(hostileShared)]);
    expect(certified).toEqual(hostile.map((_, i) => [plainData.has(i), plainData.has(i)]));
  });

  it("runs no code of the value before z.json() reads it: a getter or a proxy trap runs as often as before", () => {
    const traps: string[] = [];
    const proxied = () =>
      new Proxy({ a: 1 }, new Proxy({}, { get: (_t, trap) => (traps.push(String(trap)), Reflect[trap as keyof typeof Reflect]) }) as ProxyHandler<object>);
    const getter = () => Object.defineProperty({ b: 2 }, "g", { get: () => (getterReads++, "x"), enumerable: true, configurable: true });
    const count = (schema: z.ZodType, make: () => unknown): [number, string[]] => {
      getterReads = 0;
      traps.length = 0;
      schema.safeParse({ verified: "Verified", output: make() });
      return [getterReads, [...traps]];
    };
    for (const make of [proxied, getter, () => ({ x: [getter(), proxied()] })]) {
      expect(count(processOutputSchema, make)).toEqual(count(before, make));
    }
    expect(count(processOutputSchema, getter)[0]).toBe(1);
  });

  it("hands back plain JSON as it is, and anything else as z.json()'s copy", () => {
    const plain = JSON.parse('{"words":3,"list":[1,"a",null,true,{"x":-0}]}') as unknown;
    const parsed = processOutputSchema.parse({ verified: "NotApplicable", output: plain });
    expect(parsed.output).toBe(plain);
    const withProto = JSON.parse('{"__proto__":{"x":1},"a":1}') as unknown;
    const copied = processOutputSchema.parse({ verified: "NotApplicable", output: withProto });
    expect(copied.output).not.toBe(withProto);
    expect(Object.hasOwn(copied.output as object, "__proto__")).toBe(false);
  });

  it("renders the same JSON Schema, both ways, as the manifest and the docs read it", () => {
    for (const io of ["input", "output"] as const) {
      expect(jsonSchemaOf(processOutputSchema, io)).toEqual(jsonSchemaOf(before, io));
      expect(JSON.stringify(z.toJSONSchema(processOutputSchema, { io, unrepresentable: "any" }))).toBe(
        JSON.stringify(z.toJSONSchema(before, { io, unrepresentable: "any" })),
      );
    }
  });
});
