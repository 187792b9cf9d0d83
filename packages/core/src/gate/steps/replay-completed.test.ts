import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createToolRegistry } from "../../registry.js";
import { createNotesStore, createNotesTools } from "../../testing/notes-family.js";
import { createMemoryJournal } from "../../journal/memory.js";
import { ToolError } from "../../errors.js";
import { defineTool } from "../../manifest.js";
import { createGate } from "../gate.js";
import { setup, approve, base } from "../fixtures/gate-harness.js";

describe("gate step: derive-key and replay-completed", () => {
  it("6. with the caller's key, a retry replays before the preview: a preview that fails once the effect happened does not block it", async () => {
    // Like sending a draft: once it has run, the thing the preview reads is gone.
    const drafts = new Set(["d1"]);
    let previews = 0;
    const sendDraft = defineTool({
      id: "notes.send_draft",
      title: "Send a draft",
      description: "Sends a draft; the draft is gone afterwards.",
      input: z.object({ id: z.string() }),
      output: z.object({ sent: z.string() }),
      actionType: "notes-write",
      effect: "write",
      requiredAllowlist: ["notes:write"],
      risk: "high",
      approval: "always",
      preview: (input) => {
        previews++;
        if (!drafts.has(input.id)) throw new ToolError("not_found", `no draft ${input.id}`);
        return { summary: `Send draft ${input.id}` };
      },
      idempotent: false,
      retryable: false,
      reversible: false,
      runtimeIsolation: { network: "none", filesystem: "none", secrets: "none", subprocess: "none" },
      untrustedOutput: false,
      handler: (input) => {
        drafts.delete(input.id);
        return { sent: input.id };
      },
    });
    const { gate, calls } = setup({ extraTools: [sendDraft] });
    const keyed = { ...base, idempotencyKey: "send-d1" };
    const { grant } = await approve(gate, "notes.send_draft", { id: "d1" }, keyed);
    expect(await gate.invoke("notes.send_draft", { id: "d1" }, { ...keyed, approval: grant })).toMatchObject({ status: "ok", replayed: false });
    const before = previews;
    // The response was lost; the caller retries with its key and no grant.
    expect(await gate.invoke("notes.send_draft", { id: "d1" }, keyed)).toMatchObject({ status: "ok", output: { sent: "d1" }, replayed: true });
    expect(previews).toBe(before);
    expect(calls("notes.send_draft")).toBe(1);
    // The same key for another input is still a conflict, refused before any preview.
    expect(await gate.invoke("notes.send_draft", { id: "d2" }, keyed)).toMatchObject({ status: "denied", code: "idempotency_conflict" });
    expect(previews).toBe(before);
    // Without a key, the derived key needs the preview, which now fails: callers that retry pass a key.
    expect(await gate.invoke("notes.send_draft", { id: "d1" }, base)).toMatchObject({ status: "error", code: "not_found" });
  });

  it("6. idempotency: a completed call is replayed, not run again, even without a fresh grant", async () => {
    const { gate, store, calls } = setup();
    const { grant } = await approve(gate, "notes.add_note", { id: "n", text: "once" }, { ...base, idempotencyKey: "key-1" });
    const first = await gate.invoke("notes.add_note", { id: "n", text: "once" }, { ...base, idempotencyKey: "key-1", approval: grant });
    const second = await gate.invoke("notes.add_note", { id: "n", text: "once" }, { ...base, idempotencyKey: "key-1" });
    expect(first).toMatchObject({ status: "ok", replayed: false, idempotencyKey: "key-1" });
    expect(second).toMatchObject({ status: "ok", replayed: true, output: { id: "n", bytes: 4 } });
    expect(calls("notes.add_note")).toBe(1);
    expect(store.writes).toBe(1);
  });

  it("6. a key reused for another input, or by another tenant, never replays someone else's result", async () => {
    const { gate } = setup();
    const syncs = { delayMs: 0, ignoreSignal: false };
    expect(await gate.invoke("notes.sync_notes", syncs, { ...base, idempotencyKey: "k" })).toMatchObject({ status: "ok" });
    expect(await gate.invoke("notes.sync_notes", { ...syncs, delayMs: 1 }, { ...base, idempotencyKey: "k" })).toMatchObject({
      status: "denied",
      code: "idempotency_conflict",
    });
    // Another tenant with the same key is a different key: it runs.
    expect(await gate.invoke("notes.sync_notes", syncs, { ...base, tenant: "tenant-b", idempotencyKey: "k" })).toMatchObject({ status: "ok", replayed: false });
  });

  it("6. without a key, a side-effectful call gets a derived one: an identical repeat is replayed", async () => {
    const { gate, store } = setup();
    const input = { delayMs: 0, ignoreSignal: false };
    const a = await gate.invoke("notes.sync_notes", input, base);
    const b = await gate.invoke("notes.sync_notes", input, base);
    expect(a).toMatchObject({ status: "ok", replayed: false });
    expect(b).toMatchObject({ status: "ok", replayed: true });
    expect(a.status === "ok" && a.idempotencyKey).toMatch(/^auto-/);
    expect(store.writes).toBe(1);
  });

  it("6. without a key, a call whose preview changed is a new call, not a replay (A, then B, then A again)", async () => {
    const values = new Map<string, string>();
    const setValue = defineTool({
      id: "notes.set_value",
      title: "Set a value",
      description: "Set a named value.",
      input: z.object({ name: z.string(), value: z.string() }),
      output: z.object({ value: z.string() }),
      actionType: "notes-write",
      effect: "write",
      requiredAllowlist: ["notes:write"],
      risk: "medium",
      approval: "always",
      preview: ({ name, value }) => ({ summary: `Set ${name}`, details: { before: values.get(name) ?? null, after: value } }),
      idempotent: true,
      retryable: true,
      reversible: true,
      runtimeIsolation: { network: "none", filesystem: "none", secrets: "none", subprocess: "none" },
      untrustedOutput: false,
      handler: ({ name, value }) => (values.set(name, value), { value }),
    });
    const { gate, calls } = setup({ extraTools: [setValue] });
    for (const value of ["A", "B", "A"]) {
      const { grant } = await approve(gate, "notes.set_value", { name: "x", value });
      expect(await gate.invoke("notes.set_value", { name: "x", value }, { ...base, approval: grant })).toMatchObject({ status: "ok", replayed: false });
    }
    expect(values.get("x")).toBe("A");
    expect(calls("notes.set_value")).toBe(3);
  });

  it("6. without a key, an identical call after the retry window is a new call", async () => {
    let now = Date.parse("2026-01-01T00:00:00Z");
    const store = createNotesStore();
    const gate = createGate({
      registry: createToolRegistry({ families: [createNotesTools(store)] }),
      journal: createMemoryJournal(),
      clock: () => now,
      derivedKeyWindowMs: 60_000,
    });
    expect(await gate.invoke("notes.sync_notes", { delayMs: 0 }, base)).toMatchObject({ status: "ok", replayed: false });
    now += 30_000;
    expect(await gate.invoke("notes.sync_notes", { delayMs: 0 }, base)).toMatchObject({ status: "ok", replayed: true });
    now += 60_001;
    expect(await gate.invoke("notes.sync_notes", { delayMs: 0 }, base)).toMatchObject({ status: "ok", replayed: false });
    // A caller's own key deduplicates for as long as the journal keeps it.
    expect(await gate.invoke("notes.sync_notes", { delayMs: 0 }, { ...base, idempotencyKey: "mine" })).toMatchObject({ replayed: false });
    now += 3_600_000;
    expect(await gate.invoke("notes.sync_notes", { delayMs: 0 }, { ...base, idempotencyKey: "mine" })).toMatchObject({ replayed: true });
    expect(store.writes).toBe(3);
  });

  it("6. read and pure tools without a key are never replayed", async () => {
    const { gate, calls, store } = setup();
    store.notes.set("r", "v1");
    await gate.invoke("notes.read_note", { id: "r" }, base);
    store.notes.set("r", "v2");
    const second = await gate.invoke("notes.read_note", { id: "r" }, base);
    expect(second).toMatchObject({ status: "ok", replayed: false, output: { text: "v2" } });
    await gate.invoke("notes.word_count", { text: "a b" }, base);
    await gate.invoke("notes.word_count", { text: "a b" }, base);
    expect(calls("notes.read_note")).toBe(2);
    expect(calls("notes.word_count")).toBe(2);
  });
});
