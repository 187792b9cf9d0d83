// One worker of the fleet crash test: side-effectful calls on the shared PostgreSQL journal, several
// in flight, and a recovery loop beside them that claims what other (killed) workers left, until
// the killer SIGKILLs it. Prints "ready", then one JSON line per recovery pass that claimed anything.
import { recoverOutbox } from "@toolgate/core/operator";
import { connectPostgresJournal } from "@toolgate/store-postgres";
import { CALL, CHARGE, UPSERT, ledgerGate, openLedger } from "./ledger.mjs";

const [url, schema, ledgerPath, worker, olderThanMs, leaseMs] = process.argv.slice(2);
// The audit key comes through the environment, never the command line (which any local user can list).
const keyHex = process.env["TOOLGATE_FLEET_AUDIT_KEY"] ?? "";
const IN_FLIGHT = 4;
const journal = await connectPostgresJournal(url, { auditKey: Buffer.from(keyHex, "hex"), schema, poolSize: 4 });
const db = openLedger(ledgerPath);
const gate = ledgerGate(journal, db, { jitter: () => Math.floor(Math.random() * 4), dropRate: 0.05 });
const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
process.stdout.write("ready\n");

const recovery = async () => {
  for (;;) {
    const report = await recoverOutbox(gate, { olderThanMs: Number(olderThanMs), leaseMs: Number(leaseMs), claimant: worker, batchSize: 8 });
    if (report.claimed > 0) {
      const { claimed, replayed, unknown, failed, tampered } = report;
      process.stdout.write(`${JSON.stringify({ claimed, replayed, unknown, failed, tampered })}\n`);
    }
    await pause(20 + Math.floor(Math.random() * 60));
  }
};
let n = 0;
const calls = async () => {
  for (;;) {
    const i = n++;
    const call = `${worker}-${i}`;
    await gate.invoke(i % 2 === 0 ? UPSERT : CHARGE, { call }, { ...CALL, idempotencyKey: call });
  }
};
await Promise.all([recovery(), ...Array.from({ length: IN_FLIGHT }, calls)]);
