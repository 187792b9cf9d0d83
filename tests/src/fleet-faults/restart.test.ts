import { randomBytes } from "node:crypto";
import { hashCanonical, type InvokeResult } from "@toolgate/core";
import { recoverOutbox, verifyAuditChain } from "@toolgate/core/operator";
import { connectPostgresJournal } from "@toolgate/store-postgres";
import { afterAll, beforeAll, expect, it } from "vitest";
import { describeWithCluster, startCluster, type Cluster } from "./fixtures/cluster.js";
// @ts-expect-error plain ESM module shared with the crash test: the ledger provider and its two tools
import { CALL, ledgerGate, openLedger } from "../crash/ledger.mjs";

const IN_FLIGHT = 32;
/** The outbox key (and the provider's idempotency key) of call `n`: the gate scopes the caller's key to its tenant and principal. */
const keyOf = (n: number): string => hashCanonical([CALL.tenant, CALL.principal, `call-${n}`]);

/** How many times the ledger applied each call's effect (by its idempotency key). */
function appliedCounts(db: { prepare(sql: string): { all(): unknown[] } }): Map<string, number> {
  const rows = db.prepare("SELECT key, COUNT(*) AS n FROM applied GROUP BY key").all() as { key: string; n: number }[];
  return new Map(rows.map((r) => [r.key, r.n]));
}

interface Ended {
  readonly n: number;
  readonly issuedAfterRestart: boolean;
  readonly result: InvokeResult<unknown>;
}

