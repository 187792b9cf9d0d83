import { execFile, type ChildProcess } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { ToolError } from "@toolgate/core";
import { verifyAuditChain } from "@toolgate/core/operator";
import { expect, it } from "vitest";
import { connectPostgresJournal, type PostgresJournal } from "./index.js";
import { describeWithPostgres, freshSchema, pgUrl } from "./fixtures/postgres.js";

const stallWorker = fileURLToPath(new URL("./fixtures/stall-worker.mjs", import.meta.url));
const dist = fileURLToPath(new URL("../dist/index.js", import.meta.url));
const key = "stall-key";
const at = "2026-01-01T00:00:00.000Z";

interface Ended {
  readonly ok: boolean;
  readonly toolError?: boolean;
  readonly code?: string;
  readonly retryable?: boolean;
  readonly details?: Record<string, unknown>;
}

/** Resolves with how `promise` ended, or with "still waiting" after `ms`. */
const within = <T>(promise: Promise<T>, ms: number): Promise<T | "still waiting"> =>
  Promise.race([promise, new Promise<"still waiting">((resolve) => setTimeout(() => resolve("still waiting"), ms).unref())]);

const stateOf = (pid: number): string => /\) (\S) /.exec(readFileSync(`/proc/${pid}/stat`, "utf8"))?.[1] ?? "?";

