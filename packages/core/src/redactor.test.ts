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

  it("keys the prototype has (toString, constructor) stay plain own keys; shared parts stay shared, a cycle stays a cycle", () => {
    const r = createRedactor(["sk-secret-value"]);
    const shared = { note: "sk-secret-value" };
    const value: Record<string, unknown> = { toString: "sk-secret-value", constructor: 1, hasOwnProperty: shared, again: shared };
    value["self"] = value;
    const out = r.redact(value);
    expect(Object.getOwnPropertyDescriptor(out, "toString")).toEqual({ value: REDACTED, enumerable: true, writable: true, configurable: true });
    expect(Object.keys(out)).toEqual(["toString", "constructor", "hasOwnProperty", "again", "self"]);
    expect(out["hasOwnProperty"]).toEqual({ note: REDACTED });
    expect(out["hasOwnProperty"]).toBe(out["again"]);
    expect(out["self"]).toBe(out);
  });

  it("text found clean before is looked at again whenever the set of secrets changes (registered, held, released, expired)", () => {
    let now = 1000;
    const r = createRedactor(["first-secret"], { clock: () => now });
    const key = { "second-secret": "third-secret", other: "held-secret-x" };
    expect(r.redact(key)).toEqual(key);
    expect(r.redactText("held-secret-x")).toBe("held-secret-x");
    r.register("second-secret");
    expect(r.redact(key)).toEqual({ [REDACTED]: "third-secret", other: "held-secret-x" });
    r.register("third-secret", { until: 2000 });
    const lease = r.hold("held-secret-x");
    expect(r.redact(key)).toEqual({ [REDACTED]: REDACTED, other: REDACTED });
    lease.release();
    now = 2500;
    expect(r.redact(key)).toEqual({ [REDACTED]: "third-secret", other: "held-secret-x" });
    r.register("held-secret-x");
    expect(r.redactText("held-secret-x")).toBe(REDACTED);
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

/** Every encoder a secret may pass through on its way out: URL, form and JSON, in any case. */
function encodings(secret: string): Record<string, string> {
  const component = encodeURIComponent(secret);
  const lower = component.replace(/%[0-9A-F]{2}/g, (e) => e.toLowerCase());
  let flip = false;
  const mixed = component.replace(/%[0-9A-F]{2}/g, (e) => ((flip = !flip) ? e.toLowerCase() : e));
  const base64 = Buffer.from(secret).toString("base64").replace(/=+$/, ""); // padding is not the secret
  const jsonUnicode = Array.from(secret, (ch) =>
    /[a-zA-Z0-9._-]/.test(ch) ? ch : Array.from({ length: ch.length }, (_, i) => `\\u${ch.charCodeAt(i).toString(16).padStart(4, "0")}`).join(""),
  ).join("");
  return {
    component,
    lowerPercent: lower,
    mixedPercent: mixed,
    uri: encodeURI(secret),
    form: new URLSearchParams({ v: secret }).toString().slice(2),
    formLower: new URLSearchParams({ v: secret })
      .toString()
      .slice(2)
      .replace(/%[0-9A-F]{2}/g, (e) => e.toLowerCase()),
    jsonSlashes: JSON.stringify(secret).slice(1, -1).replace(/\//g, "\\/"),
    jsonUnicodeLower: jsonUnicode,
    jsonUnicodeUpper: jsonUnicode.replace(/\\u([0-9a-f]{4})/g, (_, h: string) => `\\u${h.toUpperCase()}`),
    base64InForm: new URLSearchParams({ v: base64 }).toString().slice(2),
    base64InLowerUrl: encodeURIComponent(base64).replace(/%[0-9A-F]{2}/g, (e) => e.toLowerCase()),
  };
}

describe("createRedactor: every URL, form and JSON spelling, in any case", () => {
  const secrets = ["pass word/with+plus=eq&amp", "clé-secrète-日本", "sk+/=&% live", "a b c d e f"];
  for (const secret of secrets) {
    for (const [name, text] of Object.entries(encodings(secret))) {
      it(`redacts ${JSON.stringify(secret)} ${name}-encoded (${text.slice(0, 40)})`, () => {
        const r = createRedactor([secret]);
        const out = r.redactText(`before=${text}&after`);
        expect(out).toBe(`before=${REDACTED}&after`);
        expect(r.contains(text)).toBe(true);
      });
    }
  }

  it("keeps text that only resembles a secret", () => {
    const r = createRedactor(["pass word/with+plus"]);
    expect(r.redactText("pass word-with+plus pass%20word%2Gwith")).toBe("pass word-with+plus pass%20word%2Gwith");
  });
});

describe("createRedactor: a secret leaves when what held it ends", () => {
  it("drops a secret registered until a time once the clock passes it, and one unregistered early at once", () => {
    let now = 1000;
    const r = createRedactor(["permanent-secret"], { clock: () => now });
    r.register("grant-token-one", { until: 2000 });
    r.register("grant-token-two", { until: 5000 });
    expect(r.size).toBe(3);
    expect(r.redactText("grant-token-one")).toBe(REDACTED);
    now = 2000;
    expect(r.redactText("grant-token-one grant-token-two")).toBe(`grant-token-one ${REDACTED}`);
    r.unregister("grant-token-two");
    expect(r.redactText("grant-token-two permanent-secret")).toBe(`grant-token-two ${REDACTED}`);
    expect(r.size).toBe(1);
  });

  it("never lets unregister or an expiry remove a permanent registration or a held secret", () => {
    let now = 0;
    const r = createRedactor([], { clock: () => now });
    r.register("both-ways-secret");
    r.register("both-ways-secret", { until: 10 });
    const lease = r.hold("held-only-secret");
    r.register("held-only-secret", { until: 10 });
    r.unregister("both-ways-secret");
    r.unregister("held-only-secret");
    now = 100;
    expect(r.redactText("both-ways-secret held-only-secret")).toBe(`${REDACTED} ${REDACTED}`);
    lease.release();
    lease.release(); // once only
    expect(r.redactText("held-only-secret")).toBe("held-only-secret");
  });

  it("keeps a secret held twice until both holds are released, and ignores a time already past", () => {
    const r = createRedactor([], { clock: () => 50 });
    const a = r.hold("shared-access-token");
    const b = r.hold("shared-access-token");
    a.release();
    expect(r.contains("shared-access-token")).toBe(true);
    b.release();
    expect(r.contains("shared-access-token")).toBe(false);
    r.register("stale-grant-token", { until: 50 });
    r.register("odd-grant-token", { until: Number.NaN });
    expect(r.size).toBe(0);
  });

  it("returns to its base set after 10,000 grants are registered and released", () => {
    let now = 0;
    const r = createRedactor(["base-secret-a", "base-secret-b"], { clock: () => now });
    const base = r.size;
    let missed = 0;
    // Grants live 20 ticks; half are consumed at once, the rest expire: like an approval desk at work.
    for (let i = 0; i < 10_000; i++) {
      const token = `grant-token-${i.toString(36).padStart(6, "0")}`;
      r.register(token, { until: now + 20 });
      if (r.redactText(`t=${token}`) !== `t=${REDACTED}`) missed++;
      if (i % 2 === 0) r.unregister(token); // consumed; the rest expire
      now += 1;
      if (r.size > base + 20) break; // grants that never leave: stop here (and fail below), not after 10,000 slow rebuilds
    }
    expect(r.size).toBeLessThanOrEqual(base + 20);
    expect(missed).toBe(0);
    expect(r.size).toBeGreaterThan(base);
    expect(r.size).toBeLessThanOrEqual(base + 20);
    now += 20;
    expect(r.size).toBe(base);
    expect(r.redactText("grant-token-000001 base-secret-a")).toBe(`grant-token-000001 ${REDACTED}`);
  });
});

describe("createRedactor: spellings an encoder may choose for any character, and base64 inside a longer value", () => {
  const secret = "sk_live_Abc123XyZ789";
  const escapedEach = {
    percentEveryByte: Array.from(Buffer.from(secret), (b) => `%${b.toString(16).padStart(2, "0")}`).join(""),
    percentEveryByteUpper: Array.from(Buffer.from(secret), (b) => `%${b.toString(16).padStart(2, "0").toUpperCase()}`).join(""),
    jsonEveryChar: Array.from(secret, (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, "0")}`).join(""),
    percentSome: secret.replace(/[aeiouAZ0-9]/g, (ch) => `%${ch.charCodeAt(0).toString(16).toUpperCase()}`),
  };
  for (const [name, text] of Object.entries(escapedEach)) {
    it(`redacts a secret ${name} (${text.slice(0, 30)})`, () => {
      const r = createRedactor([secret]);
      expect(r.redactText(`v=${text};`)).not.toContain(text);
      expect(r.contains(text)).toBe(true);
    });
  }

  // Basic authorization (`user:token`), a token after a prefix or before more data: the secret's bytes start anywhere in a 3-byte group.
  for (const [prefix, suffix] of [
    ["user:", ""],
    ["a", ""],
    ["ab", ""],
    ["", "x"],
    ["a", "xy"],
    ["Bearer ", "\n"],
  ] as const) {
    for (const flavour of ["base64", "base64url"] as const) {
      it(`redacts the secret in ${flavour} of ${JSON.stringify(prefix + "<secret>" + suffix)}`, () => {
        const r = createRedactor([secret]);
        const encoded = Buffer.from(prefix + secret + suffix).toString(flavour);
        const out = r.redactText(encoded);
        expect(out).toContain(REDACTED);
        // What is left besides the marker is at most the characters the prefix and suffix share with the secret.
        expect(out.replace(REDACTED, "").length).toBeLessThanOrEqual(Math.ceil(((prefix.length + suffix.length) * 8) / 6) + 4);
      });
    }
  }
});
