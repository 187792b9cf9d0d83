import { describe, expect, it } from "vitest";
import { z } from "zod";
import { defineFamily } from "./family.js";
import { createGate } from "./gate/gate.js";
import { verifyAuditChain } from "./journal/audit-chain.js";
import { createMemoryJournal } from "./journal/memory.js";
import { defineTool } from "./manifest.js";
import { defineProfile } from "./profile.js";
import { recoverOutbox, resolveOutboxEntry } from "./recovery.js";
import { createToolRegistry } from "./registry.js";
import type { Journal } from "./journal/types.js";

/** How a later release registers the upsert tool (another gate over the same journal). */
type UpsertChange = { readonly id?: string; readonly idempotent?: boolean; readonly effect?: "read" | "destructive"; readonly input?: z.ZodType };

/**
 * A provider that honours idempotency keys, and tools whose first call "crashes": it never returns,
 * as if the process died after recording the intent.
 */
function world(opts: { journal?: Journal; upsert?: UpsertChange } = {}) {
  const effects: { key: string; kind: string }[] = [];
  const seenKeys = new Set<string>();
  let hang = true;
  // A dropped connection: the provider applied the effect, the caller never heard back.
  let drop = 0;
  const apply = (key: string, kind: string) => {
    if (kind === "charge" || !seenKeys.has(key)) effects.push({ key, kind });
    seenKeys.add(key);
  };
  const body = (kind: string) => (_input: unknown, ctx: { idempotencyKey: string }) => {
    if (hang) return new Promise<never>(() => undefined);
    apply(ctx.idempotencyKey, kind);
    if (drop > 0 && drop--) throw new Error("connection reset by peer");
    return { ok: true };
  };
  const isolation = { network: "none", filesystem: "none", secrets: "none", subprocess: "none" } as const;
  const common = {
    input: z.object({ n: z.number() }),
    output: z.object({ ok: z.boolean() }),
    actionType: "ledger-write",
    risk: "low",
    approval: "never",
    retryable: true,
    reversible: false,
    timeoutMs: 3_600_000,
    runtimeIsolation: isolation,
    untrustedOutput: false,
  } as const;
  const upsert = defineTool({
    ...common,
    id: "ledger.upsert_entry",
    title: "Upsert",
    description: "Idempotent write.",
    effect: "write",
    requiredAllowlist: ["ledger:write"],
    idempotent: true,
    handler: body("upsert"),
    ...(opts.upsert as object),
  });
  const charge = defineTool({
    ...common,
    id: "ledger.charge_card",
    title: "Charge",
    description: "Not idempotent. Cannot be undone.",
    effect: "write",
    requiredAllowlist: ["ledger:write"],
    idempotent: false,
    handler: body("charge"),
  });
  const balance = defineTool({
    ...common,
    id: "ledger.read_balance",
    title: "Balance",
    description: "Read.",
    effect: "read",
    requiredAllowlist: ["ledger:read"],
    idempotent: true,
    handler: body("read"),
  });
  const registry = createToolRegistry({
    families: [defineFamily({ name: "ledger", tools: [upsert, charge, balance], permissions: ["ledger:write", "ledger:read"] })],
  });
  const journal = opts.journal ?? createMemoryJournal({ auditKey: "recovery-key" });
  const gate = createGate({ registry, journal });
  const call = { principal: "agent", tenant: "t", profile: defineProfile({ name: "all", allow: ["ledger:write", "ledger:read"], maxRisk: "low" }) };
  return { gate, journal, call, effects, crashNext: (v: boolean) => (hang = v), dropNext: (n: number) => (drop = n) };
}

