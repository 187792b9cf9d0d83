import { describe, expect, it } from "vitest";
import { hashCanonical } from "../canonical-json.js";
import { ToolError } from "../errors.js";
import { sampleIntent, sampleRequest } from "../testing/describe-journal.js";
import { startedEntry } from "./events.js";
import { openEntry, openRequest, sealEntry, sealRequest } from "./sealed-rows.js";
import type { ApprovalRequest, OutboxEntry } from "./types.js";

const KEY = "records-test-key";
const event = { seq: 7, prevMac: "a".repeat(64) };

describe("stored records", () => {
  it("open to what was sealed, keys that may be undefined included", () => {
    const entry: OutboxEntry = {
      ...startedEntry(sampleIntent("k1", { target: undefined, input: undefined }), 1, "r1"),
      state: "completed",
      result: { output: null, outputHash: hashCanonical(null), untrusted: true, findings: [{ rule: "r", path: "$", excerpt: "e" }], heldBy: "r2" },
    };
    const stored = sealEntry(KEY, entry, event, true);
    expect(stored).toMatchObject({ key: "k1", state: "completed", updatedMs: Date.parse(entry.updatedAt) });
    expect(openEntry(KEY, { id: "k1", text: stored.text, latest: event })).toStrictEqual(entry);
    const request: ApprovalRequest = {
      ...sampleRequest("r1", { preview: { summary: "s", details: { to: ["a"] }, plan: { etag: "1" } } }),
      status: "denied",
      reason: "no",
    };
    expect(sealRequest(KEY, request, event)).toMatchObject({ id: "r1", status: "denied", inputHash: request.inputHash });
    expect(openRequest(KEY, { id: "r1", text: sealRequest(KEY, request, event).text, latest: event })).toStrictEqual(request);
  });

  it("refuse text that is not a sealed record of its kind, as journal_tampered", () => {
    const text = sealEntry(KEY, startedEntry(sampleIntent("k2"), 1, undefined), event, true).text;
    const edited = (patch: object) => {
      const envelope = JSON.parse(text) as { row: object };
      return JSON.stringify({ ...envelope, row: { ...envelope.row, ...patch } });
    };
    const open =
      (t: string, id = "k2") =>
      () =>
        openEntry(KEY, { id, text: t, latest: event });
    const tampered = (e: unknown) => ToolError.is(e, "journal_tampered");
    expect(open(text)).not.toThrow();
    for (const t of [edited({ state: "done" }), edited({ attempts: -1 }), edited({ attempts: 2 }), text.slice(0, -1), JSON.stringify(JSON.parse(text).row)]) {
      expect(open(t)).toThrow(expect.toSatisfy(tampered));
    }
    expect(open(text, "k3")).toThrow(expect.toSatisfy(tampered));
    expect(() => openRequest(KEY, { id: "k2", text, latest: event })).toThrow(expect.toSatisfy(tampered));
    expect(() => openEntry("another key", { id: "k2", text, latest: event })).toThrow(expect.toSatisfy(tampered));
    expect(() => openEntry(KEY, { id: "k2", text, latest: { ...event, seq: 8 } })).toThrow(expect.toSatisfy(tampered));
    expect(() => openEntry(KEY, { id: "k2", text, latest: undefined })).toThrow(expect.toSatisfy(tampered));
    expect(() => openEntry(KEY, { id: "k2", text: undefined, latest: event })).toThrow(expect.toSatisfy(tampered));
    expect(openEntry(KEY, { id: "k2", text: undefined, latest: undefined })).toBeUndefined();
  });
});
