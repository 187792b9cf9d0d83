import { describe, expect, it } from "vitest";
import { z } from "zod";
import { defineFamily } from "../../family.js";
import { createToolRegistry } from "../../registry.js";
import { createNotesStore, createNotesTools } from "../../testing/notes-family.js";
import { createMemoryJournal } from "../../journal/memory.js";
import type { Journal } from "../../journal/types.js";
import { defineTool } from "../../manifest.js";
import { createGate } from "../gate.js";
import { base, full } from "../fixtures/gate-harness.js";

describe("gate step: record-intent", () => {
  it("7. the intent is journaled before the handler runs, and the handler waits for it", async () => {
    const order: string[] = [];
    const memory = createMemoryJournal();
    const slowJournal: Journal = {
      ...memory,
      async beginIntent(intent, opts) {
        order.push("intent:start");
        await new Promise((r) => setTimeout(r, 20));
        const result = await memory.beginIntent(intent, opts);
        order.push("intent:durable");
        return result;
      },
    };
    const tool = defineTool({
      id: "notes.touch_note",
      title: "Touch",
      description: "Touch.",
      input: z.object({}),
      output: z.object({}),
      actionType: "notes-write",
      effect: "write",
      requiredAllowlist: ["notes:write"],
      risk: "low",
      approval: "never",
      idempotent: true,
      retryable: true,
      reversible: true,
      runtimeIsolation: { network: "none", filesystem: "none", secrets: "none", subprocess: "none" },
      untrustedOutput: false,
      handler: () => {
        order.push("handler");
        return {};
      },
    });
    const gate = createGate({
      registry: createToolRegistry({ families: [defineFamily({ name: "notes", tools: [tool], permissions: ["notes:write"] })] }),
      journal: slowJournal,
    });
    expect(await gate.invoke("notes.touch_note", {}, base)).toMatchObject({ status: "ok" });
    expect(order).toEqual(["intent:start", "intent:durable", "handler"]);
  });

  it("7. when the journal cannot record the intent, the handler never runs", async () => {
    const memory = createMemoryJournal();
    const failing: Journal = {
      ...memory,
      beginIntent: async () => {
        throw new Error("disk full");
      },
    };
    const store = createNotesStore();
    const gate = createGate({ registry: createToolRegistry({ families: [createNotesTools(store)] }), journal: failing });
    const result = await gate.invoke("notes.sync_notes", { delayMs: 0 }, base);
    expect(result).toMatchObject({ status: "error", code: "journal_failed", boundary: "pre_effect_refusal" });
    expect(store.writes).toBe(0);
  });
});
