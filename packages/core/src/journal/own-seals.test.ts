/**
 * The read-backs that skip a second check for what this process sealed (own-seals.ts): a link or
 * entry this process wrote, then edited, replaced, restated or rolled back in the store, is still
 * found by the same read as before; only a stored text equal to what was sealed is taken as is.
 */
import { describe, expect, it } from "vitest";
import { ToolError } from "../errors.js";
import { at, sampleIntent, settleFailed } from "../testing/journal-samples.js";
import { createJournal } from "./create-journal.js";
import type { JournalDriver } from "./driver.js";
import { memoryDriver } from "./memory.js";
import { openEntry, sealEntry } from "./sealed-rows.js";
import { ownEntries, ownLinks } from "./own-seals.js";
import type { OutboxEntry } from "./types.js";

const auditKey = "own-seals-key";
const event = (n: number) => ({ type: "test.event", at: at(n), data: { n } });
const tampered = (problem?: string) => (e: unknown) => ToolError.is(e, "journal_tampered") && (problem === undefined || e.details?.["problem"] === problem);
const FORGED_MAC = "f".repeat(64);

/** A memory store whose next commit can be made to fail after the journal's rules ran (a batch that failed). */
function store() {
  const base = memoryDriver();
  let failNext = false;
  let lastPayload = "";
  let lastMac = "";
  const driver: JournalDriver = {
    ...base,
    transaction: (reads, fn) =>
      base.transaction(reads, (tx) => {
        const value = fn(tx);
        if (failNext) {
          failNext = false;
          lastPayload = base.tables.audit.payloads.at(-1)!;
          lastMac = base.tables.audit.macs.at(-1)!;
          throw new Error("the disk is full");
        }
        return value;
      }),
  };
  const journal = createJournal(driver, { auditKey });
  return {
    journal,
    tables: base.tables,
    failNext: () => void (failNext = true),
    /** The payload and MAC of the link the failed commit had sealed. */
    rolledBack: () => ({ payload: lastPayload, mac: lastMac }),
  };
}
// Any record read walks the chain.
const walked = (journal: ReturnType<typeof store>["journal"]) => journal.getRecord("switch", "tool:notes.add_note");

describe("a link this process sealed is still checked when the store holds something else", () => {
  it("reads its own untouched links back without a false alarm", async () => {
    const { journal } = store();
    for (let n = 1; n <= 3; n++) await journal.append(event(n));
    await expect(walked(journal)).resolves.toBeUndefined();
  });

  it("finds its own link edited in the store (payload changed, MAC kept)", async () => {
    const { journal, tables } = store();
    await journal.append(event(1));
    tables.audit.payloads[0] = tables.audit.payloads[0]!.replace('"n":1', '"n":2');
    await expect(walked(journal)).rejects.toSatisfy(tampered("index"));
  });

  it("finds its own link whose MAC was replaced (payload kept)", async () => {
    const { journal, tables } = store();
    await journal.append(event(1));
    tables.audit.macs[0] = FORGED_MAC;
    await expect(walked(journal)).rejects.toSatisfy((e) => tampered("index")(e) && /MAC mismatch/.test((e as Error).message));
  });

  it("finds a link put where a rolled-back one of its own was, with its payload and a forged MAC", async () => {
    const { journal, tables, failNext, rolledBack } = store();
    await journal.append(event(1));
    failNext();
    await expect(journal.append(event(2))).rejects.toSatisfy((e) => ToolError.is(e, "journal_failed"));
    expect(tables.audit.payloads).toHaveLength(1);
    tables.audit.payloads.push(rolledBack().payload);
    tables.audit.macs.push(FORGED_MAC);
    tables.audit.subjects.push(undefined);
    await expect(walked(journal)).rejects.toSatisfy(tampered("index"));
  });

  it("finds a link put where a rolled-back one of its own was, with its MAC and an edited payload", async () => {
    const { journal, tables, failNext, rolledBack } = store();
    await journal.append(event(1));
    failNext();
    await expect(journal.append(event(2))).rejects.toSatisfy((e) => ToolError.is(e, "journal_failed"));
    tables.audit.payloads.push(rolledBack().payload.replace('"n":2', '"n":3'));
    tables.audit.macs.push(rolledBack().mac);
    tables.audit.subjects.push(undefined);
    await expect(walked(journal)).rejects.toSatisfy(tampered("index"));
  });

  it("accepts the link written at a rolled-back seq afterwards", async () => {
    const { journal, failNext } = store();
    failNext();
    await expect(journal.append(event(1))).rejects.toSatisfy((e) => ToolError.is(e, "journal_failed"));
    await journal.append(event(2));
    await expect(walked(journal)).resolves.toBeUndefined();
    await expect(journal.readAudit()).resolves.toMatchObject([{ seq: 1, data: { n: 2 } }]);
  });
});

