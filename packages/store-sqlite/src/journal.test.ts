import { statSync } from "node:fs";
import Database from "better-sqlite3";
import { ToolError } from "@toolgate/core";
import { verifyAuditChain, verifyJournalRows } from "@toolgate/core/operator";
import {
  describeJournal,
  describeJournalTampering,
  expectUpgradeSample,
  sampleIntent,
  sampleRequest,
  writeUpgradeSample,
  type RawJournalRows,
} from "@toolgate/core/testing";
import { describe, expect, it } from "vitest";
import { tempFiles } from "./fixtures/temp-files.js";
import { openSqliteJournal, SQLITE_SCHEMA_VERSION, type SqliteJournal } from "./index.js";
import { MIGRATIONS } from "./schema.js";

const KEY = "sqlite-conformance-key";
const tempFile = tempFiles("toolgate-sqlite-");
const at = (ms = 0): string => new Date(Date.UTC(2026, 0, 1) + ms).toISOString();

describeJournal("sqlite", async () => {
  const path = tempFile();
  const journal = await openSqliteJournal(path, { auditKey: KEY });
  return { journal, auditKey: KEY, reopen: () => openSqliteJournal(path, { auditKey: KEY }) };
});

describeJournal("sqlite without group commit", async () => {
  const path = tempFile();
  const journal = await openSqliteJournal(path, { auditKey: KEY, groupCommit: false, synchronous: "normal" });
  return { journal, auditKey: KEY, reopen: () => openSqliteJournal(path, { auditKey: KEY, groupCommit: false }) };
});

/** The file's tables, written behind the journal's back as anyone with the file could. */
function rawRows(path: string): RawJournalRows {
  const run = <T>(fn: (db: Database.Database) => T): Promise<T> => {
    const db = new Database(path);
    try {
      return Promise.resolve(fn(db));
    } finally {
      db.close();
    }
  };
  return {
    entry: (key) => run((db) => db.prepare("SELECT entry FROM outbox WHERE key = ?").pluck().get(key) as string | undefined),
    putEntry: (r) =>
      run((db) => {
        db.prepare(
          "INSERT INTO outbox (key, state, updated_ms, entry) VALUES (?, ?, ?, ?) ON CONFLICT (key) DO UPDATE SET state = excluded.state, updated_ms = excluded.updated_ms, entry = excluded.entry",
        ).run(r.key, r.state, r.updatedMs, r.text);
      }),
    deleteEntry: (key) => run((db) => void db.prepare("DELETE FROM outbox WHERE key = ?").run(key)),
    request: (id) => run((db) => db.prepare("SELECT request FROM approvals WHERE request_id = ?").pluck().get(id) as string | undefined),
    putRequest: (r) =>
      run((db) => {
        db.prepare(
          "INSERT INTO approvals (request_id, status, input_hash, request) VALUES (?, ?, ?, ?) ON CONFLICT (request_id) DO UPDATE SET status = excluded.status, request = excluded.request",
        ).run(r.id, r.status, r.inputHash, r.text);
      }),
    deleteRequest: (id) => run((db) => void db.prepare("DELETE FROM approvals WHERE request_id = ?").run(id)),
    record: (kind, id) => run((db) => db.prepare("SELECT record FROM records WHERE kind = ? AND record_id = ?").pluck().get(kind, id) as string | undefined),
    // An UPDATE of the stored row when there is one (an edit), an INSERT otherwise (a forgery).
    putRecord: (r) =>
      run((db) => {
        const edited = db.prepare("UPDATE records SET record = ? WHERE kind = ? AND record_id = ?").run(r.text, r.kind, r.id);
        if (edited.changes === 0) db.prepare("INSERT INTO records (kind, record_id, record) VALUES (?, ?, ?)").run(r.kind, r.id, r.text);
      }),
    deleteRecord: (kind, id) => run((db) => void db.prepare("DELETE FROM records WHERE kind = ? AND record_id = ?").run(kind, id)),
    rewindSubject: (subject, to) => run((db) => void db.prepare("UPDATE audit SET subject = NULL WHERE subject = ? AND seq > ?").run(subject, to.seq)),
  };
}

