import { fdatasync, fstatSync, mkdirSync, realpathSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import Database from "better-sqlite3";
import { createGate, createToolRegistry, defineProfile } from "@toolgate/core";
import { isProtectedPath } from "@toolgate/core/boundary";
import { recoverOutbox, verifyAuditChain } from "@toolgate/core/operator";
import { createNotesStore, createNotesTools } from "@toolgate/core/testing";
import { describe, expect, it } from "vitest";
import { tempFiles } from "./fixtures/temp-files.js";
import { openJournalFile } from "./journal.js";

const KEY = "sqlite-wal-sync-review-key";
const tempFile = tempFiles("toolgate-sqlite-sync-review-");
const at = (): string => new Date().toISOString();

/** Which file each sync reached (its inode), what was committed when it began, and whether it ended. */
interface SyncRecord {
  readonly ino: number;
  readonly headAtStart: number;
  done: boolean;
}

/** The real system call, recording for each sync the file it reached and the audit head it began after. */
function recordingSync(head: () => number = () => 0) {
  const records: SyncRecord[] = [];
  const datasync = ((fd: number, callback: (error: NodeJS.ErrnoException | null) => void) => {
    const record: SyncRecord = { ino: fstatSync(fd).ino, headAtStart: head(), done: false };
    records.push(record);
    fdatasync(fd, (error) => {
      record.done = true;
      callback(error);
    });
  }) as typeof fdatasync;
  return { datasync, records };
}

describe("synchronous full (review): the sync reaches the log SQLite writes, in every case", () => {
  it("syncs SQLite's own log when the journal path is a symbolic link, even with a stale log beside the link", async () => {
    const base = dirname(tempFile());
    mkdirSync(join(base, "a"));
    mkdirSync(join(base, "b"));
    const link = join(base, "a", "journal.db");
    symlinkSync(join(base, "b", "real.db"), link);
    // A leftover log beside the link: SQLite never writes it (it follows the link to b/real.db-wal).
    writeFileSync(`${link}-wal`, "");
    const sync = recordingSync();
    const journal = await openJournalFile(link, { auditKey: KEY }, sync.datasync);
    await journal.append({ type: "test.event", at: at(), data: {} });
    const realWal = join(realpathSync(join(base, "b")), "real.db-wal");
    expect(sync.records.length).toBeGreaterThan(0);
    expect(sync.records.map((r) => r.ino)).toEqual(sync.records.map(() => statSync(realWal).ino));
    // The log and shared memory SQLite really uses are the gate's state too: no filesystem tool may reach them.
    expect([isProtectedPath(realWal), isProtectedPath(realWal.replace(/-wal$/, "-shm"))]).toEqual([true, true]);
    await journal.close();
  });

  it("opens through a symbolic link with no log beside it", async () => {
    const base = dirname(tempFile());
    const link = join(base, "link.db");
    symlinkSync(join(base, "target.db"), link);
    const sync = recordingSync();
    const journal = await openJournalFile(link, { auditKey: KEY }, sync.datasync);
    const receipt = await journal.append({ type: "test.event", at: at(), data: {} });
    expect(receipt.seq).toBe(1);
    expect(sync.records.map((r) => r.ino)).toEqual(sync.records.map(() => statSync(join(base, "target.db-wal")).ino));
    await journal.close();
  });

  it("resolves each write only after a sync of SQLite's log that began after its commit, across every checkpoint mode, log restarts and the journal's own checkpoints", async () => {
    const path = tempFile();
    const raw = new Database(path, { timeout: 0 });
    const headNow = (): number => (raw.prepare("SELECT coalesce(max(seq), 0) FROM audit").pluck().get() as number) ?? 0;
    const sync = recordingSync(() => headNow());
    const journal = await openJournalFile(path, { auditKey: KEY }, sync.datasync);
    const wal = `${path}-wal`;
    const walIno = statSync(wal).ino;
    const covered = (seq: number): boolean => sync.records.some((r) => r.done && r.ino === walIno && r.headAtStart >= seq);
    const uncovered: number[] = [];
    const write = async (bytes = 10): Promise<void> => {
      const receipts = await Promise.all(Array.from({ length: 4 }, () => journal.append({ type: "test.event", at: at(), data: { pad: "x".repeat(bytes) } })));
      for (const r of receipts) if (!covered(r.seq)) uncovered.push(r.seq);
    };
    await write();
    for (const mode of ["PASSIVE", "FULL", "RESTART", "TRUNCATE"]) {
      // Another connection checkpoints (TRUNCATE empties the log); the journal's next write restarts it from its start.
      raw.pragma(`wal_checkpoint(${mode})`);
      await write();
      await write();
    }
    if (statSync(wal).size !== 0) raw.pragma("wal_checkpoint(TRUNCATE)");
    // Enough pages for the journal's own checkpoints (SQLite's automatic one, or its checkpoint worker); the log then restarts.
    for (let i = 0; i < 80; i++) await write(16_000);
    expect(raw.pragma("wal_checkpoint(PASSIVE)", { simple: false })).toEqual([expect.objectContaining({ busy: 0 })]);
    // Another connection opening and closing does not delete the log the journal syncs, nor can it leave WAL mode.
    new Database(path).close();
    expect(() => raw.pragma("journal_mode = DELETE")).toThrow(/locked/);
    await write();
    expect(uncovered).toEqual([]);
    expect(statSync(wal).ino).toBe(walIno);
    expect(new Set(sync.records.map((r) => r.ino))).toEqual(new Set([walIno]));
    raw.close();
    await journal.close();
  });

  it("leaves a call whose sync failed in doubt, as a crash would: the reopened journal holds its intent, recovery never runs it", async () => {
    const path = tempFile();
    const failing = ((_fd: number, callback: (error: NodeJS.ErrnoException | null) => void) => {
      setImmediate(() => callback(Object.assign(new Error("EIO: i/o error, fdatasync"), { code: "EIO" })));
    }) as typeof fdatasync;
    const store = createNotesStore();
    const registry = createToolRegistry({ families: [createNotesTools(store)] });
    const call = { principal: "p", tenant: "t", profile: defineProfile({ name: "sync", allow: ["notes:sync"], maxRisk: "low" }) };
    const journal = await openJournalFile(path, { auditKey: KEY }, failing);
    const result = await createGate({ registry, journal }).invoke("notes.sync_notes", { delayMs: 0 }, call);
    expect(result).toMatchObject({ status: "error", code: "journal_failed" });
    await journal.close();

    const reopened = await openJournalFile(path, { auditKey: KEY }, fdatasync);
    expect(verifyAuditChain(await reopened.readAudit(), { key: KEY, expectedHead: await reopened.head() })).toMatchObject({ ok: true });
    expect((await reopened.listOutbox()).map((e) => e.state)).toEqual(["pending"]);
    const report = await recoverOutbox(createGate({ registry, journal: reopened }), { olderThanMs: 0 });
    expect(report.entries.map((e) => e.action)).toEqual(["unknown"]);
    expect(store.writes).toBe(0);
    await reopened.close();
  });
});