describe("recoverOutbox", () => {
  it("replays an idempotent intent with the same key, marks a non-idempotent one unknown, fails a read", async () => {
    const w = world();
    void w.gate.invoke("ledger.upsert_entry", { n: 1 }, { ...w.call, idempotencyKey: "u1" });
    void w.gate.invoke("ledger.charge_card", { n: 2 }, { ...w.call, idempotencyKey: "c1" });
    void w.gate.invoke("ledger.read_balance", { n: 3 }, w.call);
    await new Promise((r) => setTimeout(r, 10));
    expect((await w.journal.listOutbox({ states: ["pending"] })).length).toBe(3);
    w.crashNext(false);

    const seen: number[] = [];
    const report = await recoverOutbox(w.gate, { olderThanMs: 0, onEntry: (_e, done) => seen.push(done) });
    expect(report).toMatchObject({ claimed: 3, replayed: 1, unknown: 1, failed: 1 });
    expect(seen).toEqual([1, 2, 3]);
    const upsertKey = report.entries.find((e) => e.toolId === "ledger.upsert_entry")!.key;
    expect(w.effects).toEqual([{ key: upsertKey, kind: "upsert" }]);
    // After recovery, the caller's retry replays the recorded result instead of applying again.
    const retry = await w.gate.invoke("ledger.upsert_entry", { n: 1 }, { ...w.call, idempotencyKey: "u1" });
    expect(retry).toMatchObject({ status: "ok", replayed: true });
    const charge = await w.gate.invoke("ledger.charge_card", { n: 2 }, { ...w.call, idempotencyKey: "c1" });
    expect(charge).toMatchObject({ status: "denied", code: "effect_state_unknown" });
    expect(w.effects.filter((e) => e.kind === "charge")).toEqual([]);
    expect(verifyAuditChain(await w.journal.readAudit(), { key: "recovery-key" }).ok).toBe(true);
  });

  it("does not replay an intent of a tool an operator disabled (kill switch)", async () => {
    const w = world();
    void w.gate.invoke("ledger.upsert_entry", { n: 1 }, { ...w.call, idempotencyKey: "u1" });
    await new Promise((r) => setTimeout(r, 10));
    w.crashNext(false);
    await w.gate.authority.switches.disable("family:ledger", "incident", w.gate.authority.owner());
    const report = await recoverOutbox(w.gate, { olderThanMs: 0 });
    expect(report.entries).toMatchObject([{ toolId: "ledger.upsert_entry", action: "failed", detail: "tool_disabled" }]);
    expect(w.effects).toEqual([]);
    expect(await w.journal.listOutbox({ states: ["completed"] })).toEqual([]);
  });

  it("leaves entries younger than the cutoff alone (they may still be running)", async () => {
    const w = world();
    void w.gate.invoke("ledger.upsert_entry", { n: 1 }, w.call);
    await new Promise((r) => setTimeout(r, 5));
    expect(await recoverOutbox(w.gate, { olderThanMs: 60_000 })).toMatchObject({ claimed: 0 });
  });

  it("two recovery workers never replay the same intent", async () => {
    const w = world();
    for (let n = 0; n < 10; n++) void w.gate.invoke("ledger.upsert_entry", { n }, w.call);
    await new Promise((r) => setTimeout(r, 10));
    w.crashNext(false);
    const [a, b] = await Promise.all([recoverOutbox(w.gate, { olderThanMs: 0, claimant: "a" }), recoverOutbox(w.gate, { olderThanMs: 0, claimant: "b" })]);
    expect(a.replayed + b.replayed).toBe(10);
    expect(new Set(w.effects.map((e) => e.key)).size).toBe(10);
    expect(w.effects).toHaveLength(10);
  });

  it("with a bare journal, replays nothing: idempotent entries are skipped, others resolved", async () => {
    const w = world();
    void w.gate.invoke("ledger.upsert_entry", { n: 1 }, w.call);
    void w.gate.invoke("ledger.charge_card", { n: 2 }, w.call);
    await new Promise((r) => setTimeout(r, 10));
    const report = await recoverOutbox(w.journal, { olderThanMs: 0 });
    expect(report).toMatchObject({ skipped: 1, unknown: 1, replayed: 0 });
    expect(w.effects).toEqual([]);
  });
});

