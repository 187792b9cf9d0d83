// Four worker processes on one PostgreSQL journal, a killer that SIGKILLs them at random points and
// restarts them, and recovery loops in every worker racing the live calls the whole time. Nothing
// may be lost or duplicated: every effect has its intent, no call's effect is applied twice, the
// chain verifies, no claim outlives its dead holder's lease, and a last recovery pass leaves
// nothing pending (an idempotent call whose connection dropped is retried with its key).
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Journal } from "@toolgate/core";
import { recoverOutbox, verifyAuditChain, verifyJournalRows } from "@toolgate/core/operator";
import { connectPostgresJournal } from "@toolgate/store-postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
// @ts-expect-error plain ESM module shared with the worker processes
import { UPSERT, ledgerGate, openLedger } from "./ledger.mjs";
import { postgresServer, postgresSkipReason, type PostgresServer } from "./server.js";

const KILLS = Number(process.env["TOOLGATE_PG_CRASH_KILLS"] ?? 80);
const WORKERS = 4;
/** Recovery takes entries untouched this long, and holds a claim this long. */
const OLDER_THAN_MS = 1_000;
const LEASE_MS = 2_000;
/** A worker is SIGKILLed at a random time up to this long after it is ready. */
const LIFE_MS = 1_500;
/** The chain is verified (the slice written since the last check) every this many kills. */
const VERIFY_EVERY = 25;
const workerScript = fileURLToPath(new URL("./worker.mjs", import.meta.url));
const built = ["core", "store-postgres"].map((p) => fileURLToPath(new URL(`../../../packages/${p}/dist/index.js`, import.meta.url)));
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Totals {
  claimed: number;
  replayed: number;
  unknown: number;
  failed: number;
  tampered: number;
}

interface Worker {
  readonly proc: ChildProcess;
  /** When the killer takes it: set once it is ready. */
  dieAt: number | undefined;
  readonly exited: Promise<void>;
}