async function until(what: string, ms: number, test: () => boolean): Promise<void> {
  const end = Date.now() + ms;
  while (!test()) {
    if (Date.now() > end) throw new Error(`waited ${ms} ms for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const retryableSessionFailure = expect.objectContaining({ ok: false, toolError: true, code: "journal_failed", retryable: true, details: { committed: false } });

describeWithPostgres("a writer that stalls holding the audit head lock", () => {
  it("loses the lock within its idle timeout (SIGSTOP mid-batch): the other writers go on, its calls fail retryably once continued, nothing is half-written", async () => {
    expect(existsSync(dist), "build the package first: the worker imports dist/").toBe(true);
    const { schema, drop } = freshSchema();
    const timeouts = { idleInTransactionTimeoutMs: 1000, statementTimeoutMs: 4000 };
    const others: PostgresJournal[] = [];
    try {
      const setup = await connectPostgresJournal(pgUrl, { auditKey: key, schema });
      others.push(setup, await connectPostgresJournal(pgUrl, { auditKey: key, schema, timeouts }));
      // Settles once the worker has exited and its output is read to the end.
      let child!: ChildProcess;
      const finished = new Promise<{ code: number; out: string }>((done) => {
        child = execFile(process.execPath, [stallWorker, pgUrl, schema, key, JSON.stringify(timeouts)], { timeout: 60_000 }, (error, out) =>
          done({ code: error ? Number(error.code ?? 1) : 0, out }),
        );
      });
      const pid = child.pid!;
      try {
        await until("the worker to stop itself holding the lock", 20_000, () => stateOf(pid) === "T");
        // Two other writers (their own pools) commit while the stalled one is still stopped.
        const started = Date.now();
        // Bounded generously (a loaded machine is slow, not wrong): what matters is that they commit while it is
        // still stopped (checked below), which only the server ending its idle transaction allows.
        const appended = await within(Promise.all(others.map((j, i) => j.append({ type: "test.other", at, data: { i } }))), 30_000);
        const waited = Date.now() - started;
        expect(appended, "the fleet waited on the stalled writer's lock").not.toBe("still waiting");
        console.log(
          `stalled writer: two others committed ${waited} ms after it stopped holding the lock (idle timeout ${timeouts.idleInTransactionTimeoutMs} ms)`,
        );
        expect(stateOf(pid)).toBe("T");
      } finally {
        process.kill(pid, "SIGCONT");
      }
      const { code, out } = await finished;
      expect(code, out).toBe(0);
      const report = JSON.parse(out) as { stopped: boolean; calls: Ended[]; queued: Ended[]; after: Ended };
      expect(report.stopped).toBe(true);
      // Every call of the stalled batch: a typed, retryable refusal; nothing of it was committed.
      expect(report.calls).toEqual([retryableSessionFailure, retryableSessionFailure]);
      expect(await setup.getRecord("stall", "x")).toBeUndefined();
      expect(await setup.getRecord("stall", "y")).toBeUndefined();
      // Calls queued behind it, and a call after it, commit on a new connection of the same pool.
      expect(report.queued).toEqual([{ ok: true }, { ok: true }]);
      expect(report.after).toEqual({ ok: true });
      expect(await setup.getIntent("queued-intent")).toMatchObject({ key: "queued-intent", state: "pending" });
      const records = await setup.readAudit();
      const types = records.map((r) => r.type).filter((t) => t.startsWith("test.") || t.startsWith("intent."));
      expect(types).toEqual(["test.warm", "test.other", "test.other", "intent.recorded", "test.queued", "test.after"]);
      expect(verifyAuditChain(records, { key, expectedHead: await setup.head() }).ok).toBe(true);
    } finally {
      for (const j of others) await j.close();
      await drop();
    }
  });

  it("is ended by the default idle timeout (5 s) when the journal sets none: a batch that blocks its process 5.6 s under the lock fails retryably", async () => {
    const { schema, drop } = freshSchema();
    const journal = await connectPostgresJournal(pgUrl, { auditKey: key, schema });
    try {
      await journal.append({ type: "test.warm", at, data: {} });
      const blocked = journal.updateRecord("stall", "y", () => {
        const end = Date.now() + 5600;
        while (Date.now() < end); // the event loop stalls holding the lock
        return { value: 1, event: { type: "test.stall.updated", at, data: {} }, result: undefined };
      });
      const error = await blocked.then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(ToolError.is(error, "journal_failed")).toBe(true);
      expect(error).toMatchObject({ retryable: true, details: { committed: false } });
      expect(await journal.getRecord("stall", "y")).toBeUndefined();
      await journal.append({ type: "test.after", at, data: {} }); // reconnected by itself
      const records = await journal.readAudit();
      expect(records.map((r) => r.type)).toEqual(["test.warm", "test.after"]);
      expect(verifyAuditChain(records, { key, expectedHead: await journal.head() }).ok).toBe(true);
    } finally {
      await journal.close();
      await drop();
    }
  });

  it("bounds a statement under the lock (statement timeout): a writer waiting behind an outside session's lock fails retryably, then writes once it is gone", async () => {
    const { schema, drop } = freshSchema();
    const journal = await connectPostgresJournal(pgUrl, { auditKey: key, schema, timeouts: { statementTimeoutMs: 600, idleInTransactionTimeoutMs: 300 } });
    const outside = new pg.Client({ connectionString: pgUrl });
    await outside.connect();
    try {
      await journal.append({ type: "test.warm", at, data: {} });
      await outside.query(`BEGIN; SELECT * FROM "${schema}".audit_head FOR UPDATE`);
      const started = Date.now();
      const ended = await within(
        journal.append({ type: "test.blocked", at, data: {} }).then(
          () => "committed",
          (e: unknown) => e,
        ),
        5000,
      );
      expect(ended, "the writer waited on the lock past its statement timeout").not.toBe("still waiting");
      expect(ToolError.is(ended, "journal_failed")).toBe(true);
      expect(ended).toMatchObject({ retryable: true, details: { committed: false } });
      expect(Date.now() - started).toBeGreaterThanOrEqual(550);
      await outside.query("COMMIT");
      await journal.append({ type: "test.after", at, data: {} });
      expect((await journal.readAudit()).map((r) => r.type)).toEqual(["test.warm", "test.after"]);
    } finally {
      await outside.end();
      await journal.close();
      await drop();
    }
  });

  it("refuses timeouts that are not whole milliseconds from 1, or a statement timeout not above the idle timeout", async () => {
    const refused = [
      { statementTimeoutMs: 0 },
      { idleInTransactionTimeoutMs: -1 },
      { commitOutcomeTimeoutMs: 1.5 },
      { statementTimeoutMs: Number.NaN },
      { statementTimeoutMs: 2 ** 31 },
      { statementTimeoutMs: 4000, idleInTransactionTimeoutMs: 4000 },
      { idleInTransactionTimeoutMs: 20_000 },
    ];
    for (const timeouts of refused) {
      await expect(connectPostgresJournal(pgUrl, { auditKey: key, timeouts }), JSON.stringify(timeouts)).rejects.toThrow(TypeError);
    }
  });
});
