import { execFile } from "node:child_process";
import { closeSync, fdatasync, openSync, readSync } from "node:fs";
import { fileURLToPath } from "node:url";
import Database from "better-sqlite3";
import { createGate, createToolRegistry, defineProfile, ToolError } from "@toolgate/core";
import { verifyAuditChain } from "@toolgate/core/operator";
import { createNotesStore, createNotesTools } from "@toolgate/core/testing";
import { describe, expect, it } from "vitest";
import { tempFiles } from "./fixtures/temp-files.js";
import { openJournalFile } from "./journal.js";

const KEY = "sqlite-wal-sync-key";
const tempFile = tempFiles("toolgate-sqlite-sync-");
const at = (): string => new Date().toISOString();
const turns = async (n = 20): Promise<void> => {
  for (let i = 0; i < n; i++) await new Promise((resolve) => setImmediate(resolve));
};

/** The real system call, counted, and held back while `hold` is set (as a slow disk would). */
function heldSync() {
  const waiting: (() => void)[] = [];
  const state = { calls: 0, hold: true, fail: undefined as NodeJS.ErrnoException | undefined };
  const datasync = ((fd: number, callback: (error: NodeJS.ErrnoException | null) => void) => {
    state.calls++;
    const run = (): void => (state.fail ? callback(state.fail) : fdatasync(fd, callback));
    if (state.hold) waiting.push(run);
    else run();
  }) as typeof fdatasync;
  const release = (): void => {
    state.hold = false;
    for (const run of waiting.splice(0)) run();
  };
  return { datasync, state, waiting, release };
}

/** A gate over the notes family: `notes.sync_notes` is a non-idempotent write counted in `store.writes`. */
function writeGate(journal: Parameters<typeof createGate>[0]["journal"]) {
  const store = createNotesStore();
  const gate = createGate({ registry: createToolRegistry({ families: [createNotesTools(store)] }), journal });
  const call = { principal: "p", tenant: "t", profile: defineProfile({ name: "sync", allow: ["notes:sync"], maxRisk: "low" }) };
  return { store, invoke: () => gate.invoke("notes.sync_notes", { delayMs: 0 }, call) };
}

