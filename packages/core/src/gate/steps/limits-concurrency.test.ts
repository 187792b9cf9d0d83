import { describe, expect, it } from "vitest";
import { createMemoryJournal } from "../../journal/memory.js";
import type { Journal } from "../../journal/types.js";
import { defineProfile, type Profile } from "../../profile.js";
import { grantAsOwner } from "../../testing/approver.js";
import { limitsSetup } from "../fixtures/limits-harness.js";

describe("gate step: limits (calls in flight)", () => {
  it("maxConcurrent refuses the extra call in flight, and frees the slot when the call ends", async () => {
    const h = limitsSetup([{ name: "one", tools: ["x.wait"], maxConcurrent: 1 }]);
    const first = h.gate.invoke("x.wait", {}, h.call());
    await new Promise((r) => setTimeout(r, 5));
    const extra = await h.gate.invoke("x.wait", {}, h.call({ principal: "agent-2" }));
    expect(extra).toMatchObject({
      status: "denied",
      code: "rate_limited",
      retryAfterMs: 1000,
      details: { limit: "one", maxConcurrent: 1, retryAfterMs: 1000 },
      message: 'x.wait: the limit "one" allows 1 call of this tool in flight at once; try again in 1 s.',
    });
    expect(h.runs["x.wait"]).toBe(1);
    h.waiting.release!();
    expect(await first).toMatchObject({ status: "ok" });
    expect(h.inFlight().size).toBe(0);
    const again = h.gate.invoke("x.wait", {}, h.call());
    await new Promise((r) => setTimeout(r, 5));
    h.waiting.release!();
    expect(await again).toMatchObject({ status: "ok" });
  });

  it("counts per tool: family.* with maxConcurrent bounds each of the family's tools, not their sum", async () => {
    const h = limitsSetup([{ tools: ["x.*"], maxConcurrent: 1 }]);
    const waiting = h.gate.invoke("x.wait", {}, h.call());
    await new Promise((r) => setTimeout(r, 5));
    expect(await h.gate.invoke("x.boom", {}, h.call())).toMatchObject({ status: "error", code: "handler_failed" });
    expect(await h.gate.invoke("x.wait", {}, h.call())).toMatchObject({ status: "denied", code: "rate_limited" });
    h.waiting.release!();
    await waiting;
    expect(h.inFlight().size).toBe(0);
  });

  it("frees the slot whatever the end: an error, a timeout, a refusal after the step, an approval request", async () => {
    const h = limitsSetup([{ name: "c", tools: "*", maxConcurrent: 1 }]);
    expect(await h.gate.invoke("x.boom", {}, h.call())).toMatchObject({ status: "error", code: "handler_failed" });
    expect(await h.sync({}, 1_000)).toMatchObject({ status: "error", code: "timeout" }); // notes.sync_notes times out at 200 ms
    const asked = await h.gate.invoke("notes.add_note", { id: "a", text: "t" }, h.call());
    expect(asked.status).toBe("approval_required");
    const forged = { requestId: asked.status === "approval_required" ? asked.requestId : "", token: "not-the-token" } as never;
    expect(await h.gate.invoke("notes.add_note", { id: "a", text: "t" }, h.call({ approval: forged }))).toMatchObject({ status: "denied" });
    expect(h.inFlight().size).toBe(0);
    expect((await h.pure()).status).toBe("ok");
    expect(h.inFlight().size).toBe(0);
  });

  it("a window refusal takes no slot, and a concurrency refusal charges no window", async () => {
    const h = limitsSetup([
      { name: "w", tools: ["x.wait", "notes.word_count"], per: "principal", max: 1, windowMs: 60_000 },
      { name: "c", tools: ["x.wait"], maxConcurrent: 1 },
    ]);
    expect((await h.pure()).status).toBe("ok");
    expect(await h.gate.invoke("x.wait", {}, h.call())).toMatchObject({ status: "denied", details: { limit: "w" } });
    expect(h.inFlight().size).toBe(0);
    const other = h.gate.invoke("x.wait", {}, h.call({ principal: "agent-2" }));
    await new Promise((r) => setTimeout(r, 5));
    expect(await h.gate.invoke("x.wait", {}, h.call({ principal: "agent-3" }))).toMatchObject({ status: "denied", details: { limit: "c" } });
    h.waiting.release!();
    await other;
    expect(await h.used("w", "principal", { principal: "agent-3" })).toBe(0);
  });
});

