import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { recoverOutbox, verifyAuditChain } from "@toolgate/core/operator";
import { openSqliteJournal } from "@toolgate/store-sqlite";
import { expect, it } from "vitest";
// @ts-expect-error plain ESM module shared with the child process
import { ledgerGate, openLedger } from "./ledger.mjs";

const KILLS = Number(process.env["TOOLGATE_CRASH_KILLS"] ?? 200);
const child = fileURLToPath(new URL("./child.mjs", import.meta.url));

/** Start a worker, let it run a random few milliseconds past start-up, then SIGKILL it. */
function runAndKill(args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, [child, ...args], { stdio: ["ignore", "pipe", "pipe"] });
    let stderr = "";
    proc.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    proc.stdout.once("data", () => setTimeout(() => proc.kill("SIGKILL"), Math.floor(Math.random() * 40)));
    proc.on("exit", (code, signal) => (signal === "SIGKILL" ? resolve() : reject(new Error(`worker exited ${code}: ${stderr}`))));
  });
}

it(`survives ${KILLS} SIGKILLs: intents before effects, no idempotent effect twice, nothing non-idempotent replayed`, async () => {
  const dir = mkdtempSync(join(tmpdir(), "toolgate-crash-"));
  const journalPath = join(dir, "journal.db");
  const ledgerPath = join(dir, "ledger.db");
  const key = randomBytes(32);
  const counts = {
    kills: 0,
    replays: 0,
    unknowns: 0,
    beforeIntent: 0,
    betweenIntentAndEffect: 0,
    betweenEffectAndResult: 0,
    duplicates: 0,
    effectWithoutIntent: 0,
  };

  // The kills must land inside calls, or the test proves nothing: past KILLS it goes on (up to three
  // times as many) until a kill has left a replay and a non-idempotent call for an operator, since on
  // a loaded machine the random points can all fall elsewhere.
  const covered = () => counts.replays > 0 && counts.unknowns > 0 && counts.betweenIntentAndEffect + counts.betweenEffectAndResult > 0;
  for (let run = 0; run < KILLS || (!covered() && run < KILLS * 3); run++) {
    await runAndKill([journalPath, ledgerPath, String(run), key.toString("hex")]);
    counts.kills++;

    // After the crash: a new process (here, this one) opens the same files and recovers.
    const journal = await openSqliteJournal(journalPath, { auditKey: key, synchronous: "full" });
    const db = openLedger(ledgerPath);
    try {
      const pendingBefore = await journal.listOutbox({ states: ["pending"] });
      const applied = db.prepare("SELECT tool, key FROM applied").all() as { tool: string; key: string }[];
      // Where did the kill land? (the last call of this run)
      const lastPending = pendingBefore.at(-1);
      if (!lastPending) counts.beforeIntent++;
      else if (applied.some((a) => a.key === lastPending.key)) counts.betweenEffectAndResult++;
      else counts.betweenIntentAndEffect++;

      // Every applied effect has its intent in the journal.
      for (const a of applied) if (!(await journal.getIntent(a.key))) counts.effectWithoutIntent++;

      const report = await recoverOutbox(ledgerGate(journal, db), { olderThanMs: 0, claimant: `recovery-${run}` });
      counts.replays += report.replayed;
      counts.unknowns += report.unknown;
      expect(report.failed).toBe(0);

      const verdict = verifyAuditChain(await journal.readAudit(), { key, expectedHead: await journal.head() });
      expect(verdict.ok, verdict.ok ? "" : verdict.reason).toBe(true);
      expect(await journal.listOutbox({ states: ["pending"] })).toEqual([]);
    } finally {
      await journal.close();
      db.close();
    }
  }

  const db = openLedger(ledgerPath);
  const appliedTwice = db.prepare("SELECT tool, key, COUNT(*) AS n FROM applied GROUP BY tool, key HAVING n > 1").all();
  const chargeAttemptedTwice = db.prepare("SELECT key, COUNT(*) AS n FROM attempts WHERE tool = 'charge' GROUP BY key HAVING n > 1").all();
  const upsertReplayed = db.prepare("SELECT COUNT(*) AS n FROM (SELECT key FROM attempts WHERE tool = 'upsert' GROUP BY key HAVING COUNT(*) > 1)").get() as {
    n: number;
  };
  db.close();
  counts.duplicates = appliedTwice.length + chargeAttemptedTwice.length;
  console.log(
    `crash test: ${counts.kills} kills (${counts.beforeIntent} before an intent, ${counts.betweenIntentAndEffect} between intent and effect, ` +
      `${counts.betweenEffectAndResult} between effect and result); ${counts.replays} replays (${upsertReplayed.n} idempotent keys run again with the same key), ` +
      `${counts.unknowns} left unknown for an operator, ${counts.duplicates} duplicates, ${counts.effectWithoutIntent} effects without an intent`,
  );
  expect(counts.effectWithoutIntent).toBe(0);
  expect(counts.duplicates).toBe(0);
  expect(counts.betweenIntentAndEffect + counts.betweenEffectAndResult).toBeGreaterThan(0);
  expect(counts.replays).toBeGreaterThan(0);
  expect(counts.unknowns).toBeGreaterThan(0);
}, 600_000);