describe("an entry this process sealed is still checked when the store holds something else", () => {
  const settle = settleFailed;
  const editRow = (text: string, edit: (row: Record<string, unknown>) => void): string => {
    const envelope = JSON.parse(text) as { row: Record<string, unknown> };
    edit(envelope.row);
    return JSON.stringify(envelope);
  };

  it("reads its own untouched entry back as the full check decodes it", async () => {
    const { journal, tables } = store();
    const intent = sampleIntent("k");
    await journal.beginIntent(intent);
    const row = { id: "k", text: tables.entries.get("k")!.text, latest: tables.latest.get("entry:k") };
    const read = await journal.getIntent("k");
    expect(read).toStrictEqual(openEntry(auditKey, row));
    expect(JSON.stringify(read)).toBe(JSON.stringify(openEntry(auditKey, row)));
    await expect(settle(journal, intent)).resolves.toMatchObject({ seq: 2 });
  });

  it("reads back what it stored, though the caller changed the intent and the entry it was handed after the write", async () => {
    const { journal } = store();
    const intent = sampleIntent("k", { input: { text: "as stored" } });
    const begun = await journal.beginIntent(intent);
    (intent.input as { text: string }).text = "changed";
    if (begun.status === "started") (begun.entry as { toolId: string }).toolId = "notes.delete_note";
    const read = await journal.getIntent("k");
    expect(read).toMatchObject({ toolId: "notes.add_note", input: { text: "as stored" } });
    expect(() => ((read!.input as { text: string }).text = "again")).toThrow(TypeError);
  });

  it("finds its own entry edited in the store (seal kept) on the settlement's read-back and on getIntent", async () => {
    const { journal, tables } = store();
    const intent = sampleIntent("k");
    await journal.beginIntent(intent);
    const stored = tables.entries.get("k")!;
    tables.entries.set("k", { ...stored, text: editRow(stored.text, (row) => (row["toolId"] = "notes.delete_note")) });
    await expect(journal.getIntent("k")).rejects.toSatisfy(tampered("seal"));
    await expect(settle(journal, intent)).rejects.toSatisfy(tampered("seal"));
  });

  it("finds its own entry whose latest event the store moved to a later link (text kept)", async () => {
    const { journal, tables } = store();
    const intent = sampleIntent("k");
    await journal.beginIntent(intent);
    await journal.append(event(2));
    tables.latest.set("entry:k", { seq: 2, prevMac: tables.latest.get("entry:k")!.prevMac });
    await expect(journal.getIntent("k")).rejects.toSatisfy(tampered("restated"));
    await expect(settle(journal, intent)).rejects.toSatisfy(tampered("restated"));
  });

  it("finds its own entry whose latest event names another link before it (text and seq kept)", async () => {
    const { journal, tables } = store();
    const intent = sampleIntent("k");
    await journal.beginIntent(intent);
    tables.latest.set("entry:k", { seq: 1, prevMac: FORGED_MAC });
    await expect(journal.getIntent("k")).rejects.toSatisfy(tampered("seal"));
    await expect(settle(journal, intent)).rejects.toSatisfy(tampered("seal"));
  });

  it("finds an older version of its own entry put back (restated)", async () => {
    const { journal, tables } = store();
    const intent = sampleIntent("k");
    await journal.beginIntent(intent);
    const first = tables.entries.get("k")!;
    await journal.claimOutbox({ states: ["pending"], updatedBefore: at(60_000), limit: 10, claimant: "r", at: at(5) });
    tables.entries.set("k", first);
    await expect(journal.getIntent("k")).rejects.toSatisfy(tampered("restated"));
  });

  it("reads the stored version, not the one a rolled-back write sealed", async () => {
    const { journal, failNext } = store();
    const intent = sampleIntent("k");
    await journal.beginIntent(intent);
    failNext();
    await expect(journal.claimOutbox({ states: ["pending"], updatedBefore: at(60_000), limit: 10, claimant: "r", at: at(5) })).rejects.toSatisfy((e) =>
      ToolError.is(e, "journal_failed"),
    );
    await expect(journal.getIntent("k")).resolves.toMatchObject({ attempts: 1, updatedAt: at() });
    failNext();
    await expect(journal.beginIntent(sampleIntent("gone"))).rejects.toSatisfy((e) => ToolError.is(e, "journal_failed"));
    await expect(journal.getIntent("gone")).resolves.toBeUndefined();
  });
});