describe.skipIf(postgresSkipReason !== undefined)("fleet crash test (postgres)", () => {
  let server: PostgresServer;
  beforeAll(() => void (server = postgresServer()), 150_000);
  afterAll(() => server?.stop(), 150_000);

  it(`survives ${KILLS} SIGKILLs of ${WORKERS} workers sharing a journal: no duplicate, no effect without an intent, nothing left pending`, async () => {
    for (const file of built) expect(existsSync(file), `build the packages first: the workers import ${file}`).toBe(true);
    const dir = mkdtempSync(join(tmpdir(), "toolgate-fleet-crash-"));
    const ledgerPath = join(dir, "ledger.db");
    const key = randomBytes(32);
    const schema = `fleet_crash_${randomBytes(4).toString("hex")}`;
    const journal: Journal = await connectPostgresJournal(server.url, { auditKey: key, schema, poolSize: 4 });
    const db = openLedger(ledgerPath);
    const totals: Totals = { claimed: 0, replayed: 0, unknown: 0, failed: 0, tampered: 0 };
    const problems: string[] = [];
    let verified = { seq: 0, mac: (await journal.head()).mac };
    let chains = 0;
    const started = Date.now();

    const start = (id: string): Worker => {
      const proc = spawn(process.execPath, [workerScript, server.url, schema, ledgerPath, id, String(OLDER_THAN_MS), String(LEASE_MS)], {
        stdio: ["ignore", "pipe", "pipe"],
        env: { ...process.env, TOOLGATE_FLEET_AUDIT_KEY: key.toString("hex") },
      });
      let out = "";
      let err = "";
      const worker: Worker = {
        proc,
        dieAt: undefined,
        exited: new Promise((resolve) =>
          proc.on("exit", (code, signal) => {
            if (signal !== "SIGKILL") problems.push(`worker ${id} exited by itself (${code ?? signal}): ${err}`);
            resolve();
          }),
        ),
      };
      proc.stderr!.on("data", (d: Buffer) => (err += d.toString()));
      proc.stdout!.on("data", (d: Buffer) => {
        out += d.toString();
        const lines = out.split("\n");
        out = lines.pop()!;
        for (const line of lines) {
          // Killed at a random point of its life, somewhere inside its calls and claims.
          if (line === "ready") worker.dieAt = Date.now() + Math.floor(Math.random() * LIFE_MS);
          else {
            const pass = JSON.parse(line) as Totals;
            for (const k of Object.keys(totals) as (keyof Totals)[]) totals[k] += pass[k];
          }
        }
      });
      return worker;
    };

    // Verify what was appended since the last check: a prefix of the chain, read while workers write.
    const verifySlice = async (): Promise<void> => {
      const slice = await journal.readAudit({ afterSeq: verified.seq });
      if (slice.length === 0) return;
      const verdict = verifyAuditChain(slice, { key, after: verified });
      expect(verdict.ok, verdict.ok ? "" : verdict.reason).toBe(true);
      verified = { seq: slice.at(-1)!.seq, mac: slice.at(-1)!.mac };
      chains++;
    };

    const fleet = Array.from({ length: WORKERS }, (_, i) => start(`w${i}.0`));
    let kills = 0;
    try {
      while (kills < KILLS && problems.length === 0) {
        await pause(5);
        const slot = fleet.findIndex((w) => w.dieAt !== undefined && Date.now() >= w.dieAt);
        if (slot < 0) continue;
        const victim = fleet[slot]!;
        victim.proc.kill("SIGKILL");
        await victim.exited;
        kills++;
        fleet[slot] = start(`w${slot}.${kills}`);
        if (kills % VERIFY_EVERY === 0) await verifySlice();
      }
    } finally {
      for (const w of fleet) w.proc.kill("SIGKILL");
      await Promise.all(fleet.map((w) => w.exited));
    }
    expect(problems).toEqual([]);

    try {
      // Every worker is dead. Once the longest lease has run out, no claim may still hold an entry.
      await pause(LEASE_MS + OLDER_THAN_MS + 500);
      const now = Date.now();
      const held = (await journal.listOutbox({ states: ["pending", "unknown"] })).filter((e) => Date.parse(e.updatedAt) > now);
      expect(held.map((e) => e.key)).toEqual([]);

      // The last pass: a new process (here, this one) recovers until nothing more is claimed.
      const gate = ledgerGate(journal, db);
      for (let pass = 0; pass < 8; pass++) {
        const report = await recoverOutbox(gate, { olderThanMs: 0, leaseMs: LEASE_MS, claimant: `final-${pass}` });
        for (const k of Object.keys(totals) as (keyof Totals)[]) totals[k] += report[k];
        if (report.claimed === 0) break;
        await pause(5);
      }

      const entries = await journal.listOutbox();
      const pending = entries.filter((e) => e.state === "pending");
      const unknown = entries.filter((e) => e.state === "unknown");
      const gaveUp = unknown.filter((e) => e.toolId === UPSERT);
      const keys = new Set(entries.map((e) => e.key));
      const applied = db.prepare("SELECT tool, key, call FROM applied").all() as { tool: string; key: string; call: string }[];
      const appliedTwice = db.prepare("SELECT call FROM applied GROUP BY call HAVING COUNT(*) > 1").all();
      const chargedTwice = db.prepare("SELECT call FROM attempts WHERE tool = 'charge' GROUP BY call HAVING COUNT(*) > 1").all();
      const duplicates = appliedTwice.length + chargedTwice.length;
      const withoutIntent = applied.filter((a) => !keys.has(a.key)).length;
      const head = await journal.head();
      const whole = verifyAuditChain(await journal.readAudit(), { key, expectedHead: head });
      expect(whole.ok, whole.ok ? "" : whole.reason).toBe(true);
      chains++;
      const rows = await verifyJournalRows(journal);
      expect(rows.problems).toEqual([]);
      // Unknown idempotent calls (a dropped connection) were claimed and retried with their key.
      const retriedUnknown = (await journal.readAudit()).filter((e) => e.type === "outbox.claimed" && e.data["state"] === "unknown").length;

      const seconds = Math.round((Date.now() - started) / 1000);
      console.log(
        `crash test (postgres): ${kills} kills, ${totals.replayed} replays, ${unknown.length} left unknown, ${duplicates} duplicates, ` +
          `${withoutIntent} effects without an intent, ${chains} chains verified`,
      );
      console.log(
        `  ${entries.length} calls journaled, ${applied.length} effects applied, ${retriedUnknown} unknown idempotent calls retried by recovery, ${gaveUp.length} given up after four attempts, ` +
          `${totals.claimed} claims; ${seconds} s`,
      );
      expect(duplicates).toBe(0);
      expect(withoutIntent).toBe(0);
      expect(pending.map((e) => e.key)).toEqual([]);
      // An idempotent call is left for an operator only once recovery gave up on it: four attempts in
      // all, claims by workers killed before they replayed it included (a crash storm can use them up).
      expect(gaveUp.filter((e) => e.attempts < 4).map((e) => [e.key, e.attempts])).toEqual([]);
      expect(totals.failed + totals.tampered).toBe(0);
      // The kills really landed inside calls, or the test proves nothing.
      expect(totals.replayed).toBeGreaterThan(0);
      expect(unknown.length).toBeGreaterThan(0);
      expect(retriedUnknown).toBeGreaterThan(0);
    } finally {
      await journal.close();
      db.close();
    }
  }, 1_800_000);
});
