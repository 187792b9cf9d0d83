import { describe, expect, it } from "vitest";
import { verifyAuditChain } from "../journal/audit-chain.js";
import { setup, base } from "./fixtures/gate-harness.js";

describe("gate: the whole pipeline, end to end", () => {
  it("12. the result is journaled bound to the intent hash, and the chain verifies", async () => {
    const { gate, journal } = setup();
    const result = await gate.invoke("notes.sync_notes", { delayMs: 0 }, base);
    expect(result.status).toBe("ok");
    const events = await journal.readAudit();
    const intent = events.find((e) => e.type === "intent.recorded")!;
    const settled = events.find((e) => e.type === "intent.settled")!;
    expect(settled.data["intentHash"]).toBe(intent.data["intentHash"]);
    expect(settled.data["outputHash"]).toMatch(/^[0-9a-f]{64}$/);
    expect(result.receipt?.seq).toBe(settled.seq);
    expect(verifyAuditChain(events, { key: "test-audit-key" }).ok).toBe(true);
  });

  it("concurrent calls with the same key run the body once", async () => {
    const { gate, store } = setup();
    const results = await Promise.all(Array.from({ length: 8 }, () => gate.invoke("notes.sync_notes", { delayMs: 20 }, { ...base, idempotencyKey: "same" })));
    expect(results.filter((r) => r.status === "ok")).toHaveLength(1);
    expect(results.filter((r) => r.status === "denied" && r.code === "idempotency_in_flight")).toHaveLength(7);
    expect(store.writes).toBe(1);
  });
});