describe("synchronous full: the journal syncs the write-ahead log itself", () => {
  it("runs no effect while its committed intent waits for the log's sync", async () => {
    const path = tempFile();
    const sync = heldSync();
    const journal = await openJournalFile(path, { auditKey: KEY }, sync.datasync);
    expect(journal.synchronous).toBe("full");
    const { store, invoke } = writeGate(journal);
    const pending = invoke();
    // Until the journal asks for the sync (bounded: if it never does, the check below says so).
    for (const end = Date.now() + 10_000; sync.waiting.length === 0 && Date.now() < end;) await turns(1);
    // The intent is committed (another connection sees it) but not yet on disk: no effect yet.
    const raw = new Database(path, { readonly: true });
    expect(raw.prepare("SELECT count(*) FROM outbox").pluck().get()).toBe(1);
    raw.close();
    expect(sync.waiting.length).toBeGreaterThan(0);
    expect(store.writes).toBe(0);
    sync.release();
    expect((await pending).status).toBe("ok");
    expect(store.writes).toBe(1);
    await journal.close();
  });

  it("fails the call before its effect when the sync fails, and every later write and read of what is not on disk", async () => {
    const path = tempFile();
    const sync = heldSync();
    const journal = await openJournalFile(path, { auditKey: KEY }, sync.datasync);
    const { store, invoke } = writeGate(journal);
    sync.state.fail = Object.assign(new Error("EIO: i/o error, fdatasync"), { code: "EIO" });
    const pending = invoke();
    await turns();
    sync.release();
    const result = await pending;
    expect(result).toMatchObject({ status: "error", code: "journal_failed" });
    expect(store.writes).toBe(0);
    // After a failed sync nothing is trusted to be on disk: later writes, and reads, are refused.
    const later = journal.append({ type: "test.event", at: at(), data: {} });
    await expect(later).rejects.toSatisfy((e) => ToolError.is(e, "journal_failed") && /sync the write-ahead log/.test(e.message));
    await expect(journal.head()).rejects.toSatisfy((e) => ToolError.is(e, "journal_failed"));
    expect(store.writes).toBe(0);
    await journal.close();
  });

  it("covers every commit made while one sync ran with the next one", async () => {
    const sync = heldSync();
    const journal = await openJournalFile(tempFile(), { auditKey: KEY, groupCommit: false }, sync.datasync);
    const first = journal.append({ type: "test.event", at: at(), data: { i: 0 } });
    await turns(2);
    // Twenty more commits, each its own transaction, while the first sync is still running.
    const rest = Array.from({ length: 20 }, (_, i) => journal.append({ type: "test.event", at: at(), data: { i: i + 1 } }));
    await turns(2);
    expect(sync.state.calls).toBe(1);
    sync.release();
    const receipts = await Promise.all([first, ...rest]);
    expect(receipts.map((r) => r.seq)).toEqual(Array.from({ length: 21 }, (_, i) => i + 1));
    expect(sync.state.calls).toBe(2);
    await journal.close();
  });

  it("answers a read that saw a commit still being synced only once it is on disk, and one that saw none at once", async () => {
    const sync = heldSync();
    const journal = await openJournalFile(tempFile(), { auditKey: KEY }, sync.datasync);
    expect(await journal.head()).toMatchObject({ seq: 0 });
    expect(sync.state.calls).toBe(0);
    const written = journal.append({ type: "test.event", at: at(), data: {} });
    await turns();
    let head: { seq: number } | undefined;
    const read = journal.head().then((h) => (head = h));
    await turns();
    expect(head).toBeUndefined();
    sync.release();
    await Promise.all([written, read]);
    expect(head).toMatchObject({ seq: 1 });
    await journal.close();
  });

  it("closes only after the running sync, and keeps the connection's own level for normal and extra", async () => {
    const sync = heldSync();
    const path = tempFile();
    const journal = await openJournalFile(path, { auditKey: KEY }, sync.datasync);
    const written = journal.append({ type: "test.event", at: at(), data: {} });
    await turns();
    let closed = false;
    const closing = journal.close().then(() => (closed = true));
    await turns();
    expect(closed).toBe(false);
    sync.release();
    await Promise.all([written, closing]);
    expect(closed).toBe(true);
    for (const level of ["normal", "extra"] as const) {
      const other = heldSync();
      const j = await openJournalFile(path, { auditKey: KEY, synchronous: level }, other.datasync);
      await j.append({ type: "test.event", at: at(), data: {} });
      expect([j.synchronous, other.state.calls]).toEqual([level, 0]);
      await j.close();
    }
  });

  it("checkpoints in a worker: the log starts again from its beginning under steady writes, and nothing is lost", async () => {
    const path = tempFile();
    const journal = await openJournalFile(path, { auditKey: KEY }, fdatasync);
    // The log's salt (header bytes 16-23) changes each time a writer starts it again after a complete checkpoint.
    const salt = (): string => {
      const fd = openSync(`${path}-wal`, "r");
      try {
        const header = Buffer.alloc(32);
        readSync(fd, header, 0, 32, 0);
        return header.subarray(16, 24).toString("hex");
      } finally {
        closeSync(fd);
      }
    };
    const salts = new Set<string>();
    let written = 0;
    // 16 writers, each awaiting its last write: about 300 commits with no pause between them.
    await Promise.all(
      Array.from({ length: 16 }, async (_, w) => {
        for (let i = 0; i < 300; i++) {
          await journal.append({ type: "test.event", at: at(), data: { w, i, pad: "x".repeat(200) } });
          written++;
          if (w === 0) salts.add(salt());
        }
      }),
    );
    expect(written).toBe(16 * 300);
    expect(salts.size).toBeGreaterThan(1);
    const verdict = verifyAuditChain(await journal.readAudit(), { key: KEY, expectedHead: await journal.head() });
    expect(verdict).toMatchObject({ ok: true, count: 16 * 300 });
    await journal.close();
  });

  it("ends a process only after close() has closed the checkpoint worker", async () => {
    const script = fileURLToPath(new URL("./fixtures/close-after-checkpoints.mjs", import.meta.url));
    const out = await new Promise<{ code: number | null; stdout: string }>((resolve) => {
      const child = execFile(process.execPath, [script, tempFile()], { timeout: 60_000 }, (_error, stdout) => resolve({ code: child.exitCode, stdout }));
    });
    expect(out).toEqual({ code: 0, stdout: "closed\n" });
  });
});