describeJournalTampering("sqlite", async () => {
  const path = tempFile();
  return { journal: await openSqliteJournal(path, { auditKey: KEY }), auditKey: KEY, raw: rawRows(path) };
});

describe("sealed rows in the file", () => {
  it("a record put back with the later event's subject column cleared is refused by a process that opens the file after; so is every record once an audit link is edited", async () => {
    const tamperedJournal = (e: unknown) => ToolError.is(e, "journal_tampered");
    const set = (j: SqliteJournal, status: string) =>
      j.updateRecord("switch", "tool:a", () => ({ value: { status }, event: { type: "switch.set", at: at(), data: { status } }, result: 0 }));
    const path = tempFile();
    const raw = rawRows(path);
    let journal = await openSqliteJournal(path, { auditKey: KEY });
    await set(journal, "enabled");
    const enabled = (await raw.record("switch", "tool:a"))!;
    await set(journal, "disabled");
    await journal.close();
    await raw.putRecord({ kind: "switch", id: "tool:a", text: enabled });
    await raw.rewindSubject("switch:tool:a", { seq: 1, prevMac: "" });
    journal = await openSqliteJournal(path, { auditKey: KEY });
    await expect(journal.getRecord("switch", "tool:a")).rejects.toSatisfy(tamperedJournal);
    await expect(journal.listRecords("switch")).rejects.toSatisfy(tamperedJournal);
    await expect(set(journal, "enabled")).rejects.toSatisfy(tamperedJournal);
    await journal.close();

    const other = tempFile();
    journal = await openSqliteJournal(other, { auditKey: KEY });
    await set(journal, "disabled");
    await journal.append({ type: "test.event", at: at(), data: {} });
    await journal.close();
    const db = new Database(other);
    db.prepare("UPDATE audit SET payload = replace(payload, 'test.event', 'test.evenT') WHERE seq = 2").run();
    db.close();
    journal = await openSqliteJournal(other, { auditKey: KEY });
    await expect(journal.getRecord("switch", "tool:a")).rejects.toSatisfy((e) => tamperedJournal(e) && (e as ToolError).details?.["kind"] === "audit");
    await journal.close();
  });

  it("an audit subject column edited to hide a re-stated row fails the hot path (in this process and a new one) and verifyJournalRows", async () => {
    const path = tempFile();
    const journal = await openSqliteJournal(path, { auditKey: KEY });
    await journal.requestApproval(sampleRequest("r1"));
    const raw = rawRows(path);
    const pending = (await raw.request("r1"))!;
    await journal.decideApproval("r1", { kind: "grant", approver: "human", via: "owner", tokenHash: "a".repeat(64), grantExpiresAt: at(600_000), at: at(500) });
    await raw.putRequest({ id: "r1", status: "pending", inputHash: sampleRequest("r1").inputHash, text: pending });
    await expect(journal.getApproval("r1")).rejects.toSatisfy((e) => ToolError.is(e, "journal_tampered"));
    const db = new Database(path);
    db.prepare("UPDATE audit SET subject = NULL WHERE seq = 2").run();
    db.close();
    await expect(journal.getApproval("r1")).rejects.toSatisfy((e) => ToolError.is(e, "journal_tampered"));
    const fresh = await openSqliteJournal(path, { auditKey: KEY });
    await expect(fresh.getApproval("r1")).rejects.toSatisfy((e) => ToolError.is(e, "journal_tampered"));
    await fresh.close();
    const verdict = await verifyJournalRows(journal);
    expect(verdict).toMatchObject({ ok: false, chain: { ok: true } });
    expect(verdict.problems).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ kind: "audit", id: "2", problem: "index" }),
        expect.objectContaining({ kind: "request", id: "r1", problem: "restated" }),
      ]),
    );
    await journal.close();
  });
});

