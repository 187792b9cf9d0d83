import { describe, expect, it } from "vitest";
import { defineProfile } from "../../profile.js";
import { grantAsOwner } from "../../testing/approver.js";
import { limitsSetup } from "../fixtures/limits-harness.js";

const minute = { per: "principal", windowMs: 60_000 } as const;

describe("gate step: limits (windows)", () => {
  it("a call over its window is denied rate_limited with retryAfterMs and a message the model can read, journaled, before any approval or effect", async () => {
    const h = limitsSetup([{ name: "syncs", tools: ["notes.sync_notes", "notes.add_note"], ...minute, max: 2 }]);
    expect((await h.sync()).status).toBe("ok");
    expect((await h.sync()).status).toBe("ok");
    const third = await h.sync();
    expect(third).toMatchObject({
      status: "denied",
      code: "rate_limited",
      boundary: "pre_effect_refusal",
      retryAfterMs: 61_000,
      details: { limit: "syncs", per: "principal", max: 2, windowMs: 60_000, retryAfterMs: 61_000 },
    });
    expect(third.status === "denied" && third.message).toBe(
      'notes.sync_notes: the limit "syncs" allows 2 calls per principal every 1 min; the next call fits in 61 s.',
    );
    expect(h.runs["notes.sync_notes"]).toBe(2);
    expect(h.store.writes).toBe(2);
    const refused = await h.events("call.refused");
    expect(refused.map((e) => e.data["code"])).toEqual(["rate_limited"]);
    expect(third.receipt?.seq).toBe(refused[0]!.seq);
    // A tool a human approves is refused before anyone is asked.
    const add = await h.gate.invoke("notes.add_note", { id: "a", text: "t" }, h.call());
    expect(add).toMatchObject({ status: "denied", code: "rate_limited", retryAfterMs: 61_000 });
    expect(await h.events("approval.requested")).toHaveLength(0);
    expect(h.runs["notes.add_note"]).toBeUndefined();
    expect(await h.used("syncs", "principal")).toBe(2);
  });

  it("an approval round trip is counted once, when the approved call runs; the next call is refused before a second request", async () => {
    const h = limitsSetup([{ tools: ["notes.add_note"], ...minute, max: 1 }]);
    const id = "notes.add_note/principal/60000";
    const first = await h.gate.invoke("notes.add_note", { id: "a", text: "t" }, h.call());
    if (first.status !== "approval_required") throw new Error(first.status);
    expect(await h.used(id, "principal")).toBe(0);
    const grant = await grantAsOwner(h.gate, first.requestId);
    expect(await h.gate.invoke("notes.add_note", { id: "a", text: "t" }, h.call({ approval: grant }))).toMatchObject({ status: "ok" });
    expect(await h.used(id, "principal")).toBe(1);
    expect(await h.gate.invoke("notes.add_note", { id: "b", text: "t" }, h.call())).toMatchObject({ status: "denied", code: "rate_limited" });
    expect(await h.events("approval.requested")).toHaveLength(1);
    expect(h.runs["notes.add_note"]).toBe(1);
  });

  it("a completed call replayed under its key (the caller's or a derived one) is not counted again; a retaken failed attempt is", async () => {
    const h = limitsSetup([{ name: "all", tools: "*", ...minute, max: 3 }]);
    expect(await h.sync({ idempotencyKey: "same" })).toMatchObject({ status: "ok", replayed: false });
    expect(await h.sync({ idempotencyKey: "same" })).toMatchObject({ status: "ok", replayed: true });
    const derived = () => h.gate.invoke("notes.sync_notes", { delayMs: 1 }, h.call());
    expect(await derived()).toMatchObject({ status: "ok", replayed: false });
    expect(await derived()).toMatchObject({ status: "ok", replayed: true });
    expect(await h.used("all", "principal")).toBe(2);
    // A failed attempt counted once; its retake under the same key is a new attempt at the effect.
    const flaky = () => h.gate.invoke("x.flaky_write", {}, h.call({ idempotencyKey: "f" }));
    expect(await flaky()).toMatchObject({ status: "error", code: "provider_unavailable" });
    expect(await h.used("all", "principal")).toBe(3);
    expect(await flaky()).toMatchObject({ status: "denied", code: "rate_limited" });
    expect(h.runs["x.flaky_write"]).toBe(1);
    expect(h.runs["notes.sync_notes"]).toBe(2);
  });

  it("a retake of a failed attempt is counted as the new attempt it is", async () => {
    const h = limitsSetup([{ name: "w", tools: ["x.flaky_write"], ...minute, max: 5 }]);
    const flaky = () => h.gate.invoke("x.flaky_write", {}, h.call({ idempotencyKey: "f" }));
    expect(await flaky()).toMatchObject({ status: "error" });
    expect(await flaky()).toMatchObject({ status: "ok", replayed: false });
    expect(await flaky()).toMatchObject({ status: "ok", replayed: true });
    expect(await h.used("w", "principal")).toBe(2);
  });

  it("a pure call without key or grant is charged alone, and a pure call a human approved with its grant", async () => {
    const h = limitsSetup([{ name: "pure", tools: ["notes.word_count", "x.pure_approved"], ...minute, max: 2 }]);
    expect(await h.pure()).toMatchObject({ status: "ok" });
    expect(await h.used("pure", "principal")).toBe(1);
    const charged = await h.events("limit.charged");
    expect(charged).toHaveLength(1);
    expect(charged[0]).toMatchObject({ toolId: "notes.word_count", principal: "agent-1", tenant: "tenant-a", data: { limit: "pure", count: 1, max: 2 } });
    const first = await h.gate.invoke("x.pure_approved", {}, h.call());
    if (first.status !== "approval_required") throw new Error(first.status);
    const grant = await grantAsOwner(h.gate, first.requestId);
    expect(await h.gate.invoke("x.pure_approved", {}, h.call({ approval: grant }))).toMatchObject({ status: "ok" });
    expect(await h.used("pure", "principal")).toBe(2);
    expect(await h.pure()).toMatchObject({ status: "denied", code: "rate_limited" });
    expect(h.runs["notes.word_count"]).toBe(1);
  });

  it("counts per principal (within its tenant), per tenant, or per profile", async () => {
    const byPrincipal = limitsSetup([{ name: "l", tools: "*", per: "principal", max: 1, windowMs: 60_000 }]);
    expect((await byPrincipal.sync()).status).toBe("ok");
    expect((await byPrincipal.sync()).status).toBe("denied");
    expect((await byPrincipal.sync({ principal: "agent-2" })).status).toBe("ok");
    expect((await byPrincipal.sync({ tenant: "tenant-b" })).status).toBe("ok"); // agent-1 of another tenant
    const byTenant = limitsSetup([{ name: "l", tools: "*", per: "tenant", max: 1, windowMs: 60_000 }]);
    expect((await byTenant.sync()).status).toBe("ok");
    expect((await byTenant.sync({ principal: "agent-2" })).status).toBe("denied");
    expect((await byTenant.sync({ principal: "agent-2", tenant: "tenant-b" })).status).toBe("ok");
    const byProfile = limitsSetup([{ name: "l", tools: "*", per: "profile", max: 1, windowMs: 60_000 }]);
    expect((await byProfile.sync()).status).toBe("ok");
    expect((await byProfile.sync({ principal: "agent-2", tenant: "tenant-b" })).status).toBe("denied");
    const other = defineProfile({ ...byProfile.profile, name: "other" });
    expect((await byProfile.sync({ profile: other })).status).toBe("ok");
    expect(await byProfile.used("l", "profile", { tenant: "ignored", principal: "ignored" })).toBe(1);
  });

  it("family.* counts the family's tools together, * every tool; the refusal names the limit that frees last", async () => {
    const h = limitsSetup([
      { name: "notes", tools: ["notes.*"], ...minute, max: 2 },
      { name: "all", tools: "*", ...minute, max: 3, windowMs: 120_000 },
    ]);
    expect((await h.sync()).status).toBe("ok");
    expect((await h.pure()).status).toBe("ok");
    expect(await h.sync()).toMatchObject({ status: "denied", code: "rate_limited", details: { limit: "notes" } });
    expect(await h.gate.invoke("x.boom", {}, h.call())).toMatchObject({ status: "error", code: "handler_failed" }); // counted: it ran
    expect(await h.gate.invoke("x.boom", {}, h.call())).toMatchObject({ status: "denied", details: { limit: "all" } });
    // Both over: the refusal names the one whose window frees later.
    expect(await h.pure()).toMatchObject({ status: "denied", details: { limit: "all" }, retryAfterMs: 122_000 });
    expect(await h.used("notes", "principal")).toBe(2);
  });

  it("the window slides: a call fits again exactly retryAfterMs later (fake clock)", async () => {
    const h = limitsSetup([{ name: "w", tools: "*", ...minute, max: 2 }]);
    expect((await h.sync()).status).toBe("ok");
    h.time.now += 30_000;
    expect((await h.sync()).status).toBe("ok");
    const refused = await h.sync();
    expect(refused).toMatchObject({ status: "denied", retryAfterMs: 31_000 });
    h.time.now += 30_999;
    expect(await h.sync()).toMatchObject({ status: "denied", retryAfterMs: 1 });
    h.time.now += 1;
    expect((await h.sync()).status).toBe("ok");
    expect(await h.sync()).toMatchObject({ status: "denied", retryAfterMs: 30_000 });
    h.time.now += 24 * 3_600_000;
    expect((await h.sync()).status).toBe("ok");
    expect(h.runs["notes.sync_notes"]).toBe(4);
  });
});
