/**
 * Review of the journal's own-seals read-back (core/journal/own-seals.ts) on a real SQLite file:
 * a row or link this process wrote, then edited, replaced, deleted or restated in the file by
 * another connection, is refused by the writer itself exactly as by a handle that never wrote it;
 * a kill switch thrown through another handle is seen at once, and its row put back is refused.
 */
import Database from "better-sqlite3";
import { ToolError } from "@toolgate/core";
import { sampleIntent } from "@toolgate/core/testing";
import { describe, expect, it } from "vitest";
import { tempFiles } from "./fixtures/temp-files.js";
import { openSqliteJournal, type SqliteJournal } from "./index.js";

const KEY = "sqlite-own-seals-review-key";
const tempFile = tempFiles("toolgate-own-seals-review-");
const at = (ms = 0): string => new Date(Date.UTC(2026, 0, 1) + ms).toISOString();

async function outcome(read: () => Promise<unknown>): Promise<string> {
  try {
    return `ok ${JSON.stringify(await read())}`;
  } catch (e) {
    return ToolError.is(e) ? `refused ${e.code} ${String(e.details?.["kind"])} ${String(e.details?.["problem"])}` : `threw ${String(e)}`;
  }
}

/** A writer handle, a second handle on the same file, and the file opened raw. */
async function files() {
  const path = tempFile();
  const writer = await openSqliteJournal(path, { auditKey: KEY });
  const other = await openSqliteJournal(path, { auditKey: KEY });
  const raw = new Database(path);
  const close = async () => {
    raw.close();
    await writer.close();
    await other.close();
  };
  return { path, writer, other, raw, close };
}

const failed = (key: string, intentHash: string, invocationId: string) => ({
  state: "failed" as const,
  boundary: "effect_not_started" as const,
  intentHash,
  invocationId,
  at: at(1),
  error: { code: "cancelled" as const, message: "x" },
});

const set = (j: SqliteJournal, target: string, status: string) =>
  j.updateRecord("switch", target, () => ({
    value: { status, target, reason: "r", by: "op", at: at() },
    event: { type: "switch.set", at: at(), data: { status } },
    result: 0,
  }));

describe("review: an own entry tampered in the SQLite file after it was written", () => {
  const cases: [string, (raw: Database.Database) => void, string][] = [
    ["its row edited (seal kept)", (raw) => void raw.prepare("UPDATE outbox SET entry = replace(entry, 'note k1', 'note k9') WHERE key = 'k1'").run(), "seal"],
    ["its row deleted", (raw) => void raw.prepare("DELETE FROM outbox WHERE key = 'k1'").run(), "missing"],
    [
      "its row replaced by another validly sealed row",
      (raw) => void raw.prepare("UPDATE outbox SET entry = (SELECT entry FROM outbox WHERE key = 'k2') WHERE key = 'k1'").run(),
      "seal",
    ],
    ["its latest event's subject cleared", (raw) => void raw.prepare("UPDATE audit SET subject = NULL WHERE subject = 'entry:k1'").run(), "no_event"],
    [
      "its latest event moved to the other entry's link",
      (raw) =>
        void raw
          .prepare("UPDATE audit SET subject = CASE subject WHEN 'entry:k1' THEN 'entry:k2' ELSE 'entry:k1' END WHERE subject IN ('entry:k1','entry:k2')")
          .run(),
      "restated",
    ],
  ];
  for (const [name, tamper, problem] of cases) {
    it(name, async () => {
      const { writer, other, raw, close } = await files();
      await writer.beginIntent(sampleIntent("k1"));
      await writer.beginIntent(sampleIntent("k2"));
      expect(await outcome(() => writer.getIntent("k1"))).toBe(await outcome(() => other.getIntent("k1")));
      tamper(raw);
      const own = await outcome(() => writer.getIntent("k1"));
      expect(own).toBe(await outcome(() => other.getIntent("k1")));
      expect(own).toBe(`refused journal_tampered entry ${problem}`);
      // The retry of the same key reads it in the write transaction: refused, nothing written.
      expect(await outcome(() => writer.beginIntent(sampleIntent("k1")))).toMatch(/^refused journal_tampered/);
      await close();
    });
  }

  it("an older version of its own entry put back after the other handle's later one (restated)", async () => {
    const { writer, other, raw, close } = await files();
    const intent = sampleIntent("k1");
    await writer.beginIntent(intent);
    const first = (raw.prepare("SELECT entry FROM outbox WHERE key = 'k1'").get() as { entry: string }).entry;
    await other.settleIntent("k1", failed("k1", intent.intentHash, intent.invocationId));
    await other.beginIntent(intent, { retake: { attempts: 1, states: ["failed"] } });
    raw.prepare("UPDATE outbox SET entry = ? WHERE key = 'k1'").run(first);
    expect(await outcome(() => writer.getIntent("k1"))).toBe("refused journal_tampered entry restated");
    expect(await outcome(() => other.getIntent("k1"))).toBe("refused journal_tampered entry restated");
    await close();
  });

  it("its row put back after the other handle settled it, with the subject column pointed back at its own event", async () => {
    const { writer, other, raw, close } = await files();
    const intent = sampleIntent("k1");
    await writer.beginIntent(intent);
    const first = (raw.prepare("SELECT entry FROM outbox WHERE key = 'k1'").get() as { entry: string }).entry;
    await other.settleIntent("k1", failed("k1", intent.intentHash, intent.invocationId));
    raw.prepare("UPDATE outbox SET entry = ? WHERE key = 'k1'").run(first);
    raw.prepare("UPDATE audit SET subject = NULL WHERE subject = 'entry:k1' AND seq > 1").run();
    // Entries are not in the verified index: a fresh handle accepts this too (as before the cache).
    expect(await outcome(() => writer.getIntent("k1"))).toBe(await outcome(() => other.getIntent("k1")));
    await close();
  });
});

