/**
 * Review: the hashes a call writes (inputHash, intentHash, every audit link's payload and MAC)
 * are byte-identical to what the code at 6bc6d8a writes, on random and hostile inputs; ctx.onAbort
 * and hostile callers never make gate.invoke throw. The old canonicalizer and audit chain are
 * taken from git (6bc6d8a) into a temporary directory and imported beside the current ones.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import fc from "fast-check";
import { z } from "zod";
import { canonicalJson, hashCanonical, sha256Hex } from "../canonical-json.js";
import { defineFamily } from "../family.js";
import { auditPayload, sealAuditEvent, sealLink } from "../journal/audit-chain.js";
import { createMemoryJournal } from "../journal/memory.js";
import type { AuditEventInput } from "../journal/types.js";
import { defineProfile } from "../profile.js";
import { createToolRegistry } from "../registry.js";
import { tool } from "./fixtures/one-tool.js";
import { createGate } from "./gate.js";

const BASE = "6bc6d8a";
const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, "../../../..");
let dir = "";
let old: {
  canonicalJson: typeof canonicalJson;
  hashCanonical: typeof hashCanonical;
  auditPayload: typeof auditPayload;
  sealAuditEvent: typeof sealAuditEvent;
};

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "toolgate-hashes-review-"));
  const show = (path: string) => execFileSync("git", ["show", `${BASE}:${path}`], { cwd: root, encoding: "utf8" });
  writeFileSync(join(dir, "canonical-json.ts"), show("packages/core/src/canonical-json.ts"));
  const chain = show("packages/core/src/journal/audit-chain.ts")
    .replace('from "../canonical-json.js"', 'from "./canonical-json.ts"')
    .replace('from "./types.js"', `from ${JSON.stringify(pathToFileURL(join(here, "../journal/types.ts")).href)}`);
  writeFileSync(join(dir, "audit-chain.ts"), chain);
  const canonical = (await import(pathToFileURL(join(dir, "canonical-json.ts")).href)) as typeof old;
  const audit = (await import(pathToFileURL(join(dir, "audit-chain.ts")).href)) as typeof old;
  old = {
    canonicalJson: canonical.canonicalJson,
    hashCanonical: canonical.hashCanonical,
    auditPayload: audit.auditPayload,
    sealAuditEvent: audit.sealAuditEvent,
  };
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const PIECES = ["a", "é", "e\u0301", "ﬁ", "😀", "\ud800", "\udfff", '"', "\\", "\n", "\u0000", "\u2028", "\u200b", "İ", "Ａ", "0", "9", "<", "/"];
const KEYS = [
  "a",
  "B",
  "",
  "__proto__",
  "constructor",
  "toString",
  "0",
  "1",
  "10",
  "01",
  "-1",
  "1.5",
  "4294967295",
  "4294967294",
  "9007199254740993",
  "é",
  "e\u0301",
  "😀",
  "\ud800",
  "a\u0000",
];
const NUMBERS = [0, -0, 1, -1, 0.1, 1e21, 1e-7, 5e-324, 2 ** 53 + 2, -98765.4321, 1.7976931348623157e308];

const text = fc.array(fc.constantFrom(...PIECES), { maxLength: 10 }).map((pieces) => pieces.join(""));
const key = fc.oneof(fc.constantFrom(...KEYS), text);
/** Objects built with defineProperty, so `__proto__` stays a key. */
const { value } = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: "small" },
    fc.constant(null),
    fc.boolean(),
    fc.oneof(fc.constantFrom(...NUMBERS), fc.double()),
    text,
    fc.array(tie("value"), { maxLength: 4 }),
    fc.array(fc.tuple(key, tie("value")), { maxLength: 5 }).map((entries) => {
      const out: Record<string, unknown> = {};
      for (const [k, v] of entries) Object.defineProperty(out, k, { value: v, enumerable: true, writable: true, configurable: true });
      return out;
    }),
  ),
}));
const maybeText = fc.option(text, { nil: undefined });

