import { describe, expect, it } from "vitest";
import { createRedactor, REDACTED } from "./redactor.js";

describe("createRedactor", () => {
  it("redacts every registered secret in its plain, URL-encoded, JSON-escaped and base64 spellings", () => {
    const secret = 'p@ss w/"quote"+';
    const r = createRedactor([secret]);
    const texts = [
      secret,
      encodeURIComponent(secret),
      JSON.stringify(secret).slice(1, -1),
      Buffer.from(secret).toString("base64"),
      Buffer.from(secret).toString("base64url"),
    ];
    for (const text of texts) expect(r.redactText(`before ${text} after`)).toBe(`before ${REDACTED} after`);
  });

  it("walks nested values, keys included, without changing the original", () => {
    const r = createRedactor(["sk-secret-value"]);
    const value = { list: ["x sk-secret-value y", { deep: "sk-secret-value" }], "sk-secret-value": 1, n: 5 };
    expect(r.redact(value)).toEqual({ list: [`x ${REDACTED} y`, { deep: REDACTED }], [REDACTED]: 1, n: 5 });
    expect(value.list[0]).toBe("x sk-secret-value y");
  });

  it("keeps a key named __proto__ as a key, and never changes a prototype", () => {
    const r = createRedactor(["sk-secret-value"]);
    const value = JSON.parse('{"__proto__":{"polluted":"sk-secret-value"},"a":1}') as Record<string, unknown>;
    const out = r.redact(value);
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    expect(Object.keys(out)).toEqual(["__proto__", "a"]);
    expect(JSON.stringify(out)).toBe('{"__proto__":{"polluted":"[REDACTED]"},"a":1}');
    expect((out as { polluted?: unknown }).polluted).toBeUndefined();
  });

  it("prefers the longest secret when one contains another", () => {
    const r = createRedactor(["abcdef", "abcdefghij"]);
    expect(r.redactText("abcdefghij")).toBe(REDACTED);
  });

  it("ignores secrets too short to redact safely", () => {
    const r = createRedactor(["ab"]);
    expect(r.size).toBe(0);
    expect(r.redactText("abc")).toBe("abc");
  });

  it("handles regular-expression characters in secrets", () => {
    const r = createRedactor(["a.b*c+?(d)"]);
    expect(r.redactText("xa.b*c+?(d)x aXbbc")).toBe(`x${REDACTED}x aXbbc`);
    expect(r.contains("a.b*c+?(d)")).toBe(true);
    expect(r.contains("nothing")).toBe(false);
  });
});