/** A few milliseconds: recovery's cutoff (now, with olderThanMs 0) is then past what was just settled. */
const tick = () => new Promise((resolve) => setTimeout(resolve, 5));

/** The world's one outbox entry. */
async function only(w: ReturnType<typeof world>) {
  const entries = await w.journal.listOutbox();
  expect(entries).toHaveLength(1);
  return entries[0]!;
}

describe("recoverOutbox with unknown entries", () => {
  it("retries an idempotent write that ended unknown with its own key under a lease; the provider applies it once", async () => {
    const w = world();
    w.crashNext(false);
    w.dropNext(1);
    const first = await w.gate.invoke("ledger.upsert_entry", { n: 1 }, { ...w.call, idempotencyKey: "u1" });
    expect(first).toMatchObject({ status: "error", boundary: "effect_state_unknown" });
    expect(await only(w)).toMatchObject({ state: "unknown" });
    await tick();
    const report = await recoverOutbox(w.gate, { olderThanMs: 0, claimant: "r1" });
    expect(report).toMatchObject({ claimed: 1, replayed: 1, unknown: 0 });
    expect(report.entries).toMatchObject([{ toolId: "ledger.upsert_entry", action: "replayed" }]);
    expect(await only(w)).toMatchObject({ state: "completed", attempts: 2 });
    expect(w.effects).toEqual([{ key: (await only(w)).key, kind: "upsert" }]);
    const claimed = (await w.journal.readAudit()).filter((e) => e.type === "outbox.claimed");
    expect(claimed.map((e) => [e.data["key"], e.data["claimant"], e.data["state"]])).toEqual([[(await only(w)).key, "r1", "unknown"]]);
    expect(await w.gate.invoke("ledger.upsert_entry", { n: 1 }, { ...w.call, idempotencyKey: "u1" })).toMatchObject({ status: "ok", replayed: true });
    expect(verifyAuditChain(await w.journal.readAudit(), { key: "recovery-key" }).ok).toBe(true);
  });

  it("leaves a non-idempotent write that ended unknown for an operator: never claimed, never run again", async () => {
    const w = world();
    w.crashNext(false);
    w.dropNext(1);
    expect(await w.gate.invoke("ledger.charge_card", { n: 1 }, { ...w.call, idempotencyKey: "c1" })).toMatchObject({ boundary: "effect_state_unknown" });
    const head = await w.journal.head();
    await tick();
    expect(await recoverOutbox(w.gate, { olderThanMs: 0 })).toMatchObject({ claimed: 0, replayed: 0 });
    expect(await w.journal.head()).toEqual(head);
    expect(await only(w)).toMatchObject({ state: "unknown", attempts: 1 });
    expect(w.effects).toEqual([{ key: (await only(w)).key, kind: "charge" }]);
  });

  it("a caller's retry while recovery holds the entry is told it is in flight, not run beside the replay", async () => {
    const w = world();
    w.crashNext(false);
    w.dropNext(1);
    await w.gate.invoke("ledger.upsert_entry", { n: 1 }, { ...w.call, idempotencyKey: "u1" });
    w.crashNext(true);
    await tick();
    const recovering = recoverOutbox(w.gate, { olderThanMs: 0, signal: AbortSignal.timeout(200) });
    await new Promise((r) => setTimeout(r, 20));
    const retry = await w.gate.invoke("ledger.upsert_entry", { n: 1 }, { ...w.call, idempotencyKey: "u1", signal: AbortSignal.timeout(100) });
    expect(retry).toMatchObject({ status: "denied", code: "idempotency_in_flight" });
    expect(await only(w)).toMatchObject({ state: "pending", boundary: "effect_state_unknown", attempts: 2 });
    void recovering;
  });

  it("retries a write that keeps ending unknown three times, then leaves it for an operator (one run retries it once)", async () => {
    const w = world();
    w.crashNext(false);
    w.dropNext(10);
    await w.gate.invoke("ledger.upsert_entry", { n: 1 }, { ...w.call, idempotencyKey: "u1" });
    const runs = [];
    for (let i = 0; i < 4; i++) runs.push(await tick().then(() => recoverOutbox(w.gate, { olderThanMs: 0 })));
    expect(runs.map((r) => [r.claimed, r.unknown])).toEqual([
      [1, 1],
      [1, 1],
      [1, 1],
      [0, 0],
    ]);
    expect(await only(w)).toMatchObject({ state: "unknown", attempts: 4 });
    expect(w.effects).toEqual([{ key: (await only(w)).key, kind: "upsert" }]);
  });
});