/** A value's answer, or the error it throws (both versions must throw alike). */
const either = <T>(f: () => T): T | string => {
  try {
    return f();
  } catch (e) {
    return `threw ${String(e)}`;
  }
};

describe(`review: hashes byte-identical to ${BASE}`, () => {
  it("canonicalJson and hashCanonical on random hostile values", () => {
    fc.assert(
      fc.property(value, (v) => {
        expect(either(() => canonicalJson(v))).toBe(either(() => old.canonicalJson(v)));
        expect(either(() => hashCanonical(v))).toBe(either(() => old.hashCanonical(v)));
      }),
      { numRuns: 4000 },
    );
  });

  it("audit payloads and MACs: auditPayload, sealAuditEvent, and sealLink with the row's subject", () => {
    const event = fc.record({
      type: text,
      at: text,
      data: fc.dictionary(fc.string(), value, { maxKeys: 4 }),
      invocationId: maybeText,
      principal: maybeText,
      tenant: maybeText,
      toolId: maybeText,
      subject: maybeText,
    });
    fc.assert(
      fc.property(event, fc.nat(100_000), maybeText, (e: AuditEventInput, seq, subject) => {
        const head = { seq, mac: sha256Hex(String(seq)) };
        expect(either(() => auditPayload(seq + 1, e))).toBe(either(() => old.auditPayload(seq + 1, e)));
        expect(either(() => sealAuditEvent("k", head, e))).toEqual(either(() => old.sealAuditEvent("k", head, e)));
        expect(either(() => sealLink("k", head, e, subject))).toEqual(either(() => old.sealAuditEvent("k", head, { ...e, subject })));
      }),
      { numRuns: 2000 },
    );
  });

  it("a gated side-effectful call's inputHash, intentHash and every link, on random inputs, are what the old code writes", async () => {
    const journal = createMemoryJournal({ auditKey: "hash-review" });
    const write = tool({
      effect: "write",
      idempotent: false,
      retryable: false,
      reversible: false,
      input: z.any(),
      handler: (input: unknown) => ({ echoed: input }),
    });
    const family = defineFamily({ name: "x", tools: [write], permissions: ["x:use"] });
    const gate = createGate({ registry: createToolRegistry({ families: [family] }), journal, secrets: ["s3cret-value"] });
    const profile = defineProfile({ name: "p", allow: ["x:use"], maxRisk: "critical" });
    const inputs = new Map<string, unknown>();
    const samples = fc.sample(value, { numRuns: 150, seed: 31 });
    for (let i = 0; i < samples.length; i++) {
      const input = { v: samples[i], ...(i % 7 === 0 ? { secret: "s3cret-value" } : {}) };
      const result = await gate.invoke("x.t", input, { principal: "agent", tenant: "t", profile, idempotencyKey: `k${i}` });
      expect(["ok", "error", "denied"]).toContain(result.status);
      inputs.set(result.invocationId, input);
    }
    const entries = await journal.listOutbox();
    expect(entries.length).toBeGreaterThan(100);
    for (const e of entries) {
      const { intentHash, state: _s, boundary: _b, attempts: _a, updatedAt: _u, grantId: _g, result: _r, error: _e, ...fields } = e;
      expect(intentHash).toBe(old.hashCanonical(fields));
      expect(e.inputHash).toBe(sha256Hex(old.canonicalJson(inputs.get(e.invocationId))));
    }
    const links = await journal.readAudit();
    let head = { seq: 0, mac: "0".repeat(64) };
    for (const { seq, prevMac, mac, ...event } of links) {
      if (seq === 1) head = { seq: 0, mac: prevMac };
      const resealed = old.sealAuditEvent("hash-review", head, event);
      expect(resealed.mac).toBe(mac);
      head = { seq, mac };
    }
    expect(links.length).toBeGreaterThan(250);
  });
});
