/**
 * A record read on the memory driver is answered again from what was verified last while the
 * driver's change counter stands still (record-index.ts). Never stale: a switch thrown through
 * another handle, a row or link edited through `tables`, a rolled-back transaction and another
 * handle's commit each move the counter, and the next read is a full one.
 */
import { describe, expect, it } from "vitest";
import { switchFor } from "../authority/switches.js";
import { ToolError } from "../errors.js";
import { sealLink } from "./audit-chain.js";
import { createJournal } from "./create-journal.js";
import type { JournalDriver, StoredRecord } from "./driver.js";
import { memoryDriver } from "./memory.js";

const auditKey = "record-answers-key";
const at = new Date(0).toISOString();
const event = { type: "test.event", at, data: {} };
const put = (value: unknown) => () => ({ value, event: { type: "switch.disabled", at, data: {} }, result: undefined });
const disabled = { target: "tool:notes.add_note", reason: "stop", by: "op_1", at, status: "disabled" };
const tamperedAs = (problem: string) => (e: unknown) => ToolError.is(e, "journal_tampered") && e.details?.["problem"] === problem;

/** A memory store whose record reads are counted, and whose next transaction can be made to fail after it ran (rolled back). */
function counted() {
  const base = memoryDriver();
  const reads = { records: 0, audit: 0 };
  let failNext = false;
  let gate: Promise<void> | undefined;
  const driver: JournalDriver = {
    ...base,
    getRecord: async (kind, id) => {
      reads.records++;
      const row = await base.getRecord(kind, id);
      if (gate) await gate;
      return row;
    },
    readAudit: (range) => (reads.audit++, base.readAudit(range)),
    transaction: (r, fn) =>
      base.transaction(r, (tx) => {
        const out = fn(tx);
        if (failNext) throw ((failNext = false), new Error("the disk is full"));
        return out;
      }),
  };
  const journal = createJournal(driver, { auditKey });
  // Rows read from now on are held (read, not yet returned) until the returned function is called.
  const hold = (): (() => void) => {
    let release!: () => void;
    gate = new Promise<void>((r) => (release = r));
    return () => ((gate = undefined), release());
  };
  return { base, reads, journal, hold, failNextTransaction: () => void (failNext = true), other: createJournal(base, { auditKey }) };
}