describe("openSqliteJournal refuses what it cannot safely use", () => {
  it("refuses a file whose schema is newer than this code, and leaves it untouched", async () => {
    const path = tempFile();
    await (await openSqliteJournal(path, { auditKey: KEY })).close();
    const raw = new Database(path);
    raw.pragma(`user_version = ${SQLITE_SCHEMA_VERSION + 1}`);
    raw.close();
    const opening = openSqliteJournal(path, { auditKey: KEY });
    await expect(opening).rejects.toThrow(
      new RegExp(`schema version ${SQLITE_SCHEMA_VERSION + 1}, newer than this @toolgate/store-sqlite understands \\(${SQLITE_SCHEMA_VERSION}\\)`),
    );
    await expect(opening).rejects.toSatisfy((e) => ToolError.is(e, "journal_failed"));
    const check = new Database(path);
    expect(check.pragma("user_version", { simple: true })).toBe(SQLITE_SCHEMA_VERSION + 1);
    check.close();
  });

  it("refuses a journal from before sealed rows that holds rows (they cannot be sealed unverified), and upgrades an empty one", async () => {
    const v1 = (rows: boolean): string => {
      const path = tempFile();
      const raw = new Database(path);
      raw.exec(MIGRATIONS[0]!);
      raw.pragma("user_version = 1");
      raw.prepare("INSERT INTO audit (seq, payload, prev_mac, mac) VALUES (1, '{}', ?, ?)").run("0".repeat(64), "1".repeat(64));
      if (rows) raw.prepare("INSERT INTO outbox (key, state, updated_ms, entry) VALUES ('k1', 'completed', 0, '{}')").run();
      raw.close();
      return path;
    };
    const withRows = v1(true);
    const opening = openSqliteJournal(withRows, { auditKey: KEY });
    await expect(opening).rejects.toSatisfy((e) => ToolError.is(e, "journal_failed"));
    await expect(opening).rejects.toThrow(/schema version 1, from before rows were sealed, and holds 1 outbox entries.*point the journal at a new file/);
    const check = new Database(withRows);
    expect(check.pragma("user_version", { simple: true })).toBe(1);
    check.close();
    const empty = await openSqliteJournal(v1(false), { auditKey: KEY });
    expect(empty.schemaVersion).toBe(SQLITE_SCHEMA_VERSION);
    expect((await empty.head()).seq).toBe(1);
    await empty.close();
  });

  it("upgrades a schema-2 file in place: its sealed rows still open, a granted request is joined, records work", async () => {
    const path = tempFile();
    const journal = await openSqliteJournal(path, { auditKey: KEY });
    await writeUpgradeSample(journal);
    await journal.close();
    // Back to schema 2 exactly as its migrations left a file (the row format did not change).
    const raw = new Database(path);
    raw.exec("DROP TABLE records; DROP INDEX approvals_open; CREATE INDEX approvals_pending ON approvals (input_hash) WHERE status = 'pending';");
    raw.pragma("user_version = 2");
    const v2 = new Database(":memory:");
    v2.exec(MIGRATIONS.slice(0, 2).join(";"));
    const shape = (db: Database.Database) => db.prepare("SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY name").all();
    expect(shape(raw)).toEqual(shape(v2));
    raw.close();

    const upgraded = await openSqliteJournal(path, { auditKey: KEY });
    expect(upgraded.schemaVersion).toBe(3);
    await expectUpgradeSample(upgraded);
    await upgraded.close();
  });

  it("refuses a second opener with another audit key, before it can append", async () => {
    const path = tempFile();
    const first = await openSqliteJournal(path, { auditKey: KEY });
    await first.append({ type: "test.event", at: at(), data: {} });
    await expect(openSqliteJournal(path, { auditKey: "another key" })).rejects.toThrow(/another audit key/);
    await expect(openSqliteJournal(path, { auditKey: new TextEncoder().encode(KEY + "x") })).rejects.toThrow(/another audit key/);
    await first.append({ type: "test.event", at: at(), data: {} });
    expect(verifyAuditChain(await first.readAudit(), { key: KEY })).toMatchObject({ ok: true, count: 2 });
    await first.close();
  });

  it("refuses a missing key and an unknown synchronous level", async () => {
    await expect(openSqliteJournal(tempFile(), { auditKey: "" })).rejects.toThrow(/audit key/);
    await expect(openSqliteJournal(tempFile(), { auditKey: KEY, synchronous: "off" as never })).rejects.toThrow(/synchronous/);
  });

  it("refuses a file that is not a journal", async () => {
    const path = tempFile();
    const raw = new Database(path);
    raw.exec("CREATE TABLE audit (x)");
    raw.close();
    await expect(openSqliteJournal(path, { auditKey: KEY })).rejects.toSatisfy((e) => ToolError.is(e, "journal_failed"));
  });
});

