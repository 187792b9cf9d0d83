// A worker the crash test kills with SIGKILL at random points: it makes side-effectful calls
// against a real SQLite journal file until it dies.
import { openSqliteJournal } from "@toolgate/store-sqlite";
import { CALL, ledgerGate, openLedger } from "./ledger.mjs";

const [journalPath, ledgerPath, run, keyHex] = process.argv.slice(2);
const journal = await openSqliteJournal(journalPath, { auditKey: Buffer.from(keyHex, "hex"), synchronous: "full" });
const db = openLedger(ledgerPath);
const gate = ledgerGate(journal, db, () => Math.floor(Math.random() * 4));
process.stdout.write("ready\n");
for (let i = 0; ; i++) {
  const tool = i % 2 === 0 ? "ledger.upsert_entry" : "ledger.charge_card";
  await gate.invoke(tool, { n: i }, { ...CALL, idempotencyKey: `run${run}-call${i}` });
}
