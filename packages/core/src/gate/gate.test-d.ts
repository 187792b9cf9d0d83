import { describe, expectTypeOf, it } from "vitest";
import { createNotesStore, createNotesTools } from "../testing/notes-family.js";
import { createMemoryJournal } from "../journal/memory.js";
import { defineProfile } from "../profile.js";
import { createToolRegistry } from "../registry.js";
import { createGate } from "./gate.js";

const registry = createToolRegistry({ families: [createNotesTools(createNotesStore())] });
const gate = createGate({ registry, journal: createMemoryJournal() });
const call = { principal: "p", tenant: "t", profile: defineProfile({ name: "p", allow: ["notes:read"], maxRisk: "low" }) };

describe("gate.invoke types", () => {
  it("infers ids and input types from the registry", () => {
    expectTypeOf(registry.ids()).toEqualTypeOf<
      readonly ("notes.add_note" | "notes.read_note" | "notes.delete_note" | "notes.word_count" | "notes.sync_notes")[]
    >();
    void gate.invoke("notes.add_note", { id: "a", text: "b" }, call);
    // @ts-expect-error wrong input type for a known tool
    void gate.invoke("notes.add_note", { id: 1, text: "b" }, call);
    // @ts-expect-error missing a required field
    void gate.invoke("notes.add_note", { id: "a" }, call);
    // @ts-expect-error an input meant for another tool
    void gate.invoke("notes.word_count", { id: "a" }, call);
    // @ts-expect-error a misspelled literal id
    void gate.invoke("notes.add_notes", { id: "a", text: "b" }, call);
  });

  it("lets zod defaults be omitted by the caller", () => {
    void gate.invoke("notes.sync_notes", { delayMs: 1 }, call);
  });

  it("types the output of a known tool", async () => {
    const result = await gate.invoke("notes.word_count", { text: "x" }, call);
    if (result.status === "ok") expectTypeOf(result.output).toEqualTypeOf<{ words: number }>();
  });

  it("accepts an untyped name and unknown input from a model", async () => {
    const fromModel: { name: string; args: unknown } = JSON.parse('{"name":"notes.read_note","args":{"id":"x"}}');
    const result = await gate.invoke(fromModel.name, fromModel.args, call);
    if (result.status === "ok") expectTypeOf(result.output).toBeUnknown();
  });
});