describe("record answers on the memory driver", () => {
  it("a record read again with nothing changed is answered without a store read; this handle's own appends keep the answer", async () => {
    const s = counted();
    expect(await s.journal.getRecord("switch", "tool:notes.add_note")).toBeUndefined();
    expect(s.reads.records).toBe(1);
    for (let i = 0; i < 3; i++) {
      expect(await s.journal.getRecord("switch", "tool:notes.add_note")).toBeUndefined();
      await s.journal.append(event);
    }
    expect(s.reads.records).toBe(1);
    // A record this handle writes is read again.
    await s.journal.updateRecord("switch", "tool:notes.add_note", put(disabled));
    expect(await s.journal.getRecord("switch", "tool:notes.add_note")).toEqual(disabled);
    expect(s.reads.records).toBe(2);
    // An answer is shared, so it is frozen.
    expect(Object.isFrozen(await s.journal.getRecord("switch", "tool:notes.add_note"))).toBe(true);
    expect(s.reads.records).toBe(2);
  });

  it("a record this handle writes right after it was answered is read again (its own commit keeps the other answers)", async () => {
    const s = counted();
    expect(await s.journal.getRecord("switch", "tool:notes.add_note")).toBeUndefined();
    expect(await s.journal.getRecord("switch", "family:notes")).toBeUndefined();
    await s.journal.updateRecord("switch", "tool:notes.add_note", put(disabled));
    expect(await s.journal.getRecord("switch", "tool:notes.add_note")).toEqual(disabled);
    expect(await s.journal.getRecord("switch", "family:notes")).toBeUndefined();
    expect(s.reads.records).toBe(3);
  });

  it("a row read before this handle's own write of it, returned after another read took the write in, is read again", async () => {
    const s = counted();
    await s.journal.getRecord("switch", "family:notes");
    const release = s.hold();
    const slow = s.journal.getRecord("switch", "tool:notes.add_note");
    await new Promise((r) => setTimeout(r, 5));
    await s.journal.updateRecord("switch", "tool:notes.add_note", put(disabled));
    // Another record's answer takes this handle's commit in before the held read returns.
    expect(await s.journal.getRecord("switch", "family:notes")).toBeUndefined();
    release();
    // Its row, read before the write, no longer matches the index that took the write in: read again.
    expect(await slow).toEqual(disabled);
    expect(await s.journal.getRecord("switch", "tool:notes.add_note")).toEqual(disabled);
  });

  it("a switch thrown through another handle on the same tables is seen at the next call", async () => {
    const s = counted();
    expect(await switchFor(s.journal, "notes.add_note")).toBeUndefined();
    expect(await switchFor(s.journal, "notes.add_note")).toBeUndefined();
    await s.other.updateRecord("switch", "family:notes", put({ ...disabled, target: "family:notes" }));
    expect(await switchFor(s.journal, "notes.add_note")).toMatchObject({ target: "family:notes", reason: "stop" });
  });

  it("another handle's commit that wrote no record still makes the next read a full one", async () => {
    const s = counted();
    await s.journal.getRecord("switch", "tool:notes.add_note");
    await s.other.append(event);
    await s.journal.getRecord("switch", "tool:notes.add_note");
    expect(s.reads.records).toBe(2);
  });

  it("a record row edited, restated or deleted through tables after it was answered is refused at the next read", async () => {
    const id = "switch:tool:notes.add_note";
    type Store = ReturnType<typeof counted>;
    const edits: [string, (s: Store, older: StoredRecord) => unknown, string][] = [
      [
        "edited",
        (s) => s.base.tables.records.set(id, { ...s.base.tables.records.get(id)!, text: s.base.tables.records.get(id)!.text.replace('"stop"', '"go"') }),
        "seal",
      ],
      ["deleted", (s) => s.base.tables.records.delete(id), "missing"],
      ["restated", (s, older) => s.base.tables.records.set(id, older), "restated"],
    ];
    for (const [name, edit, problem] of edits) {
      const s = counted();
      await s.journal.updateRecord("switch", "tool:notes.add_note", put(disabled));
      const older = s.base.tables.records.get(id)!;
      await s.journal.updateRecord("switch", "tool:notes.add_note", put({ ...disabled, status: "enabled" }));
      expect(await s.journal.getRecord("switch", "tool:notes.add_note")).toMatchObject({ status: "enabled" });
      expect(await s.journal.getRecord("switch", "tool:notes.add_note")).toMatchObject({ status: "enabled" });
      edit(s, older);
      await expect(s.journal.getRecord("switch", "tool:notes.add_note"), name).rejects.toSatisfy(tamperedAs(problem));
    }
  });

  it("a link pushed onto the chain through tables after an answer fails the next read (MAC mismatch)", async () => {
    const s = counted();
    await s.journal.getRecord("switch", "tool:notes.add_note");
    const { payloads, macs, subjects } = s.base.tables.audit;
    const forged = sealLink("another key", { seq: macs.length, mac: macs.at(-1) ?? "0".repeat(64) }, event, "switch:tool:notes.add_note");
    payloads.push(forged.payload);
    macs.push(forged.mac);
    subjects.push(forged.subject);
    await expect(s.journal.getRecord("switch", "tool:notes.add_note")).rejects.toSatisfy((e) => ToolError.is(e, "journal_tampered"));
  });

  it("rows are frozen: a stored row cannot be changed in place, past the counter", async () => {
    const s = counted();
    await s.journal.updateRecord("switch", "tool:notes.add_note", put(disabled));
    await s.journal.append(event);
    expect(Object.isFrozen(s.base.tables.records.get("switch:tool:notes.add_note"))).toBe(true);
    expect(Object.isFrozen(s.base.tables.latest.get("switch:tool:notes.add_note"))).toBe(true);
    expect(() => Object.assign(s.base.tables.records.get("switch:tool:notes.add_note")!, { text: "{}" })).toThrow(TypeError);
  });

  it("a transaction of this handle that rolled back after it appended is not taken as committed", async () => {
    const s = counted();
    await s.journal.getRecord("switch", "tool:notes.add_note");
    s.failNextTransaction();
    await expect(s.journal.append(event)).rejects.toSatisfy((e) => ToolError.is(e, "journal_failed"));
    // Read after the rollback (nothing committed since), then commit at the same seq.
    expect(await s.journal.getRecord("switch", "tool:notes.add_note")).toBeUndefined();
    await s.journal.append(event);
    await s.journal.updateRecord("switch", "tool:notes.add_note", put(disabled));
    expect(await s.journal.getRecord("switch", "tool:notes.add_note")).toEqual(disabled);
    expect(await s.other.getRecord("switch", "tool:notes.add_note")).toEqual(disabled);
  });

  it("every edit through tables moves the counter; a transaction moves it at its start and again when it rolls back", async () => {
    const driver = memoryDriver();
    const { tables } = driver;
    const moves = (edit: () => unknown) => {
      const before = driver.changes();
      edit();
      return driver.changes() - before;
    };
    expect(moves(() => tables.records.set("a:b", { kind: "a", id: "b", text: "{}" }))).toBe(1);
    expect(moves(() => tables.records.delete("a:b"))).toBe(1);
    expect(moves(() => tables.latest.clear())).toBe(1);
    expect(moves(() => tables.entries.get("x"))).toBe(0);
    expect(moves(() => tables.audit.payloads.push("{}"))).toBeGreaterThan(0);
    expect(moves(() => (tables.audit.macs[0] = "x"))).toBe(1);
    expect(moves(() => (tables.audit.subjects.length = 0))).toBe(1);
    expect(moves(() => tables.audit.payloads.pop())).toBeGreaterThan(0);
    const before = driver.changes();
    await driver.transaction({}, () => expect(driver.changes()).toBe(before + 1));
    expect(driver.changes()).toBe(before + 1);
    await expect(
      driver.transaction({}, () => {
        throw new Error("no");
      }),
    ).rejects.toThrow("no");
    expect(driver.changes()).toBe(before + 3);
  });
});