for (const mode of ["fast", "immediate"] as const)
  describeWithCluster(`PostgreSQL stopped (-m ${mode}) and started again under a run of calls`, () => {
    let cluster: Cluster;
    beforeAll(() => {
      cluster = startCluster();
    }, 120_000);
    afterAll(() => cluster?.stop());

    it("ends every call at its exact boundary, reconnects by itself, and recovery leaves nothing pending and nothing twice", { timeout: 180_000 }, async () => {
      const key = randomBytes(32);
      const journal = await connectPostgresJournal(cluster.url, { auditKey: key, schema: `restart_${mode}`, poolSize: 4 });
      const db = openLedger(":memory:");
      const gate = ledgerGate(journal, db);
      const ended: Ended[] = [];
      let pending = 0;
      let next = 0;
      let restarted = false;
      let stop = false;
      const worker = async (): Promise<void> => {
        while (!stop) {
          const n = next++;
          const issuedAfterRestart = restarted;
          const tool = n % 2 === 0 ? "ledger.upsert_entry" : "ledger.charge_card";
          pending++;
          const result = (await gate.invoke(tool, { n }, { ...CALL, idempotencyKey: `call-${n}` })) as InvokeResult<unknown>;
          pending--;
          ended.push({ n, issuedAfterRestart, result });
        }
      };
      const running = Promise.all(Array.from({ length: IN_FLIGHT }, worker));
      let inFlightAtStop = 0;
      try {
        // Warmed up, with calls at every step in flight: then the server goes.
        const warm = Date.now() + 30_000;
        while (ended.length < 150 && Date.now() < warm) await new Promise((resolve) => setTimeout(resolve, 10));
        inFlightAtStop = pending;
        await cluster.restart(mode, 300);
        restarted = true;
        // The same gate and journal go on: no new pool, no new worker.
        const end = Date.now() + 30_000;
        while (ended.filter((e) => e.issuedAfterRestart && e.result.status === "ok").length < 200 && Date.now() < end) {
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
      } finally {
        stop = true;
        await running;
      }
      // Every worker had a call under way as the server went.
      expect(inFlightAtStop).toBe(IN_FLIGHT);

      // Where a call stood when the server went is down to timing (a batch cut during its COMMIT waits for the server and
      // may find it committed), so the refusal before any effect is also proved on its own: with nothing running, the
      // server goes again; a call made while it is down is refused before its effect, retryably, and leaves no intent;
      // the same call made again once the server is back runs, once.
      const downKey = hashCanonical([CALL.tenant, CALL.principal, "call-down"]);
      await cluster.down(mode);
      const refused = await gate.invoke("ledger.charge_card", { n: -1 }, { ...CALL, idempotencyKey: "call-down" });
      await cluster.up();
      expect(refused, JSON.stringify(refused)).toMatchObject({ status: "error", boundary: "pre_effect_refusal", code: "journal_failed", retryable: true });
      expect(appliedCounts(db).has(downKey), "nothing ran while the journal was down").toBe(false);
      expect(await journal.getIntent(downKey), "no intent was committed while the journal was down").toBeUndefined();
      const retried = await gate.invoke("ledger.charge_card", { n: -1 }, { ...CALL, idempotencyKey: "call-down" });
      expect(retried.status, JSON.stringify(retried)).toBe("ok");
      expect(appliedCounts(db).get(downKey), "the retry ran once").toBe(1);

      const applied = appliedCounts(db);
      const counts = { calls: ended.length, ok: 0, preEffect: 0, completedUnjournaled: 0, unknown: 0 };
      for (const { n, result } of ended) {
        if (result.status === "ok") {
          counts.ok++;
          expect(applied.get(keyOf(n)), `call ${n} succeeded once`).toBe(1);
          expect(await journal.getIntent(keyOf(n)), `call ${n} is journaled under its key`).toMatchObject({ state: "completed" });
          continue;
        }
        expect(result.status, `call ${n}: ${JSON.stringify(result)}`).toBe("error");
        if (result.status !== "error") continue;
        expect(["pre_effect_refusal", "effect_completed", "effect_state_unknown"], `call ${n}: ${JSON.stringify(result)}`).toContain(result.boundary);
        if (result.boundary === "pre_effect_refusal") {
          counts.preEffect++;
          expect(applied.has(keyOf(n)), `call ${n} refused before its effect had none`).toBe(false);
          // The journal's session failed: nothing ran, and the caller may try again.
          expect(result, `call ${n}`).toMatchObject({ code: "journal_failed", retryable: true });
          // Exact: the intent of a call refused before its effect was never committed.
          expect(await journal.getIntent(keyOf(n)).catch(() => "unreadable"), `call ${n}`).toBeUndefined();
        } else if (result.boundary === "effect_completed") {
          counts.completedUnjournaled++;
          expect(applied.get(keyOf(n)), `call ${n}: its effect happened once`).toBe(1);
        } else counts.unknown++;
      }
      // The server is back long before commitOutcomeTimeoutMs: every commit cut by the restart is settled one way or the other.
      expect(counts.unknown).toBe(0);
      expect(ended.filter((e) => e.issuedAfterRestart && e.result.status === "ok").length).toBeGreaterThanOrEqual(200);

      const report = await recoverOutbox(gate, { olderThanMs: 0, claimant: `recovery-${mode}` });
      expect(report.failed).toBe(0);
      expect(await journal.listOutbox({ states: ["pending"] })).toEqual([]);
      const entries = await journal.listOutbox();
      const intended = new Set(entries.map((e) => e.key));
      for (const [key, times] of appliedCounts(db)) {
        expect(times, `${key} applied ${times} times`).toBe(1);
        expect(intended.has(key), `${key} has an intent`).toBe(true);
      }
      const verdict = verifyAuditChain(await journal.readAudit(), { key, expectedHead: await journal.head() });
      expect(verdict.ok, verdict.ok ? "" : verdict.reason).toBe(true);
      console.log(
        `postgres restart (-m ${mode}): ${counts.calls} calls, ${counts.ok} ok, ${counts.preEffect} refused before the effect, ` +
          `${counts.completedUnjournaled} completed but unjournaled, ${counts.unknown} unknown; recovery replayed ${report.replayed}, left ${report.unknown} unknown`,
      );
      await journal.close();
      db.close();
    });
  });