describe("gate step: limits (cost and failures)", () => {
  it("a profile without limits, or without one for the tool, reads no count", async () => {
    const none = limitsSetup([]);
    expect((await none.sync()).status).toBe("ok");
    expect((await none.pure()).status).toBe("ok");
    expect(none.reads.limit).toBe(0);
    expect(await none.events("limit.charged")).toHaveLength(0);
    const elsewhere = limitsSetup([{ tools: ["x.*"], per: "tenant", max: 1, windowMs: 60_000 }]);
    expect((await elsewhere.sync()).status).toBe("ok");
    expect(elsewhere.reads.limit).toBe(0);
  });

  it("the journal refusing a charge (a worker took the last slot first) is rate_limited, not journal_failed, on each way a call commits", async () => {
    // A stale first look: the step always reads an empty window, so only the journal's own count refuses.
    const memory = createMemoryJournal({ auditKey: "test-audit-key" });
    const stale: Journal = { ...memory, getRecord: (kind, id) => (kind === "limit" ? Promise.resolve(undefined) : memory.getRecord(kind, id)) };
    const h = limitsSetup([{ name: "l", tools: ["notes.sync_notes", "notes.word_count", "x.pure_approved"], per: "principal", max: 1, windowMs: 60_000 }], {
      journal: stale,
    });
    expect((await h.pure()).status).toBe("ok");
    const limited = { status: "denied", code: "rate_limited", boundary: "pre_effect_refusal", retryAfterMs: 61_000, details: { limit: "l" } };
    expect(await h.sync()).toMatchObject(limited); // beginIntent
    expect(await h.pure()).toMatchObject(limited); // chargeLimits
    const asked = await h.gate.invoke("x.pure_approved", {}, h.call());
    if (asked.status !== "approval_required") throw new Error(asked.status);
    const grant = await grantAsOwner(h.gate, asked.requestId);
    expect(await h.gate.invoke("x.pure_approved", {}, h.call({ approval: grant }))).toMatchObject(limited); // consumeGrant
    expect((await memory.getApproval(asked.requestId))?.status).toBe("granted"); // the grant was not spent
    expect(h.runs).toEqual({ "notes.word_count": 1 });
    expect((await h.events("call.refused")).map((e) => e.data["code"])).toEqual(["rate_limited", "rate_limited", "rate_limited"]);
  });

  it("two gates on one journal racing for the last slots: exactly max calls run", async () => {
    const memory = createMemoryJournal({ auditKey: "test-audit-key" });
    const limits = [{ name: "l", tools: "*", per: "tenant", max: 3, windowMs: 60_000 }] as const;
    const a = limitsSetup(limits, { journal: memory });
    const b = limitsSetup(limits, { journal: memory });
    const results = await Promise.all(Array.from({ length: 10 }, (_, i) => (i % 2 === 0 ? a.sync({ principal: `p${i}` }) : b.sync({ principal: `p${i}` }))));
    expect(results.filter((r) => r.status === "ok")).toHaveLength(3);
    expect(results.filter((r) => r.status === "denied" && r.code === "rate_limited")).toHaveLength(7);
    expect((a.runs["notes.sync_notes"] ?? 0) + (b.runs["notes.sync_notes"] ?? 0)).toBe(3);
    expect(await a.used("l", "tenant")).toBe(3);
  });

  it("a count that cannot be read refuses the call (journal_failed) before its effect", async () => {
    const memory = createMemoryJournal({ auditKey: "test-audit-key" });
    const broken: Journal = { ...memory, getRecord: (kind, id) => (kind === "limit" ? Promise.reject(new Error("disk gone")) : memory.getRecord(kind, id)) };
    const h = limitsSetup([{ tools: "*", per: "tenant", max: 5, windowMs: 60_000 }], { journal: broken });
    expect(await h.sync()).toMatchObject({ status: "error", code: "journal_failed", boundary: "pre_effect_refusal" });
    expect(h.runs).toEqual({});
  });

  it("limits a hand-built profile carries that defineProfile did not make are refused (config_invalid), never thrown", async () => {
    const h = limitsSetup([]);
    const base = defineProfile({ name: "hand", allow: h.profile.allow, maxRisk: "critical" });
    for (const limits of [[{ kind: "window", id: "x", tools: "*", per: "tenant", max: 1, windowMs: 1000 }], null, "all"]) {
      const profile = Object.freeze({ ...base, limits }) as unknown as Profile;
      expect(await h.sync({ profile })).toMatchObject({ status: "error", code: "config_invalid", boundary: "pre_effect_refusal" });
    }
    expect(h.runs).toEqual({});
  });
});
