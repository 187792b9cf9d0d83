import { randomBytes } from "node:crypto";
import { hashCanonical, ToolError } from "@toolgate/core";
import { recoverOutbox, verifyAuditChain } from "@toolgate/core/operator";
import { sampleIntent } from "@toolgate/core/testing";
import { connectPostgresJournal, type PostgresJournal } from "@toolgate/store-postgres";
import { afterAll, beforeAll, expect, it } from "vitest";
import { describeWithCluster, startCluster, type Cluster } from "./fixtures/cluster.js";
import { commitCutter, type CommitCutter } from "./fixtures/proxy.js";
// @ts-expect-error plain ESM module shared with the crash test: the ledger provider and its two tools
import { CALL, ledgerGate, openLedger } from "../crash/ledger.mjs";

const key = "commit-outcome-key";
const at = "2026-01-01T00:00:00.000Z";

/** A journal that reaches the server through a proxy that cuts a COMMIT, and one that reaches it directly to look. */
let cluster: Cluster;
async function setUp(timeouts = {}): Promise<{ cutter: CommitCutter; journal: PostgresJournal; direct: PostgresJournal; done: () => Promise<void> }> {
  const schema = `t_${randomBytes(6).toString("hex")}`;
  const pgUrl = cluster.url;
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
    },
  };
}

const outcome = (promise: Promise<unknown>): Promise<unknown> =>
  promise.then(
    (value) => ({ ok: value }),
    (error: unknown) => error,
  );

/** One batch (an intent and an event) whose connection the proxy cuts at its COMMIT. */
async function cutBatch(cutter: CommitCutter, journal: PostgresJournal, when: "before" | "after", intentKey: string): Promise<unknown[]> {
  cutter.arm(when);
  const ended = await Promise.all([outcome(journal.beginIntent(sampleIntent(intentKey))), outcome(journal.append({ type: "test.cut", at, data: {} }))]);
  expect(cutter.cuts()).toBe(1);
  return ended;
}

describeWithCluster("a connection lost during a batch's COMMIT", () => {
  beforeAll(() => {
    cluster = startCluster();
  }, 120_000);
  afterAll(() => cluster?.stop());

  it("that committed: the batch's calls resolve (the server says so on a new connection), each written once", async () => {
    const { cutter, journal, direct, done } = await setUp();
    try {
      const [intent, event] = await cutBatch(cutter, journal, "after", "cut-after");
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
      const [intent, event] = await cutBatch(cutter, journal, "before", "cut-before");
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
      // The server stays out of reach far longer than the call may wait: only a bounded ask ends it as unknown
      // (an unbounded one would wait for the server and then find the commit).
      cutter.arm("after", 120_000);
      const error = await outcome(journal.append({ type: "test.cut", at, data: {} }));
      expect(ToolError.is(error, "journal_failed")).toBe(true);
      expect(error).toMatchObject({ retryable: false, details: { committed: "unknown" } });
      expect((await direct.readAudit()).filter((r) => r.type === "test.cut")).toHaveLength(1);
    } finally {
      await done();
    }
  });

  it("of an intent, through the gate, unanswerable: the call ends effect_state_unknown, not run; recovery then finds the intent", async () => {
    const { cutter, journal, direct, done } = await setUp({ commitOutcomeTimeoutMs: 600 });
    const db = openLedger(":memory:");
    try {
      const gate = ledgerGate(journal, db);
      cutter.arm("after", 120_000);
      const result = await gate.invoke("ledger.upsert_entry", { n: 1 }, { ...CALL, idempotencyKey: "cut-intent" });
      expect(cutter.cuts()).toBe(1);
      expect(result).toMatchObject({ status: "error", code: "journal_failed", boundary: "effect_state_unknown", retryable: false });
      expect(db.prepare("SELECT COUNT(*) AS n FROM attempts").get()).toEqual({ n: 0 }); // not run here
      const key = hashCanonical([CALL.tenant, CALL.principal, "cut-intent"]);
      expect(await direct.getIntent(key)).toMatchObject({ state: "pending" }); // the commit did happen
      cutter.restore(); // the server answers again
      const report = await recoverOutbox(gate, { olderThanMs: 0 });
      expect(report).toMatchObject({ replayed: 1, failed: 0 });
      expect(db.prepare("SELECT COUNT(*) AS n FROM applied").get()).toEqual({ n: 1 });
      expect(await direct.getIntent(key)).toMatchObject({ state: "completed" });
    } finally {
      db.close();
      await done();
    }
  });
});
