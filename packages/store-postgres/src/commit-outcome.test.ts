import { ToolError } from "@toolgate/core";
import { verifyAuditChain } from "@toolgate/core/operator";
import { sampleIntent } from "@toolgate/core/testing";
import { expect, it } from "vitest";
import { connectPostgresJournal, type PostgresJournal } from "./index.js";
import { describeWithPostgres, freshSchema, pgUrl } from "./fixtures/postgres.js";
import { commitCutter, type CommitCutter } from "./fixtures/proxy.js";

const key = "commit-outcome-key";
const at = "2026-01-01T00:00:00.000Z";

/** A journal that reaches the server through a proxy that cuts a COMMIT, and one that reaches it directly to look. */
async function setUp(timeouts = {}): Promise<{ cutter: CommitCutter; journal: PostgresJournal; direct: PostgresJournal; done: () => Promise<void> }> {
  const { schema, drop } = freshSchema();
  const cutter = await commitCutter(pgUrl);
  const journal = await connectPostgresJournal(cutter.url, { auditKey: key, schema, poolSize: 2, timeouts });
  const direct = await connectPostgresJournal(pgUrl, { auditKey: key, schema });
  await journal.append({ type: "test.warm", at, data: {} });
  return {
    cutter,
    journal,
    direct,
    done: async () => {
      await journal.close();
      await direct.close();
      await cutter.close();
      await drop();
    },
  };
}

const outcome = (promise: Promise<unknown>): Promise<unknown> =>
  promise.then(
    (value) => ({ ok: value }),
    (error: unknown) => error,
  );

describeWithPostgres("a connection lost during a batch's COMMIT", () => {
  it("that committed: the batch's calls resolve (the server says so on a new connection), each written once", async () => {
    const { cutter, journal, direct, done } = await setUp();
    try {
      cutter.arm("after");
      const [intent, event] = await Promise.all([
        outcome(journal.beginIntent(sampleIntent("cut-after"))),
        outcome(journal.append({ type: "test.cut", at, data: {} })),
      ]);
      expect(cutter.cuts()).toBe(1);
      expect(intent).toMatchObject({ ok: { status: "started" } });
      expect(event).toMatchObject({ ok: { seq: expect.any(Number) } });
      expect(await direct.getIntent("cut-after")).toMatchObject({ state: "pending" });
      const records = await direct.readAudit();
      expect(records.filter((r) => r.type === "test.cut")).toHaveLength(1);
      expect(verifyAuditChain(records, { key, expectedHead: await direct.head() }).ok).toBe(true);
      await journal.append({ type: "test.after", at, data: {} }); // the pool dropped the cut connection
    } finally {
      await done();
    }
  });

  it("that never reached the server: the calls fail retryably, committed false, and nothing is written", async () => {
    const { cutter, journal, direct, done } = await setUp();
    try {
      cutter.arm("before");
      const [intent, event] = await Promise.all([
        outcome(journal.beginIntent(sampleIntent("cut-before"))),
        outcome(journal.append({ type: "test.cut", at, data: {} })),
      ]);
      expect(cutter.cuts()).toBe(1);
      for (const error of [intent, event]) {
        expect(ToolError.is(error, "journal_failed")).toBe(true);
        expect(error).toMatchObject({ retryable: true, details: { committed: false } });
      }
      expect(await direct.getIntent("cut-before")).toBeUndefined();
      expect((await direct.readAudit()).filter((r) => r.type === "test.cut")).toEqual([]);
      await journal.append({ type: "test.after", at, data: {} });
    } finally {
      await done();
    }
  });

  it("while the server cannot be asked within commitOutcomeTimeoutMs: the calls fail as unknown, not retryable (the commit did happen)", async () => {
    const { cutter, journal, direct, done } = await setUp({ commitOutcomeTimeoutMs: 600 });
    try {
      cutter.arm("after", 2000);
      const started = Date.now();
      const error = await outcome(journal.append({ type: "test.cut", at, data: {} }));
      expect(Date.now() - started).toBeLessThan(2000);
      expect(ToolError.is(error, "journal_failed")).toBe(true);
      expect(error).toMatchObject({ retryable: false, details: { committed: "unknown" } });
      expect((await direct.readAudit()).filter((r) => r.type === "test.cut")).toHaveLength(1);
    } finally {
      await done();
    }
  });
});
