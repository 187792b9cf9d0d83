import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { jsonBoundsProblem } from "./json-bounds.js";

const nested = (depth: number, leaf: unknown = 1, kind: "array" | "object" = "array"): unknown => {
  let value = leaf;
  for (let i = 0; i < depth; i++) value = kind === "array" ? [value] : { k: value };
  return value;
};

describe("jsonBoundsProblem", () => {
  it("refuses nesting 100,000 levels deep, arrays and objects alike, without recursing", () => {
    expect(jsonBoundsProblem(nested(100_000))).toMatch(/nesting deeper than 128 levels/);
    expect(jsonBoundsProblem(nested(100_000, 1, "object"))).toMatch(/nesting deeper than 128 levels/);
    expect(jsonBoundsProblem(JSON.parse("[".repeat(50_000) + "]".repeat(50_000)))).toMatch(/nesting/);
  });

  it("refuses too many values, too many entries, long strings and long keys", () => {
    expect(
      jsonBoundsProblem(
        Array.from({ length: 10 }, () => [1, 2, 3]),
        { maxNodes: 20 },
      ),
    ).toMatch(/more than 20 values/);
    expect(
      jsonBoundsProblem(
        Array.from({ length: 11 }, () => 0),
        { maxEntries: 10 },
      ),
    ).toMatch(/array of more than 10/);
    expect(jsonBoundsProblem(Object.fromEntries(Array.from({ length: 11 }, (_, i) => [`k${i}`, i])), { maxEntries: 10 })).toMatch(/object of more than 10/);
    expect(jsonBoundsProblem({ s: "x".repeat(11) }, { maxStringLength: 10 })).toMatch(/string longer/);
    expect(jsonBoundsProblem({ ["k".repeat(11)]: 1 }, { maxStringLength: 10 })).toMatch(/key longer/);
  });

  it("reads a getter that throws as a problem, never a throw", () => {
    const hostile = Object.defineProperty({}, "x", {
      enumerable: true,
      get() {
        throw new Error("boom");
      },
    });
    expect(jsonBoundsProblem({ a: hostile })).toMatch(/cannot be read/);
  });

  it("accepts every value within the bounds (fast-check: JSON values up to depth 8)", () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 8 }), (value) => {
        expect(jsonBoundsProblem(value)).toBeUndefined();
      }),
    );
    expect(jsonBoundsProblem(nested(127))).toBeUndefined();
    expect(jsonBoundsProblem({ __proto__: 1, constructor: { prototype: [] } })).toBeUndefined();
  });
});