describe("review: own links and the kill switch on one SQLite file with two handles", () => {
  it("a switch thrown through the other handle is seen by the writer's next read", async () => {
    const { writer, other, close } = await files();
    await set(writer, "tool:notes.add_note", "enabled");
    expect(await outcome(() => writer.getRecord("switch", "tool:notes.add_note"))).toMatch(/"status":"enabled"/);
    await set(other, "tool:notes.add_note", "disabled");
    expect(await outcome(() => writer.getRecord("switch", "tool:notes.add_note"))).toMatch(/"status":"disabled"/);
    await close();
  });

  it("the writer's own switch row put back over the other handle's later one is refused by both (restated)", async () => {
    const { writer, other, raw, close } = await files();
    await set(writer, "tool:a", "enabled");
    const enabled = (raw.prepare("SELECT record FROM records WHERE record_id = 'tool:a'").get() as { record: string }).record;
    await set(other, "tool:a", "disabled");
    expect(await outcome(() => writer.getRecord("switch", "tool:a"))).toMatch(/"status":"disabled"/);
    raw.prepare("UPDATE records SET record = ? WHERE record_id = 'tool:a'").run(enabled);
    raw.prepare("UPDATE audit SET subject = NULL WHERE subject = 'switch:tool:a' AND seq > 1").run();
    expect(await outcome(() => writer.getRecord("switch", "tool:a"))).toMatch(/^refused journal_tampered record restated$/);
    expect(await outcome(() => other.getRecord("switch", "tool:a"))).toMatch(/^refused journal_tampered record restated$/);
    await close();
  });

  const linkTampers: [string, (raw: Database.Database) => void][] = [
    ["its payload edited", (raw) => void raw.prepare("UPDATE audit SET payload = replace(payload, '\"n\":3', '\"n\":30') WHERE seq = 3").run()],
    ["its MAC replaced", (raw) => void raw.prepare("UPDATE audit SET mac = ? WHERE seq = 3").run("f".repeat(64))],
    ["a link deleted", (raw) => void raw.prepare("DELETE FROM audit WHERE seq = 3").run()],
    ["two links swapped", (raw) => void raw.prepare("UPDATE audit SET seq = CASE seq WHEN 2 THEN -3 WHEN 3 THEN -2 END WHERE seq IN (2, 3)").run()],
  ];
  for (const [name, tamper] of linkTampers) {
    it(`an own link with ${name} after it was written fails the writer's next record read`, async () => {
      const { writer, other, raw, close } = await files();
      for (let n = 1; n <= 4; n++) await writer.append({ type: "test.event", at: at(n), data: { n } });
      tamper(raw);
      if (name === "two links swapped") raw.prepare("UPDATE audit SET seq = -seq WHERE seq < 0").run();
      const own = await outcome(() => writer.getRecord("switch", "tool:a"));
      expect(own).toMatch(/^refused journal_tampered audit index$/);
      expect(own).toBe(await outcome(() => other.getRecord("switch", "tool:a")));
      await close();
    });
  }
});
