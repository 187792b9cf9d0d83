import { describe, expect, it } from "vitest";
import { describeJournal } from "../testing/describe-journal.js";
import { describeJournalTampering } from "../testing/describe-tampering.js";
import { verifyAuditChain } from "./audit-chain.js";
import { createJournal } from "./create-journal.js";
import { createMemoryJournal, memoryDriver } from "./memory.js";
import type { AuditRecord } from "./types.js";

describeJournal("memory", async () => {
  const journal = createMemoryJournal({ auditKey: "conformance-key" });
  return { journal, auditKey: "conformance-key" };
});

describeJournalTampering("memory", async () => {
  const auditKey = "tamper-key";
  const driver = memoryDriver();
  const { entries, requests, records, latest } = driver.tables;
  const raw = {
    entry: async (key: string) => entries.get(key)?.text,
    putEntry: async (row: { key: string; state: "pending" | "completed" | "failed" | "unknown"; updatedMs: number; text: string }) =>
      void entries.set(row.key, row),
    deleteEntry: async (key: string) => void entries.delete(key),
    request: async (id: string) => requests.get(id)?.text,
    putRequest: async (row: Parameters<typeof requests.set>[1]) => void requests.set(row.id, row),
    deleteRequest: async (id: string) => void requests.delete(id),
    record: async (kind: string, id: string) => records.get(`${kind}:${id}`)?.text,
    putRecord: async (row: Parameters<typeof records.set>[1]) => void records.set(`${row.kind}:${row.id}`, row),
    deleteRecord: async (kind: string, id: string) => void records.delete(`${kind}:${id}`),
    rewindSubject: async (subject: string, to: { seq: number; prevMac: string }) => void latest.set(subject, to),
  };
  return { journal: createJournal(driver, { auditKey }), auditKey, raw };
});

describe("verifyAuditChain finds tampering", () => {
  const key = "audit-key";
  const chain = async (): Promise<AuditRecord[]> => {
    const journal = createMemoryJournal({ auditKey: key });
    for (let i = 1; i <= 6; i++)
      await journal.append({ type: "test.event", at: `2026-01-01T00:00:0${i}.000Z`, toolId: "demo.t", data: { i, note: `event ${i}` } });
    return [...(await journal.readAudit())];
  };

  it("accepts the untouched chain", async () => {
    expect(verifyAuditChain(await chain(), { key })).toMatchObject({ ok: true, count: 6 });
  });

  it("finds an edited event (data, type, time or identity)", async () => {
    const edits: ((r: AuditRecord) => AuditRecord)[] = [
      (r) => ({ ...r, data: { ...r.data, note: "rewritten" } }),
      (r) => ({ ...r, type: "test.other" }),
      (r) => ({ ...r, at: "2030-01-01T00:00:00.000Z" }),
      (r) => ({ ...r, principal: "someone-else" }),
    ];
    for (const edit of edits) {
      const records = await chain();
      records[2] = edit(records[2]!);
      expect(verifyAuditChain(records, { key })).toMatchObject({ ok: false, seq: 3 });
    }
  });

  it("finds a deleted event", async () => {
    const records = await chain();
    records.splice(3, 1);
    expect(verifyAuditChain(records, { key })).toMatchObject({ ok: false, seq: 5 });
  });

  it("finds a deleted event even when the sequence numbers are rewritten", async () => {
    const records = (await chain()).filter((r) => r.seq !== 4).map((r, i) => ({ ...r, seq: i + 1 }));
    expect(verifyAuditChain(records, { key }).ok).toBe(false);
  });

  it("finds an inserted event, even one copied from elsewhere in the chain", async () => {
    const records = await chain();
    records.splice(2, 0, { ...records[1]! });
    expect(verifyAuditChain(records, { key }).ok).toBe(false);
    const forged = await chain();
    forged.splice(3, 0, { ...forged[2]!, seq: 4, prevMac: forged[2]!.mac, mac: "f".repeat(64) });
    expect(verifyAuditChain(forged, { key }).ok).toBe(false);
  });

  it("finds reordered events", async () => {
    const records = await chain();
    [records[1], records[2]] = [records[2]!, records[1]!];
    expect(verifyAuditChain(records, { key }).ok).toBe(false);
    const renumbered = records.map((r, i) => ({ ...r, seq: i + 1 }));
    expect(verifyAuditChain(renumbered, { key }).ok).toBe(false);
  });

  it("finds events cut off the end when the expected head is known", async () => {
    const records = await chain();
    const head = { seq: records.at(-1)!.seq, mac: records.at(-1)!.mac };
    expect(verifyAuditChain(records.slice(0, 4), { key }).ok).toBe(true);
    expect(verifyAuditChain(records.slice(0, 4), { key, expectedHead: head })).toMatchObject({ ok: false });
  });

  it("refuses a chain re-MACed without the key", async () => {
    expect(verifyAuditChain(await chain(), { key: "another key" }).ok).toBe(false);
  });
});

describe("auditPayload", () => {
  it("is the canonical JSON of the whole envelope", async () => {
    const { auditPayload } = await import("./audit-chain.js");
    const { canonicalJson } = await import("../canonical-json.js");
    const full = {
      type: "t",
      at: "2026-01-01T00:00:00.000Z",
      invocationId: "i",
      toolId: "a.b",
      principal: "p",
      tenant: "x",
      data: { z: 1, a: [2, { y: 1, b: 2 }] },
    };
    expect(auditPayload(7, full)).toBe(canonicalJson({ ...full, seq: 7 }));
    const sparse = { type: "t", at: "2026-01-01T00:00:00.000Z", data: {} };
    expect(auditPayload(1, sparse)).toBe(canonicalJson({ ...sparse, seq: 1 }));
  });
});