describe("sqlite journal on disk", () => {
  it("applies the synchronous level, FULL by default, and WAL", async () => {
    const path = tempFile();
    const full = await openSqliteJournal(path, { auditKey: KEY });
    const normal = await openSqliteJournal(path, { auditKey: KEY, synchronous: "normal" });
    expect([full.synchronous, normal.synchronous]).toEqual(["full", "normal"]);
    await full.close();
    await normal.close();
    const raw = new Database(path);
    expect(raw.pragma("journal_mode", { simple: true })).toBe("wal");
    raw.close();
  });

  it("creates a new file readable by its owner only", async () => {
    const path = tempFile();
    await (await openSqliteJournal(path, { auditKey: KEY })).close();
    expect(statSync(path).mode & 0o777).toBe(0o600);
  });

  it("keeps the chain, outbox and approvals across close and reopen", async () => {
    const path = tempFile();
    const first = await openSqliteJournal(path, { auditKey: KEY });
    await first.beginIntent(sampleIntent("k1"));
    await first.append({ type: "test.event", at: at(), data: { x: 1 } });
    const head = await first.head();
    await first.close();
    const second = await openSqliteJournal(path, { auditKey: KEY });
    expect(await second.head()).toEqual(head);
    expect((await second.getIntent("k1"))?.state).toBe("pending");
    await second.append({ type: "test.event", at: at(), data: { x: 2 } });
    expect(verifyAuditChain(await second.readAudit(), { key: KEY, expectedHead: await second.head() })).toMatchObject({ ok: true, count: 3 });
    await second.close();
  });

  it("finds an event edited in the file behind the journal's back", async () => {
    const path = tempFile();
    const journal = await openSqliteJournal(path, { auditKey: KEY });
    for (let i = 0; i < 4; i++) await journal.append({ type: "test.event", at: at(i), data: { amount: i } });
    const raw = new Database(path);
    raw.prepare("UPDATE audit SET payload = replace(payload, '\"amount\":2', '\"amount\":200') WHERE seq = 3").run();
    raw.close();
    expect(verifyAuditChain(await journal.readAudit(), { key: KEY })).toMatchObject({ ok: false, seq: 3 });
    await journal.close();
  });

  it("refuses a stored row edited in the file (even to a value its schema refuses), as journal_tampered", async () => {
    const path = tempFile();
    const journal = await openSqliteJournal(path, { auditKey: KEY });
    await journal.beginIntent(sampleIntent("k1"));
    const raw = new Database(path);
    raw.prepare("UPDATE outbox SET entry = json_set(entry, '$.row.state', 'done') WHERE key = 'k1'").run();
    raw.close();
    await expect(journal.getIntent("k1")).rejects.toSatisfy((e) => ToolError.is(e, "journal_tampered"));
    await expect(journal.getIntent("k1")).rejects.toThrow(/stored outbox entry k1 fails its seal/);
    await expect(journal.beginIntent(sampleIntent("k1"))).rejects.toSatisfy((e) => ToolError.is(e, "journal_tampered"));
    expect((await journal.readAudit()).map((r) => r.type)).toEqual(["intent.recorded"]);
    await journal.close();
  });

  it("resolves a write only once it is committed: another handle sees it at that moment", async () => {
    const path = tempFile();
    const writer = await openSqliteJournal(path, { auditKey: KEY });
    const observer = new Database(path, { readonly: true });
    const count = () => (observer.prepare("SELECT count(*) AS n FROM audit").get() as { n: number }).n;
    const seen: number[] = [];
    await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        writer.append({ type: "test.event", at: at(i), data: { i } }).then((receipt) => {
          seen.push(count() >= receipt.seq ? 1 : 0);
        }),
      ),
    );
    expect(seen).toEqual(Array(20).fill(1));
    observer.close();
    await writer.close();
  });

  it("fails one call in a batch without failing or undoing the others", async () => {
    const journal = await openSqliteJournal(tempFile(), { auditKey: KEY });
    const intent = sampleIntent("k1");
    const outcomes = await Promise.allSettled([
      journal.append({ type: "test.a", at: at(), data: {} }),
      journal.beginIntent(intent),
      journal.settleIntent("missing", { state: "failed", boundary: "effect_failed", intentHash: intent.intentHash, invocationId: "x", at: at() }),
      journal.decideApproval("missing", { kind: "deny", approver: "h", via: "owner", reason: "r", at: at() }),
      journal.append({ type: "test.b", at: at(), data: {} }),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual(["fulfilled", "fulfilled", "rejected", "rejected", "fulfilled"]);
    expect(outcomes[2]).toMatchObject({ reason: { code: "journal_failed" } });
    expect(outcomes[3]).toMatchObject({ reason: { code: "approval_unknown" } });
    const records = await journal.readAudit();
    expect(records.map((r) => r.type)).toEqual(["test.a", "intent.recorded", "test.b"]);
    expect(verifyAuditChain(records, { key: KEY }).ok).toBe(true);
    await journal.close();
  });

  it("fails only the call the database refuses, not the others in its transaction", async () => {
    const path = tempFile();
    const journal = await openSqliteJournal(path, { auditKey: KEY });
    const raw = new Database(path);
    raw.exec("CREATE TRIGGER poison BEFORE INSERT ON audit WHEN NEW.payload LIKE '%poison%' BEGIN SELECT RAISE(ABORT, 'poisoned event'); END");
    raw.close();
    const intent = sampleIntent("k1");
    const outcomes = await Promise.allSettled([
      journal.append({ type: "test.a", at: at(), data: {} }),
      journal.beginIntent(intent),
      journal.append({ type: "test.poison", at: at(), data: {} }),
      journal.settleIntent("missing", { state: "failed", boundary: "effect_failed", intentHash: intent.intentHash, invocationId: "x", at: at() }),
      journal.append({ type: "test.b", at: at(), data: {} }),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual(["fulfilled", "fulfilled", "rejected", "rejected", "fulfilled"]);
    expect(outcomes[2]).toMatchObject({ reason: { code: "journal_failed", message: expect.stringMatching(/poisoned event/) } });
    const records = await journal.readAudit();
    expect(records.map((r) => r.type)).toEqual(["test.a", "intent.recorded", "test.b"]);
    expect(verifyAuditChain(records, { key: KEY }).ok).toBe(true);
    await journal.close();
  });

  it("commits the expiry of a request it refuses to decide", async () => {
    const journal = await openSqliteJournal(tempFile(), { auditKey: KEY });
    await journal.requestApproval({
      id: "r1",
      kind: "call",
      toolId: "notes.add_note",
      inputHash: "a",
      principal: "p",
      tenant: "t",
      previewHash: "b",
      preview: { summary: "s" },
      target: undefined,
      invocationId: "inv",
      idempotencyKey: "k",
      createdAt: at(),
      expiresAt: at(10),
    });
    await expect(journal.decideApproval("r1", { kind: "deny", approver: "h", via: "owner", reason: "r", at: at(10) })).rejects.toSatisfy((e) =>
      ToolError.is(e, "approval_expired"),
    );
    expect((await journal.getApproval("r1"))?.status).toBe("expired");
    await journal.close();
  });

  it("reads see writes issued before them, even before those resolve", async () => {
    const journal: SqliteJournal = await openSqliteJournal(tempFile(), { auditKey: KEY });
    const writing = journal.beginIntent(sampleIntent("k9"));
    const read = journal.getIntent("k9");
    expect((await read)?.key).toBe("k9");
    await writing;
    await journal.close();
  });
});
