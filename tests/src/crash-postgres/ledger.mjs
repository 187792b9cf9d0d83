// The fleet crash test's world: a provider ("ledger") whose effects are rows in one SQLite file every
// worker process shares, and two tools over it. `ledger.upsert_entry` is idempotent: the provider
// applies a key once, and now and then drops the connection just after applying one, so the call
// ends `effect_state_unknown` and recovery must retry it with its key. `ledger.charge_card` is not:
// the provider applies every call. Every attempt and every applied effect is recorded with the
// journal's key and the call it belongs to, so duplicates and effects without an intent are countable.
import Database from "better-sqlite3";
import { z } from "zod";
import { createGate, createToolRegistry, defineFamily, defineProfile, defineTool } from "@toolgate/core";
import { LEDGER_TOOL } from "../crash/ledger.mjs";

export const PROFILE = defineProfile({ name: "fleet", allow: ["ledger:write"], maxRisk: "medium" });
export const CALL = { principal: "fleet-agent", tenant: "fleet", profile: PROFILE };
export const UPSERT = "ledger.upsert_entry";
export const CHARGE = "ledger.charge_card";

/** The ledger file, shared by every process (WAL; a writer waits for another's lock). */
export function openLedger(path) {
  const db = new Database(path, { timeout: 60_000 });
  db.pragma("journal_mode = WAL");
  // A SIGKILLed process loses nothing WAL has written (NORMAL only risks the last commits on a power loss).
  db.pragma("synchronous = NORMAL");
  db.exec(`CREATE TABLE IF NOT EXISTS attempts (id INTEGER PRIMARY KEY, tool TEXT NOT NULL, key TEXT NOT NULL, call TEXT NOT NULL);
           CREATE TABLE IF NOT EXISTS applied (id INTEGER PRIMARY KEY, tool TEXT NOT NULL, key TEXT NOT NULL, call TEXT NOT NULL);
           CREATE TABLE IF NOT EXISTS upsert_keys (key TEXT PRIMARY KEY);`);
  return db;
}

const pause = (ms) => (ms > 0 ? new Promise((resolve) => setTimeout(resolve, ms)) : Promise.resolve());

/**
 * A gate over the ledger on `journal`. `jitter` widens the windows between intent, effect and
 * result; `dropRate` is the chance that a key's first application loses its connection afterwards.
 */
export function ledgerGate(journal, db, { jitter = () => 0, dropRate = 0 } = {}) {
  const attempt = db.prepare("INSERT INTO attempts (tool, key, call) VALUES (?, ?, ?)");
  const apply = db.prepare("INSERT INTO applied (tool, key, call) VALUES (?, ?, ?)");
  const claimKey = db.prepare("INSERT OR IGNORE INTO upsert_keys (key) VALUES (?)");
  // The provider's deduplication: the key and its effect in one transaction.
  const applyOnce = db.transaction((key, call) => claimKey.run(key).changes === 1 && apply.run("upsert", key, call).changes === 1).immediate;
  const common = { ...LEDGER_TOOL, input: z.object({ call: z.string() }), timeoutMs: 30_000 };
  const tool = (id, idempotent, description, body) =>
    defineTool({ ...common, id, title: id, description, idempotent, handler: (input, ctx) => body(ctx.idempotencyKey, input.call) });
  const upsert = tool(UPSERT, true, "Write an entry; the ledger deduplicates by idempotency key.", async (key, call) => {
    attempt.run("upsert", key, call);
    await pause(jitter());
    const fresh = applyOnce(key, call);
    await pause(jitter());
    if (fresh && Math.random() < dropRate) throw new Error("the ledger's connection dropped after it applied the entry");
    return { ok: true };
  });
  const charge = tool(CHARGE, false, "Charge a card. Not idempotent: the ledger applies every call.", async (key, call) => {
    attempt.run("charge", key, call);
    await pause(jitter());
    apply.run("charge", key, call);
    await pause(jitter());
    return { ok: true };
  });
  const registry = createToolRegistry({ families: [defineFamily({ name: "ledger", tools: [upsert, charge], permissions: ["ledger:write"] })] });
  return createGate({ registry, journal });
}
