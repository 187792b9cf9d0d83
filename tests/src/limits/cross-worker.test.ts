// The budget holds across workers: two worker processes share one journal (a SQLite file, or one
// PostgreSQL schema), each runs its own gate over the real gmail family against the Google
// emulator on 127.0.0.1, and each sends with 8 calls in flight until it is refused. Exactly the
// budget is delivered, every later call on either worker is refused `rate_limited` before a human
// is asked, and the journal counted each send once.
import { randomBytes } from "node:crypto";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AuditRecord, Journal } from "@toolgate/core";
import { verifyAuditChain } from "@toolgate/core/operator";
import { startGoogleEmulator } from "@toolgate/emulators";
import { connectPostgresJournal } from "@toolgate/store-postgres";
import { openSqliteJournal } from "@toolgate/store-sqlite";
import { describe, expect, it } from "vitest";
import { grantAsOwner } from "@toolgate/core/testing";
import { AGENT, DAY_MS, MAIL_SCOPES, mailGate, OWNER, SEND_BUDGET, SEND_LIMIT_ID, sendInput } from "./fixtures/mail-gate.js";
import { expectLimitMessage } from "./fixtures/expect-limit.js";
import { pgSkipReason, pgUrl, startWorker } from "./fixtures/workers.js";
import type { Outcome, WorkerOrders, WorkerReport } from "./worker.js";

const IN_FLIGHT = 8;
const AFTER = 5;

interface Store {
  readonly orders: WorkerOrders["journal"];
  open(auditKey: Buffer): Promise<Journal>;
}

/** A refusal as the contract has it: denied `rate_limited`, with a wait within one window (plus the one bucket it may refuse early). */
function expectRateLimited(o: Outcome): void {
  expect(o, JSON.stringify(o)).toMatchObject({ status: "denied", code: "rate_limited" });
  expect(o.retryAfterMs).toBeGreaterThan(0);
  expect(o.retryAfterMs).toBeLessThanOrEqual(DAY_MS + Math.ceil(DAY_MS / 60));
  expect(o.details).toMatchObject({ limit: SEND_LIMIT_ID, per: "principal", max: SEND_BUDGET, windowMs: DAY_MS, retryAfterMs: o.retryAfterMs });
  expectLimitMessage(o.message, o.retryAfterMs);
}

async function twoWorkersOn(store: Store): Promise<{ reports: WorkerReport[]; audit: readonly AuditRecord[] }> {
  const emulator = await startGoogleEmulator({ gmail: { address: OWNER } });
  const auditKey = randomBytes(32);
  try {
    const google = () => ({
      rootUrl: emulator.url,
      tokenUrl: emulator.tokenUrl,
      ...emulator.client,
      code: emulator.authorize({ scopes: MAIL_SCOPES }).code,
    });
    const workers = ["w1", "w2"].map((name) =>
      startWorker({ name, journal: store.orders, auditKeyHex: auditKey.toString("hex"), google: google(), inFlight: IN_FLIGHT, after: AFTER, cap: 200 }),
    );
    await Promise.all(workers.map((w) => w.ready));
    for (const w of workers) w.go();
    await Promise.all(workers.map((w) => w.looped));
    for (const w of workers) w.late();
    const reports = await Promise.all(workers.map((w) => w.report));

    // Exactly the budget went out, and exactly the sends the workers were told succeeded.
    const oks = reports.flatMap((r) => r.outcomes.filter((o) => o.status === "ok").map((o) => sendInput(r.name, o.n)));
    expect(oks).toHaveLength(SEND_BUDGET);
    expect(emulator.gmail.sent.map((m) => m.subject).sort()).toEqual(oks.map((i) => i.subject).sort());

    // A third worker (this process) on the same journal, once the budget is spent: a retry of a
    // delivered send replays it (nothing sent, nothing charged, not refused), and another
    // principal's budget is its own.
    const journal = await store.open(auditKey);
    const gate = await mailGate(journal, google());
    expect(await gate.invoke("gmail.send_message", oks[0]!, AGENT)).toMatchObject({ status: "ok", replayed: true });
    const other = { ...AGENT, principal: "agent-8" };
    const asked = await gate.invoke("gmail.send_message", sendInput("other", 0), other);
    expect(asked.status).toBe("approval_required");
    const grant = await grantAsOwner(gate, asked.status === "approval_required" ? asked.requestId : "");
    expect(await gate.invoke("gmail.send_message", sendInput("other", 0), { ...other, approval: grant })).toMatchObject({ status: "ok", replayed: false });
    expect(emulator.gmail.sent).toHaveLength(SEND_BUDGET + 1);

    const audit = await journal.readAudit();
    expect(verifyAuditChain(audit, { key: auditKey, expectedHead: await journal.head() }).ok).toBe(true);
    const charged = audit.filter((e) => e.type === "limit.charged");
    expect(charged.filter((e) => e.principal === "agent-8").map((e) => e.data["count"])).toEqual([1]);
    await journal.close();

    // Secrets stay out of what the workers printed and of the journal.
    const { clientSecret } = emulator.client;
    for (const w of workers) expect(w.output()).not.toContain(clientSecret);
    expect(JSON.stringify(audit)).not.toContain(clientSecret);
    return { reports, audit };
  } finally {
    await emulator.close();
  }
}

