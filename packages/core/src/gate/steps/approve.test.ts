import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createToolRegistry } from "../../registry.js";
import { createNotesStore, createNotesTools } from "../../testing/notes-family.js";
import { createMemoryJournal } from "../../journal/memory.js";
import { defineTool } from "../../manifest.js";
import { createGate, type CallOptions } from "../gate.js";
import { setup, approve, base } from "../fixtures/gate-harness.js";
import { denyAsOwner, grantAsOwner } from "../../testing/approver.js";

describe("gate step: approve", () => {
  it("5. approval: without a grant nothing runs; a request is persisted with the preview", async () => {
    const { gate, calls, journal } = setup();
    const result = await gate.invoke("notes.add_note", { id: "n", text: "hello" }, base);
    expect(result.status).toBe("approval_required");
    if (result.status !== "approval_required") return;
    expect(result.preview).toEqual({ summary: "Store note n", details: { id: "n" }, body: "hello" });
    expect(result.previewHash).toMatch(/^[0-9a-f]{64}$/);
    expect(calls("notes.add_note")).toBe(0);
    expect(await journal.listOutbox()).toEqual([]);
    const stored = await journal.getApproval(result.requestId);
    expect(stored).toMatchObject({ status: "pending", toolId: "notes.add_note", principal: "agent-1", tenant: "tenant-a" });
    // Asking again joins the same request instead of piling up.
    const again = await gate.invoke("notes.add_note", { id: "n", text: "hello" }, base);
    expect(again.status === "approval_required" && again.requestId).toBe(result.requestId);
  });

  it("5. a grant runs the call once; it cannot be used twice", async () => {
    const { gate, calls, store } = setup();
    const { grant } = await approve(gate, "notes.add_note", { id: "n", text: "hello" });
    expect(await gate.invoke("notes.add_note", { id: "n", text: "hello" }, { ...base, approval: grant })).toMatchObject({
      status: "ok",
      output: { id: "n", bytes: 5 },
    });
    expect(calls("notes.add_note")).toBe(1);
    // Same grant, new key: the grant is spent.
    const reuse = await gate.invoke("notes.add_note", { id: "n", text: "hello" }, { ...base, approval: grant, idempotencyKey: "fresh" });
    expect(reuse).toMatchObject({ status: "denied", code: "approval_consumed" });
    expect(calls("notes.add_note")).toBe(1);
    expect(store.writes).toBe(1);
  });

  it("5. a mismatching grant is refused and stays usable for its own call", async () => {
    const { gate, calls } = setup();
    const { grant } = await approve(gate, "notes.add_note", { id: "n", text: "approved text" });
    const cases: [string, unknown, CallOptions][] = [
      ["other input", { id: "n", text: "swapped text" }, { ...base, approval: grant }],
      ["other principal", { id: "n", text: "approved text" }, { ...base, principal: "agent-2", approval: grant }],
      ["other tenant", { id: "n", text: "approved text" }, { ...base, tenant: "tenant-b", approval: grant }],
      ["forged token", { id: "n", text: "approved text" }, { ...base, approval: { ...grant, token: "x".repeat(43) } }],
    ];
    for (const [label, input, call] of cases) {
      const result = await gate.invoke("notes.add_note", input, call);
      expect(result.status, label).toBe("denied");
      expect(result.status === "denied" && result.code, label).toBe("approval_invalid");
    }
    const otherTool = await gate.invoke("notes.delete_note", { id: "n" }, { ...base, approval: grant });
    expect(otherTool).toMatchObject({ status: "denied", code: "approval_invalid" });
    expect(calls("notes.add_note")).toBe(0);
    expect(await gate.invoke("notes.add_note", { id: "n", text: "approved text" }, { ...base, approval: grant })).toMatchObject({ status: "ok" });
  });

  it("5. each binding field alone makes a grant not fit: tool, input (same preview), principal, tenant, preview", async () => {
    // Twin tools whose preview leaves out part of the input, so the input (or the tool) can change
    // while the preview stays the same.
    const labelTool = (id: "notes.label_note" | "notes.tag_note") =>
      defineTool({
        id,
        title: "Label a note",
        description: "Attach a label; the preview names the note only.",
        input: z.object({ id: z.string(), label: z.string() }).strict(),
        output: z.object({ id: z.string() }),
        actionType: "notes-write",
        effect: "write",
        requiredAllowlist: ["notes:write"],
        risk: "medium",
        approval: "always",
        preview: (input) => ({ summary: `Label note ${input.id}`, details: { exists: shared.has(input.id) } }),
        idempotent: true,
        retryable: true,
        reversible: true,
        runtimeIsolation: { network: "none", filesystem: "none", secrets: "none", subprocess: "none" },
        untrustedOutput: false,
        handler: (input) => ({ id: input.id }),
      });
    const shared = new Set<string>(["n"]);
    const { gate, calls } = setup({ extraTools: [labelTool("notes.label_note"), labelTool("notes.tag_note")] });
    const approved = { id: "n", label: "done" };
    const { first, grant } = await approve(gate, "notes.label_note", approved);
    const swapped = await gate.invoke("notes.label_note", { id: "n", label: "evil" }, base);
    expect(swapped.status === "approval_required" && swapped.previewHash).toBe(first.status === "approval_required" && first.previewHash);
    const cases: [string, unknown, CallOptions, () => void, string?][] = [
      ["toolId", approved, { ...base, approval: grant }, () => undefined, "notes.tag_note"],
      ["inputHash", { id: "n", label: "evil" }, { ...base, approval: grant }, () => undefined],
      ["principal", approved, { ...base, principal: "agent-2", approval: grant }, () => undefined],
      ["tenant", approved, { ...base, tenant: "tenant-b", approval: grant }, () => undefined],
      ["previewHash", approved, { ...base, approval: grant }, () => shared.delete("n")],
    ];
    for (const [field, input, call, change, toolId = "notes.label_note"] of cases) {
      change();
      const result = await gate.invoke(toolId, input, call);
      expect(result, field).toMatchObject({ status: "denied", code: "approval_invalid", details: { mismatched: [field] } });
      shared.add("n");
    }
    expect(calls("notes.label_note") + calls("notes.tag_note")).toBe(0);
    expect(await gate.invoke("notes.label_note", approved, { ...base, approval: grant })).toMatchObject({ status: "ok" });
  });

  it("5. a grant is bound to the preview: if what a human saw changes, the grant no longer fits", async () => {
    const { gate, store, calls } = setup();
    store.notes.set("doomed", "x");
    const { grant } = await approve(gate, "notes.delete_note", { id: "doomed" });
    store.notes.delete("doomed"); // the preview now says exists: false
    const result = await gate.invoke("notes.delete_note", { id: "doomed" }, { ...base, approval: grant });
    expect(result).toMatchObject({ status: "denied", code: "approval_invalid", details: { mismatched: ["previewHash"] } });
    expect(calls("notes.delete_note")).toBe(0);
  });

  it("5. expired and denied grants are refused", async () => {
    let now = Date.parse("2026-01-01T00:00:00Z");
    const store = createNotesStore();
    const gate = createGate({ registry: createToolRegistry({ families: [createNotesTools(store)] }), journal: createMemoryJournal(), clock: () => now });
    const first = await gate.invoke("notes.add_note", { id: "a", text: "b" }, base);
    if (first.status !== "approval_required") throw new Error("expected approval");
    const grant = await grantAsOwner(gate, first.requestId, { ttlMs: 1000 });
    now += 1001;
    expect(await gate.invoke("notes.add_note", { id: "a", text: "b" }, { ...base, approval: grant })).toMatchObject({
      status: "denied",
      code: "approval_expired",
    });
    const second = await gate.invoke("notes.add_note", { id: "c", text: "d" }, base);
    if (second.status !== "approval_required") throw new Error("expected approval");
    await denyAsOwner(gate, second.requestId, "not today");
    const forged = { requestId: second.requestId, token: "t".repeat(43), toolId: "notes.add_note", expiresAt: new Date(now + 1000).toISOString() };
    expect(await gate.invoke("notes.add_note", { id: "c", text: "d" }, { ...base, approval: forged })).toMatchObject({
      status: "denied",
      code: "approval_denied",
    });
    expect(store.writes).toBe(0);
  });
});
