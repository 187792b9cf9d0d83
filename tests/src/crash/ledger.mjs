// The world the crash test runs in: a provider ("ledger") whose effects are durable rows in their own
// SQLite file, and two tools over it — one idempotent (the provider deduplicates by key), one not.
import Database from "better-sqlite3";
import { z } from "zod";
import { createGate, createToolRegistry, defineFamily, defineProfile, defineTool } from "@toolgate/core";

export const PROFILE = defineProfile({ name: "ledger", allow: ["ledger:write"], maxRisk: "medium" });
export const CALL = { principal: "crash-agent", tenant: "crash", profile: PROFILE };

export function openLedger(path) {
  const db = new Database(path);
  db.pragma("journal_mode = WAL");
  db.pragma("synchronous = FULL");
  db.exec(`CREATE TABLE IF NOT EXISTS attempts (id INTEGER PRIMARY KEY, tool TEXT NOT NULL, key TEXT NOT NULL);
           CREATE TABLE IF NOT EXISTS applied (id INTEGER PRIMARY KEY, tool TEXT NOT NULL, key TEXT NOT NULL);`);
  return db;
}

const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

const isolation = { network: "none", filesystem: "none", secrets: "none", subprocess: "none" };
/** What both ledger tools declare (the fleet crash test shares it). */
export const LEDGER_TOOL = {
  output: z.object({ ok: z.boolean() }),
  actionType: "ledger-write",
  effect: "write",
  requiredAllowlist: ["ledger:write"],
  risk: "medium",
  approval: "never",
  retryable: true,
  reversible: false,
  runtimeIsolation: isolation,
  untrustedOutput: false,
};

/** A gate over the ledger. `jitter` widens the windows between intent, effect and result. */
export function ledgerGate(journal, db, jitter = () => 0) {
  const attempt = db.prepare("INSERT INTO attempts (tool, key) VALUES (?, ?)");
  const applyOnce = db.prepare("INSERT INTO applied (tool, key) SELECT ?, ? WHERE NOT EXISTS (SELECT 1 FROM applied WHERE tool = ? AND key = ?)");
  const applyAlways = db.prepare("INSERT INTO applied (tool, key) VALUES (?, ?)");
  const common = { ...LEDGER_TOOL, input: z.object({ n: z.number().int() }) };
  const upsert = defineTool({
    ...common,
    id: "ledger.upsert_entry",
    title: "Upsert an entry",
    description: "Write an entry; the ledger deduplicates by idempotency key.",
    idempotent: true,
    handler: async (_input, ctx) => {
      attempt.run("upsert", ctx.idempotencyKey);
      await pause(jitter());
      applyOnce.run("upsert", ctx.idempotencyKey, "upsert", ctx.idempotencyKey);
      await pause(jitter());
      return { ok: true };
    },
  });
  const charge = defineTool({
    ...common,
    id: "ledger.charge_card",
    title: "Charge",
    description: "Charge a card. Not idempotent: the ledger applies every call.",
    idempotent: false,
    handler: async (_input, ctx) => {
      attempt.run("charge", ctx.idempotencyKey);
      await pause(jitter());
      applyAlways.run("charge", ctx.idempotencyKey);
      await pause(jitter());
      return { ok: true };
    },
  });
  const registry = createToolRegistry({ families: [defineFamily({ name: "ledger", tools: [upsert, charge], permissions: ["ledger:write"] })] });
  return createGate({ registry, journal });
}