function expectBudgetHeld(reports: readonly WorkerReport[], audit: readonly AuditRecord[]): void {
  const outcomes = reports.flatMap((r) => r.outcomes);
  const refusals = outcomes.filter((o) => o.status !== "ok");
  for (const r of reports) {
    // Each worker really had 8 in flight, was refused, and every call after that was refused too,
    // when asked: no approval request for a call over the budget.
    expect(r.maxInFlight).toBeGreaterThanOrEqual(IN_FLIGHT);
    const firstRefused = r.outcomes.findIndex((o) => o.status !== "ok");
    expect(firstRefused).toBeGreaterThanOrEqual(0);
    const late = r.outcomes.filter((o) => o.late);
    expect(late).toHaveLength(AFTER);
    for (const o of late) expect(o.phase).toBe("ask");
  }
  for (const o of refusals) expectRateLimited(o);

  // Each refusal is journaled as a refusal, and nothing else was refused.
  const refused = audit.filter((e) => e.type === "call.refused");
  expect(refused).toHaveLength(refusals.length);
  for (const e of refused) expect(e.data).toMatchObject({ code: "rate_limited", profile: "mailer", boundary: "pre_effect_refusal" });

  // One charge per send, counted 1..20 on one record: no count was taken twice, none lost.
  const charged = audit.filter((e) => e.type === "limit.charged" && e.principal === AGENT.principal);
  expect(charged).toHaveLength(SEND_BUDGET);
  expect(charged.map((e) => e.data["count"]).sort((a, b) => Number(a) - Number(b))).toEqual(Array.from({ length: SEND_BUDGET }, (_, i) => i + 1));
  expect(new Set(charged.map((e) => e.subject)).size).toBe(1);
  for (const e of charged) {
    expect(e.subject).toMatch(/^limit:[0-9a-f]{64}$/);
    expect(e).toMatchObject({ toolId: "gmail.send_message", principal: "agent-7", tenant: "acme" });
    expect(e.data).toMatchObject({ profile: "mailer", limit: SEND_LIMIT_ID, per: "principal", max: SEND_BUDGET, windowMs: DAY_MS });
  }
  // A human was asked only for calls that were under the budget when asked.
  const agents = audit.filter((e) => e.principal === AGENT.principal);
  expect(agents.filter((e) => e.type === "approval.requested")).toHaveLength(outcomes.filter((o) => o.phase === "granted").length);
  expect(agents.filter((e) => e.type === "approval.consumed")).toHaveLength(SEND_BUDGET);

  const raced = refusals.filter((o) => o.phase === "granted").length;
  console.log(
    `limits across workers: ${reports.map((r) => `${r.name} sent ${r.outcomes.filter((o) => o.status === "ok").length}, refused ${r.outcomes.filter((o) => o.status !== "ok").length}, ${r.maxInFlight} in flight`).join("; ")}; ` +
      `${raced} refused after a human granted them (at the step's first look or by the journal's count in the write)`,
  );
}

describe("a send budget shared by two worker processes", { timeout: 180_000 }, () => {
  it("on one SQLite file: exactly 20 delivered, every later call refused rate_limited on both workers, 20 charges journaled", async () => {
    const path = join(mkdtempSync(join(tmpdir(), "toolgate-limits-")), "journal.db");
    const { reports, audit } = await twoWorkersOn({ orders: { sqlite: path }, open: (auditKey) => openSqliteJournal(path, { auditKey }) });
    expectBudgetHeld(reports, audit);
  });

  it.skipIf(pgSkipReason !== undefined)(
    `on one PostgreSQL schema: exactly 20 delivered, every later call refused rate_limited on both workers, 20 charges journaled${pgSkipReason ? ` (skipped: ${pgSkipReason})` : ""}`,
    async () => {
      const schema = `limits_${randomBytes(6).toString("hex")}`;
      const { reports, audit } = await twoWorkersOn({
        orders: { postgres: pgUrl, schema },
        open: (auditKey) => connectPostgresJournal(pgUrl, { auditKey, schema }),
      });
      expectBudgetHeld(reports, audit);
    },
  );
});
