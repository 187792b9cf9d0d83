import { chmodSync, existsSync, fdatasync } from "node:fs";
import { resolve } from "node:path";
import Database from "better-sqlite3";
import { ToolError, type Journal } from "@toolgate/core";
import { protectPath } from "@toolgate/core/boundary";
import { type AuditKey } from "@toolgate/core/operator";
import { auditKeyCheck, createJournal } from "@toolgate/core/store-kit";
import { sqliteDriver } from "./driver.js";
import { migrate, SQLITE_SCHEMA_VERSION } from "./schema.js";
import { walSync, type WalSync } from "./wal-sync.js";
import { checkpointer, type Checkpointer } from "./checkpointer.js";

/**
 * `full` (the default): every commit is fsynced before its promise resolves, so an intent survives
 * a power loss or kernel crash as well as a killed process. On a file, the journal syncs the
 * write-ahead log itself, off the event loop, one sync for every batch committed meanwhile (the
 * connection runs at NORMAL, which keeps SQLite's syncs around checkpoints). `normal`: in WAL mode a commit survives
 * a killed process but the last commits can be lost with the machine; faster. `extra`: `full`
 * plus a directory sync.
 */
export type SqliteSynchronous = "full" | "normal" | "extra";

/** Commits between two checkpoints of the worker; SQLite's default automatic checkpoint, in pages. */
const CHECKPOINT_EVERY = 32;
const SQLITE_AUTOCHECKPOINT = 1000;

export interface SqliteJournalOptions {
  /** HMAC key for the audit chain. Every process opening the file must use the same one. */
  readonly auditKey: AuditKey;
  /** Default `full`: see {@link SqliteSynchronous}. */
  readonly synchronous?: SqliteSynchronous;
  /** How long a write waits for another process's transaction, in ms (default 5000). */
  readonly busyTimeoutMs?: number;
  /**
   * Batch the writes that arrive in the same event-loop turn into one transaction (default true).
   * Each call still resolves only after the transaction holding it commits.
   */
  readonly groupCommit?: boolean;
  /** Most writes in one batch (default 512). */
  readonly maxBatch?: number;
  /**
   * Keep the output body of reads in the outbox (default false: a read keeps its output hash,
   * not its output). Side-effectful results always keep theirs. See `CreateJournalOptions`.
   */
  readonly retainReadOutputs?: boolean;
}

export interface SqliteJournal extends Journal {
  readonly kind: "sqlite";
  readonly path: string;
  readonly schemaVersion: number;
  /**
   * The level kept: the connection's own (read back from SQLite, not the option), or `full` when
   * the journal syncs the write-ahead log itself at NORMAL.
   */
  readonly synchronous: SqliteSynchronous | "off";
}

/**
 * Open (creating and migrating when needed) a journal in one SQLite file. Several processes may
 * open the same file: every write is one `BEGIN IMMEDIATE` transaction that reads the audit head
 * and appends after it, so they keep one chain.
 */
export function openSqliteJournal(path: string, options: SqliteJournalOptions): Promise<SqliteJournal> {
  return openJournalFile(path, options, fdatasync);
}

/** {@link openSqliteJournal} with the log's sync call given (tests count, hold or fail it). */
export async function openJournalFile(path: string, options: SqliteJournalOptions, datasync: typeof fdatasync): Promise<SqliteJournal> {
  const synchronous = options.synchronous ?? "full";
  if (!["full", "normal", "extra"].includes(synchronous)) throw new TypeError(`synchronous must be full, normal or extra, not ${String(synchronous)}`);
  const busyTimeoutMs = options.busyTimeoutMs ?? 5000;
  const maxBatch = Math.max(1, options.maxBatch ?? 512);
  const groupCommit = options.groupCommit ?? true;
  const auditKey = options.auditKey;
  if (auditKey === undefined || auditKey.length === 0) throw new TypeError("openSqliteJournal needs the audit key");

  // Full on a file: the journal syncs the log itself (see SqliteSynchronous).
  const ownSync = synchronous === "full" && path !== ":memory:" && path !== "";
  let db: Database.Database;
  let sync: WalSync | undefined;
  let checkpoint: Checkpointer | undefined;
  try {
    const created = path !== ":memory:" && !existsSync(path);
    // The journal file and its write-ahead log are the gate's state: no filesystem tool may reach them.
    if (path !== ":memory:" && path !== "") for (const file of [path, `${path}-wal`, `${path}-shm`]) protectPath(resolve(file));
    db = new Database(path, { timeout: busyTimeoutMs });
    // The journal holds (redacted) inputs and results: readable by its owner only.
    if (created) chmodSync(path, 0o600);
  } catch (cause) {
    throw new ToolError("journal_failed", `could not open journal ${path}`, { cause });
  }
  try {
    // Another process opening the same new file at once can hold it while it turns on the log:
    // SQLite then answers "busy" without waiting, so the setup is tried again until the timeout.
    await untilNotBusy(busyTimeoutMs, () => {
      db.pragma("journal_mode = WAL");
      db.pragma(`synchronous = ${ownSync ? "NORMAL" : synchronous.toUpperCase()}`);
      migrate(db, path, auditKeyCheck(auditKey));
    });
    if (path !== ":memory:" && path !== "") {
      // SQLite follows a symbolic link to the file it opens and keeps its log and shared memory
      // beside that file, not beside the link: protect and sync those.
      const file = sqliteFile(db) ?? resolve(path);
      for (const side of [file, `${file}-wal`, `${file}-shm`]) protectPath(side);
      if (ownSync) {
        sync = walSync(file, datasync);
        // Checkpoints (and their syncs) move to a worker thread too; back to the connection if it fails.
        db.pragma("wal_autocheckpoint = 0");
        checkpoint = checkpointer(file, busyTimeoutMs, CHECKPOINT_EVERY, () => {
          if (db.open) db.pragma(`wal_autocheckpoint = ${SQLITE_AUTOCHECKPOINT}`);
        });
      }
    }
  } catch (cause) {
    db.close();
    throw ToolError.is(cause) ? cause : new ToolError("journal_failed", `could not open journal ${path}`, { cause });
  }

  const journal = createJournal(sqliteDriver(db, path, { groupCommit, maxBatch, sync, checkpoint }), {
    auditKey,
    retainReadOutputs: options.retainReadOutputs === true,
  });
  return {
    ...journal,
    kind: "sqlite",
    path,
    schemaVersion: SQLITE_SCHEMA_VERSION,
    synchronous: sync ? "full" : ((["off", "normal", "full", "extra"] as const)[db.pragma("synchronous", { simple: true }) as number] ?? "off"),
  };
}

/** Run `step` again while SQLite answers SQLITE_BUSY, for at most `timeoutMs`. */
async function untilNotBusy(timeoutMs: number, step: () => void): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (let wait = 5; ; wait = Math.min(wait * 2, 100)) {
    try {
      step();
      return;
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      if (!(typeof code === "string" && code.startsWith("SQLITE_BUSY")) || Date.now() + wait > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
  }
}

/** The main database file as SQLite opened it (symbolic links followed), when it names one. */
function sqliteFile(db: Database.Database): string | undefined {
  const main = (db.pragma("database_list") as { name: string; file: string }[]).find((d) => d.name === "main");
  return main === undefined || main.file === "" ? undefined : main.file;
}
