import { describe, expect, it } from "vitest";
import { sampleIntent, sampleRequest } from "../testing/describe-journal.js";
import { startedEntry } from "./events.js";
import { decodeEntry, decodeRequest, encodeEntry, encodeRequest } from "./records.js";
import type { ApprovalRequest, OutboxEntry } from "./types.js";

describe("stored records", () => {
  it("decode to what was encoded, keys that may be undefined included", () => {
    const entry: OutboxEntry = {
      ...startedEntry(sampleIntent("k1", { target: undefined, input: undefined }), 1, "r1"),
      state: "completed",
      result: { output: undefined, outputHash: "h", untrusted: true, findings: [{ rule: "r", path: "$", excerpt: "e" }], heldBy: "r2" },
    };
    const stored = encodeEntry(entry);
    expect(stored).toMatchObject({ key: "k1", state: "completed", updatedMs: Date.parse(entry.updatedAt) });
    expect(decodeEntry(stored.text)).toStrictEqual(entry);
    const request: ApprovalRequest = {
      ...sampleRequest("r1", { preview: { summary: "s", details: { to: ["a"] }, plan: { etag: "1" } } }),
      status: "denied",
      reason: "no",
    };
    expect(encodeRequest(request)).toMatchObject({ id: "r1", status: "denied", inputHash: request.inputHash });
    expect(decodeRequest(encodeRequest(request).text)).toStrictEqual(request);
  });

  it("refuse text that is not a record of its kind", () => {
    const text = encodeEntry(startedEntry(sampleIntent("k2"), 1, undefined)).text;
    const edited = (patch: object) => JSON.stringify({ ...JSON.parse(text), ...patch });
    expect(() => decodeEntry(edited({ state: "done" }))).toThrow();
    expect(() => decodeEntry(edited({ attempts: -1 }))).toThrow();
    expect(() => decodeEntry(edited({ error: { code: "not_a_code", message: "x" } }))).toThrow();
    expect(() => decodeEntry(text.slice(0, -1))).toThrow();
    expect(() => decodeRequest(text)).toThrow();
  });
});
