import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";

/**
 * Checkpoints off the event loop. With `synchronous: "full"` kept by the journal (see wal-sync.ts),
 * the connection's own automatic checkpoint would copy the log into the database and sync both on
 * the event loop every thousand pages; instead a worker thread with its own connection to the file
 * runs a checkpoint every `everyCommits` commits, with SQLite's own syncs (the log before it is
 * copied, the database after). This connection starts no write transaction while it runs (its
 * writes wait, the event loop does not), so the checkpoint completes and the next write starts the
 * log again from its beginning; otherwise a log written without pause would only grow. If the
 * worker fails, the connection checkpoints for itself again (`onFailure`).
 */
export interface Checkpointer {
  /** Note a commit; every `everyCommits` of them, start a checkpoint unless one is running. */
  committed(): void;
  /** The running checkpoint, to start the next write transaction after it; undefined when none runs. */
  running(): Promise<void> | undefined;
  /** Finish the running checkpoint and close the worker's connection. */
  close(): Promise<void>;
}

// Plain CommonJS for an eval worker: it runs the same under the test runner and from dist.
const WORKER = `
const { parentPort, workerData } = require("node:worker_threads");
const Database = require(workerData.driver);
const db = new Database(workerData.path, { timeout: workerData.busyTimeoutMs });
db.pragma("synchronous = FULL");
parentPort.on("message", (message) => {
  if (message === "close") {
    db.close();
    parentPort.close();
    return;
  }
  try {
    db.pragma("wal_checkpoint(PASSIVE)");
    parentPort.postMessage("done");
  } catch (error) {
    parentPort.postMessage("failed: " + (error && error.message));
  }
});
`;

export function checkpointer(path: string, busyTimeoutMs: number, everyCommits: number, onFailure: () => void): Checkpointer {
  let worker: Worker | undefined;
  let exited: Promise<void> = Promise.resolve();
  let commits = 0;
  let current: { readonly done: Promise<void>; readonly end: () => void } | undefined;
  let failed = false;
  let closing = false;
  const end = (): void => {
    const ended = current;
    current = undefined;
    // Idle, the worker does not keep the process alive; running, it does (writes wait for it).
    worker?.unref();
    ended?.end();
  };
  const fail = (): void => {
    end();
    if (failed) return;
    failed = true;
    onFailure();
  };
  // Started at the first checkpoint, so a short-lived process (one command) never pays for it.
  const start = (): Worker => {
    const started = new Worker(WORKER, {
      eval: true,
      workerData: { path, busyTimeoutMs, driver: createRequire(import.meta.url).resolve("better-sqlite3") },
    });
    started.on("message", (message: string) => {
      if (message !== "done") fail();
      end();
    });
    started.on("error", fail);
    exited = new Promise<void>((resolve) =>
      started.once("exit", () => {
        if (closing) end();
        else fail();
        resolve();
      }),
    );
    return started;
  };
  return {
    committed() {
      if (failed || closing || ++commits < everyCommits || current) return;
      commits = 0;
      let resolve!: () => void;
      const done = new Promise<void>((r) => (resolve = r));
      current = { done, end: resolve };
      try {
        worker ??= start();
        worker.ref();
        worker.postMessage("checkpoint");
      } catch {
        fail();
      }
    },
    running: () => current?.done,
    async close() {
      closing = true;
      // Held open until the worker has closed its connection, or the process could end first.
      worker?.ref();
      if (failed) void worker?.terminate();
      else worker?.postMessage("close");
      await exited;
    },
  };
}