describe("an entry as remembered equals the entry as the full check decodes it", () => {
  const cases: [string, OutboxEntry][] = [
    ["with a target", { ...sampleIntent("a"), state: "pending", boundary: "effect_not_started", attempts: 1, updatedAt: at() }],
    ["without a target", { ...sampleIntent("b", { target: undefined }), state: "pending", boundary: "effect_not_started", attempts: 1, updatedAt: at() }],
    ["with a grant", { ...sampleIntent("c"), state: "pending", boundary: "effect_not_started", attempts: 2, updatedAt: at(1), grantId: "r1" }],
    ["without an input", { ...sampleIntent("d", { input: undefined }), state: "pending", boundary: "effect_not_started", attempts: 1, updatedAt: at() }],
    [
      "with a nested input and keys out of order",
      { updatedAt: at(), attempts: 1, boundary: "effect_not_started", state: "pending", ...sampleIntent("e", { input: { b: [1, { c: null }], a: "é" } }) },
    ],
  ];
  for (const [name, entry] of cases) {
    it(name, () => {
      const event = { seq: 7, prevMac: "0".repeat(64) };
      const stored = sealEntry(auditKey, entry, event, false);
      const own = ownEntries();
      own.remember(entry, stored.text, event);
      const row = { id: entry.key, text: stored.text, latest: event };
      const remembered = own.opened(row);
      expect(remembered).toStrictEqual(openEntry(auditKey, row));
      expect(JSON.stringify(remembered)).toBe(JSON.stringify(openEntry(auditKey, row)));
      expect(Object.isFrozen(remembered)).toBe(true);
      if (typeof remembered?.input === "object") expect(Object.isFrozen(remembered.input)).toBe(true);
    });
  }

  it("keeps no entry that carries a result or an error", () => {
    const entry: OutboxEntry = {
      ...sampleIntent("f"),
      state: "failed",
      boundary: "effect_not_started",
      attempts: 1,
      updatedAt: at(),
      error: { code: "cancelled", message: "x" },
    };
    const event = { seq: 3, prevMac: "0".repeat(64) };
    const own = ownEntries();
    own.remember(entry, sealEntry(auditKey, entry, event, false).text, event);
    expect(own.opened({ id: "f", text: sealEntry(auditKey, entry, event, false).text, latest: event })).toBeUndefined();
  });
});

describe("what a process remembers of its own seals is bounded", () => {
  const entry = (key: string, input: unknown = { text: key }): OutboxEntry => ({
    ...sampleIntent(key, { input }),
    state: "pending",
    boundary: "effect_not_started",
    attempts: 1,
    updatedAt: at(),
  });
  const event = { seq: 1, prevMac: "0".repeat(64) };
  const remembered = (own: ReturnType<typeof ownEntries>, e: OutboxEntry) => {
    const text = sealEntry(auditKey, e, event, false).text;
    own.remember(e, text, event);
    return { id: e.key, text, latest: event };
  };

  it("forgets the oldest entries past 4096 of them", () => {
    const own = ownEntries();
    const rows = Array.from({ length: 4097 }, (_, i) => remembered(own, entry(`k${i}`)));
    expect(own.opened(rows[0]!)).toBeUndefined();
    expect(own.opened(rows[1]!)?.key).toBe("k1");
    expect(own.opened(rows[4096]!)?.key).toBe("k4096");
  });

  it("keeps no entry larger than its text budget, and forgets older ones to make room for a large one", () => {
    const own = ownEntries();
    const small = remembered(own, entry("small"));
    const huge = remembered(own, entry("huge", { text: "x".repeat(9 * 1024 * 1024) }));
    expect(own.opened(huge)).toBeUndefined();
    expect(own.opened(small)?.key).toBe("small");
    const first = remembered(own, entry("first", { text: "x".repeat(5 * 1024 * 1024) }));
    expect(own.opened(first)?.key).toBe("first");
    const second = remembered(own, entry("second", { text: "x".repeat(5 * 1024 * 1024) }));
    expect(own.opened(second)?.key).toBe("second");
    expect(own.opened(first)).toBeUndefined();
    expect(own.opened(small)).toBeUndefined();
  });

  it("forgets the oldest links past 4096 of them", () => {
    const links = ownLinks();
    const link = (seq: number) => ({ seq, payload: `{"seq":${seq}}`, prevMac: "0".repeat(64), mac: "1".repeat(64) });
    for (let seq = 1; seq <= 4097; seq++) links.remember(link(seq));
    expect(links.take(link(1))).toBeUndefined();
    expect(links.take(link(2))).toEqual(link(2));
    expect(links.take(link(2))).toBeUndefined();
  });
});