/** An idempotent write whose connection dropped: unknown, one attempt. */
async function unknownUpsert() {
  const w = world();
  w.crashNext(false);
  w.dropNext(1);
  expect(await w.gate.invoke("ledger.upsert_entry", { n: 1 }, { ...w.call, idempotencyKey: "u1" })).toMatchObject({ boundary: "effect_state_unknown" });
  await tick();
  return w;
}

/** A later release's gate over the same journal, its upsert tool registered as `upsert` says. */
function released(journal: Journal, upsert: UpsertChange) {
  const w = world({ journal, upsert });
  w.crashNext(false);
  return w;
}

const states = async (journal: Journal) => (await journal.listOutbox()).map((e) => [e.state, e.attempts]);

describe("recoverOutbox replays only what the tool as registered now allows", () => {
  for (const [name, change] of [
    ["not idempotent", { idempotent: false }],
    ["a read", { effect: "read" }],
    ["a destructive write", { effect: "destructive" }],
  ] as const) {
    it(`does not replay an unknown idempotent write whose tool is registered now as ${name}: settled unknown for an operator`, async () => {
      const w = await unknownUpsert();
      const later = released(w.journal, change);
      const report = await recoverOutbox(later.gate, { olderThanMs: 0 });
      expect(report).toMatchObject({ claimed: 1, replayed: 0, unknown: 1, entries: [{ action: "unknown", detail: "effect_state_unknown" }] });
      expect(later.effects).toEqual([]);
      expect(await states(w.journal)).toEqual([["unknown", 2]]);
    });
  }

  it("does not replay a crashed (pending) idempotent write whose tool is registered now as not idempotent", async () => {
    const w = world();
    void w.gate.invoke("ledger.upsert_entry", { n: 1 }, { ...w.call, idempotencyKey: "u1" });
    await tick();
    const later = released(w.journal, { idempotent: false });
    expect(await recoverOutbox(later.gate, { olderThanMs: 0 })).toMatchObject({ claimed: 1, replayed: 0, unknown: 1 });
    expect(later.effects).toEqual([]);
    expect(await states(w.journal)).toEqual([["unknown", 2]]);
  });

  it("an entry whose input the schema now refuses is settled unknown each run, not left pending, and stops being claimed after four attempts", async () => {
    const w = await unknownUpsert();
    const later = released(w.journal, { input: z.object({ n: z.string() }) });
    const claimed: number[] = [];
    for (let i = 0; i < 6; i++) {
      const report = await recoverOutbox(later.gate, { olderThanMs: 0, leaseMs: 0 });
      claimed.push(report.claimed);
      expect(report.entries.every((e) => e.action === "unknown" && e.detail === "invalid_input")).toBe(true);
      await tick();
    }
    expect(claimed).toEqual([1, 1, 1, 0, 0, 0]);
    expect(await states(w.journal)).toEqual([["unknown", 4]]);
    expect(later.effects).toEqual([]);
  });

  it("a crashed entry whose tool is gone is settled unknown for an operator, not left pending for every later run", async () => {
    const w = world();
    void w.gate.invoke("ledger.upsert_entry", { n: 1 }, { ...w.call, idempotencyKey: "u1" });
    await tick();
    const later = released(w.journal, { id: "ledger.other_entry" });
    expect(await recoverOutbox(later.gate, { olderThanMs: 0, leaseMs: 0 })).toMatchObject({ entries: [{ action: "unknown", detail: "unknown_tool" }] });
    expect(await states(w.journal)).toEqual([["unknown", 2]]);
  });

  it("a run stopped mid-batch leaves the rest of the batch claimed for a later run, not settled as cancelled before their effect", async () => {
    const w = world();
    for (const n of [1, 2]) void w.gate.invoke("ledger.upsert_entry", { n }, { ...w.call, idempotencyKey: `u${n}` });
    await tick();
    w.crashNext(false);
    const stop = new AbortController();
    const report = await recoverOutbox(w.gate, { olderThanMs: 0, leaseMs: 0, signal: stop.signal, onEntry: () => stop.abort() });
    expect(report.entries.map((e) => e.action)).toEqual(["replayed"]);
    expect((await states(w.journal)).sort()).toEqual([
      ["completed", 2],
      ["pending", 2],
    ]);
    await tick();
    expect(await recoverOutbox(w.gate, { olderThanMs: 0 })).toMatchObject({ claimed: 1, replayed: 1 });
    expect(w.effects).toHaveLength(2);
  });

  it("a run without a gate leaves an unknown entry as it is: no attempt used, its state kept, a caller's retry still runs it", async () => {
    const w = await unknownUpsert();
    const head = await w.journal.head();
    for (let i = 0; i < 3; i++) expect(await recoverOutbox(w.journal, { olderThanMs: 0 })).toMatchObject({ claimed: 0 });
    expect(await w.journal.head()).toEqual(head);
    expect(await states(w.journal)).toEqual([["unknown", 1]]);
    expect(await w.gate.invoke("ledger.upsert_entry", { n: 1 }, { ...w.call, idempotencyKey: "u1" })).toMatchObject({ status: "ok", replayed: false });
  });
});

