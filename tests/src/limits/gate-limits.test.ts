// The gate's limits on a real SQLite file: a call over its window is refused before a human is
// asked and before its effect; gates on two handles of one file share the budget and never both
// take its last slot; a restarted worker keeps the count; and a count reset behind the journal's
// back (the row edited or deleted) is refused as tampering, not honoured as a fresh budget.
import { randomBytes } from "node:crypto";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { createGate, createToolRegistry, defineProfile, type CallOptions, type Journal } from "@toolgate/core";
import { createNotesStore, createNotesTools, grantAsOwner } from "@toolgate/core/testing";
import { openSqliteJournal } from "@toolgate/store-sqlite";
import { afterEach, describe, expect, it } from "vitest";

const START = Date.UTC(2026, 0, 1);
const profile = defineProfile({
  name: "metered",
  allow: ["notes:read", "notes:write", "notes:delete", "notes:sync"],
  maxRisk: "critical",
  limits: [{ name: "notes-writes", tools: ["notes.*"], per: "principal", max: 3, windowMs: 3_600_000 }],
});
const call = (over: Partial<CallOptions> = {}): CallOptions => ({ principal: "agent-1", tenant: "tenant-a", profile, ...over });

const opened: Journal[] = [];
afterEach(async () => {
  for (const j of opened.splice(0)) await j.close();
});

async function onFile(path: string, auditKey: Buffer, clock: { now: number }) {
  const journal = await openSqliteJournal(path, { auditKey });
  opened.push(journal);
  const store = createNotesStore();
  const gate = createGate({ registry: createToolRegistry({ families: [createNotesTools(store)] }), journal, clock: () => clock.now });
  const sync = (over: Partial<CallOptions> = {}) =>
    gate.invoke("notes.sync_notes", { delayMs: 0 }, call({ idempotencyKey: randomBytes(8).toString("hex"), ...over }));
  return { journal, gate, store, sync };
}

function scratch() {
  return { path: join(mkdtempSync(join(tmpdir(), "toolgate-limits-")), "journal.db"), auditKey: randomBytes(32), clock: { now: START } };
}

describe("gate limits on a SQLite file", () => {
  it("over the window: denied rate_limited, journaled, before an approval request and before the effect", async () => {
    const s = scratch();
    const w = await onFile(s.path, s.auditKey, s.clock);
    for (let i = 0; i < 3; i++) expect((await w.sync()).status).toBe("ok");
    const refused = await w.sync();
    expect(refused).toMatchObject({ status: "denied", code: "rate_limited", boundary: "pre_effect_refusal", retryAfterMs: 3_660_000 });
    expect(refused.status === "denied" && refused.message).toBe(
      'notes.sync_notes: the limit "notes-writes" allows 3 calls per principal every 1 h; the next call fits in 61 min.',
    );
    const asked = await w.gate.invoke("notes.add_note", { id: "a", text: "t" }, call());
    expect(asked).toMatchObject({ status: "denied", code: "rate_limited" });
    expect(w.store.writes).toBe(3);
    const audit = await w.journal.readAudit();
    expect(audit.filter((e) => e.type === "approval.requested")).toHaveLength(0);
    expect(audit.filter((e) => e.type === "call.refused").map((e) => e.data["code"])).toEqual(["rate_limited", "rate_limited"]);
    expect(audit.filter((e) => e.type === "limit.charged").map((e) => e.data["count"])).toEqual([1, 2, 3]);
    // The window slides: an hour and a bucket later, one more fits.
    s.clock.now += 3_660_000;
    expect((await w.sync()).status).toBe("ok");
  });

  it("two handles on one file share the budget: racing calls never take more than max, and a reopened file keeps the count", async () => {
    const s = scratch();
    const a = await onFile(s.path, s.auditKey, s.clock);
    const b = await onFile(s.path, s.auditKey, s.clock);
    const results = await Promise.all(Array.from({ length: 12 }, (_, i) => (i % 2 === 0 ? a : b).sync()));
    expect(results.filter((r) => r.status === "ok")).toHaveLength(3);
    expect(results.filter((r) => r.status === "denied" && r.code === "rate_limited")).toHaveLength(9);
    expect(a.store.writes + b.store.writes).toBe(3);
    for (const j of opened.splice(0)) await j.close();
    const restarted = await onFile(s.path, s.auditKey, s.clock);
    expect(await restarted.sync()).toMatchObject({ status: "denied", code: "rate_limited" });
    expect(await restarted.sync({ principal: "agent-2" })).toMatchObject({ status: "ok" });
    // An approved call counts once on the file too: the request is not counted, the approved run is.
    const asked = await restarted.gate.invoke("notes.add_note", { id: "n", text: "t" }, call({ principal: "agent-2" }));
    if (asked.status !== "approval_required") throw new Error(asked.status);
    const grant = await grantAsOwner(restarted.gate, asked.requestId);
    expect(await restarted.gate.invoke("notes.add_note", { id: "n", text: "t" }, call({ principal: "agent-2", approval: grant }))).toMatchObject({
      status: "ok",
    });
    const charged = (await restarted.journal.readAudit()).filter((e) => e.type === "limit.charged" && e.principal === "agent-2");
    expect(charged.map((e) => e.data["count"])).toEqual([1, 2]);
  });

  const tamperings = {
    "put back as it was after the first call": (db: Database.Database, first: string) =>
      db.prepare("UPDATE records SET record = ? WHERE kind = 'limit'").run(first),
    "edited (its max raised)": (db: Database.Database) => {
      const { record } = db.prepare("SELECT record FROM records WHERE kind = 'limit'").get() as { record: string };
      const edited = record.replace(/(max\\?"\s*:\s*)3\b/, "$1300");
      expect(edited).not.toBe(record);
      db.prepare("UPDATE records SET record = ? WHERE kind = 'limit'").run(edited);
    },
    deleted: (db: Database.Database) => db.prepare("DELETE FROM records WHERE kind = 'limit'").run(),
  } as const;
  for (const [what, tamper] of Object.entries(tamperings)) {
    it(`a count reset behind the journal's back (its row ${what}) is journal_tampered, and the call does not run`, async () => {
      const s = scratch();
      const w = await onFile(s.path, s.auditKey, s.clock);
      expect((await w.sync()).status).toBe("ok");
      const peek = new Database(s.path, { readonly: true });
      const first = (peek.prepare("SELECT record FROM records WHERE kind = 'limit'").get() as { record: string }).record;
      peek.close();
      for (let i = 0; i < 2; i++) expect((await w.sync()).status).toBe("ok");
      for (const j of opened.splice(0)) await j.close();
      const db = new Database(s.path);
      tamper(db, first);
      db.close();
      const again = await onFile(s.path, s.auditKey, s.clock);
      expect(await again.sync()).toMatchObject({ status: "error", code: "journal_tampered", boundary: "pre_effect_refusal" });
      expect(again.store.writes).toBe(0);
    });
  }
});
