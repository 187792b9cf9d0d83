import { closeSync, fdatasync, fsyncSync, openSync } from "node:fs";
import { dirname } from "node:path";

/**
 * `synchronous: "full"` kept off the event loop. The connection runs at NORMAL, so a commit
 * writes its frames to the write-ahead log without waiting for the disk; this syncs the log file
 * in the thread pool and tells each commit when it is on disk. One sync covers every commit made
 * before it started (the log is one file, written in order), so while one sync runs, the batches
 * committed meanwhile wait for the next, which covers them all. Checkpoints keep NORMAL's own syncs
 * (the log before it is copied, the database after).
 */
export interface WalSync {
  /** Note a commit just made: resolves once it is on disk; rejects if a sync failed. */
  committed(): Promise<void>;
  /** Resolves once every commit noted so far is on disk; undefined when they all are already. */
  caughtUp(): Promise<void> | undefined;
  /** Wait for the last sync, then close the log's file handle. */
  close(): Promise<void>;
}

interface Waiter {
  readonly upTo: number;
  readonly resolve: () => void;
  readonly reject: (error: unknown) => void;
}

/**
 * Open the write-ahead log of the database at `path` (it exists once the connection has opened the
 * database in WAL mode) and sync its directory once, as SQLite does for a log it created.
 * Call `committed()` right after each commit of the connection. `datasync` is the system call
 * (replaceable to count or fail it in tests).
 */
export function walSync(path: string, datasync: typeof fdatasync = fdatasync): WalSync {
  const fd = openSync(`${path}-wal`, "r");
  const dir = openSync(dirname(path), "r");
  try {
    fsyncSync(dir);
  } finally {
    closeSync(dir);
  }
  let marked = 0; // commits noted so far
  let synced = 0; // commits known to be on disk
  let running = false;
  let failed: unknown;
  let closed = false;
  const waiters: Waiter[] = [];
  let idle: (() => void) | undefined;

  const settle = (): void => {
    let kept = 0;
    for (const w of waiters) {
      if (failed !== undefined) w.reject(failed);
      else if (w.upTo <= synced) w.resolve();
      else waiters[kept++] = w;
    }
    waiters.length = failed === undefined ? kept : 0;
  };
  const kick = (): void => {
    if (running || failed !== undefined || synced >= marked) {
      if (!running && idle) idle();
      return;
    }
    running = true;
    const upTo = marked;
    datasync(fd, (error) => {
      running = false;
      // A failed sync may have dropped pages the kernel no longer holds: nothing after it is trusted.
      if (error) failed = error;
      else synced = upTo;
      settle();
      kick();
    });
  };

  const wait = (upTo: number): Promise<void> => {
    if (failed !== undefined) return Promise.reject(failed);
    return new Promise<void>((resolve, reject) => {
      waiters.push({ upTo, resolve, reject });
      kick();
    });
  };

  return {
    committed: () => wait(++marked),
    caughtUp: () => (failed === undefined && synced >= marked ? undefined : wait(marked)),
    async close() {
      if (closed) return;
      closed = true;
      if (failed === undefined && (running || synced < marked)) await new Promise<void>((resolve) => (idle = resolve));
      closeSync(fd);
    },
  };
}
