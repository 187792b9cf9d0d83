/**
 * A row read outside a write transaction races the index: on a store with concurrent connections
 * (PostgreSQL) a caller may read a record's row, and before it checks the row another caller's
 * walk may already have seen the record's newer version. That row is stale, not restated: it is
 * read again. A row put back while the index stood still is still refused.
 */
import { describe, expect, it } from "vitest";
import { ToolError } from "../errors.js";
import { createJournal } from "./create-journal.js";
import type { JournalDriver, StoredRow } from "./driver.js";
import { memoryDriver } from "./memory.js";

const auditKey = "record-race-key";
const set = (value: unknown) => () => ({ value, event: { type: "thing.set", at: new Date(0).toISOString(), data: {} }, result: undefined });

/** A store whose reads of one row (or one kind's list) can be held after the row is read, as a slow connection would. */
function slowReads() {
  const base = memoryDriver();
  let gate: Promise<void> | undefined;
  const held = async <T>(row: T): Promise<T> => {
    if (gate) await gate;
    return row;
  };
  const driver: JournalDriver = {
    ...base,
    getRecord: async (kind, id): Promise<StoredRow> => held(await base.getRecord(kind, id)),
    listRecords: async (kind) => held(await base.listRecords(kind)),
    getRequest: async (id) => held(await base.getRequest(id)),
  };
  return {
    driver,
    base,
    hold(): () => void {
      let release!: () => void;
      gate = new Promise<void>((r) => (release = r));
      return () => {
        gate = undefined;
        release();
      };
    },
  };
}

const tick = () => new Promise((r) => setTimeout(r, 5));

describe("a record read that races another caller's walk", () => {
  it("a row read before its newer version was walked is read again, not called restated (getRecord and listRecords)", async () => {
    const store = slowReads();
    const journal = createJournal(store.driver, { auditKey });
    await journal.updateRecord("thing", "a", set({ v: 1 }));
    for (const reader of [() => journal.getRecord("thing", "a"), async () => (await journal.listRecords("thing"))[0]?.value]) {
      const release = store.hold();
      const slow = reader(); // reads the current version, then waits
      await tick();
      const before = (await store.base.getRecord("thing", "a")).latest!.seq;
      await journal.updateRecord("thing", "a", set({ v: before + 1 })); // a newer version commits meanwhile
      await journal.listApprovals(); // and another caller's walk sees it before the slow read checks its row
      release();
      expect(await slow).toEqual({ v: before + 1 });
    }
  });

  it("a record created while a list was read is not called deleted", async () => {
    const store = slowReads();
    const journal = createJournal(store.driver, { auditKey });
    await journal.updateRecord("thing", "a", set({ v: 1 }));
    const release = store.hold();
    const slow = journal.listRecords("thing");
    await tick();
    await journal.updateRecord("thing", "b", set({ v: 2 }));
    await journal.listApprovals(); // another caller's walk names b before the slow list checks what it read
    release();
    expect((await slow).map((r) => r.id)).toEqual(["a", "b"]);
  });

  it("a row put back while the index stood still is still refused as restated", async () => {
    const store = slowReads();
    const journal = createJournal(store.driver, { auditKey });
    await journal.updateRecord("thing", "a", set({ v: 1 }));
    const old = store.base.tables.records.get("thing:a")!;
    const oldLatest = store.base.tables.latest.get("thing:a")!;
    await journal.updateRecord("thing", "a", set({ v: 2 }));
    store.base.tables.records.set("thing:a", old);
    store.base.tables.latest.set("thing:a", oldLatest);
    let thrown: unknown;
    try {
      await journal.getRecord("thing", "a");
    } catch (error) {
      thrown = error;
    }
    expect(ToolError.is(thrown, "journal_tampered")).toBe(true);
  });
});