describe("resolveOutboxEntry", () => {
  it("an operator's 'applied' makes a retry replay; 'not_applied' lets it run again; both are journaled", async () => {
    const w = world();
    void w.gate.invoke("ledger.charge_card", { n: 1 }, { ...w.call, idempotencyKey: "a" });
    void w.gate.invoke("ledger.charge_card", { n: 2 }, { ...w.call, idempotencyKey: "b" });
    await new Promise((r) => setTimeout(r, 10));
    w.crashNext(false);
    const report = await recoverOutbox(w.gate, { olderThanMs: 0 });
    const [first, second] = report.entries.map((e) => e.key);
    await resolveOutboxEntry(w.gate, first!, "applied", { operator: "ops-1", output: { ok: true }, note: "checked the statement" });
    await resolveOutboxEntry(w.gate, second!, "not_applied", { operator: "ops-1" });
    expect(await w.gate.invoke("ledger.charge_card", { n: 1 }, { ...w.call, idempotencyKey: "a" })).toMatchObject({ status: "ok", replayed: true });
    expect(await w.gate.invoke("ledger.charge_card", { n: 2 }, { ...w.call, idempotencyKey: "b" })).toMatchObject({ status: "ok", replayed: false });
    expect(w.effects).toHaveLength(1);
    const resolved = (await w.journal.readAudit()).filter((e) => e.type === "outbox.resolved");
    expect(resolved.map((e) => e.data["operator"])).toEqual(["ops-1", "ops-1"]);
    await expect(resolveOutboxEntry(w.gate, first!, "applied", { operator: "ops-2" })).rejects.toThrow(/only unknown or pending/);
    await expect(resolveOutboxEntry(w.gate, "missing", "applied", { operator: "ops-2" })).rejects.toThrow(/no outbox entry/);
    await expect(resolveOutboxEntry(w.gate, second!, "applied", { operator: "" })).rejects.toThrow(/operator/);
  });
});
