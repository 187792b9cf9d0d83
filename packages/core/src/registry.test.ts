import { describe, expect, it } from "vitest";
import { z } from "zod";
import { defineFamily } from "./family.js";
import { createNotesStore, createNotesTools } from "./testing/notes-family.js";
import { defineTool } from "./manifest.js";
import { createToolRegistry } from "./registry.js";
import { reachesFunction } from "./testing/describe-tool-family.js";

const makeTool = (description: string, visibility: "default" | "advanced" | "hidden" = "default") =>
  defineTool({
    id: "demo.echo",
    title: "Echo",
    description,
    input: z.object({ text: z.string().meta({ description: "What to echo" }) }),
    output: z.object({ text: z.string() }),
    actionType: "compute",
    effect: "none",
    requiredAllowlist: [],
    risk: "low",
    visibility,
    approval: "never",
    runtimeIsolation: { network: "none", filesystem: "none", secrets: "none", subprocess: "none" },
    untrustedOutput: false,
    handler: (input) => input,
  });

describe("createToolRegistry", () => {
  it("lists descriptors with JSON Schema and reaches no function by any route", () => {
    const registry = createToolRegistry({ families: [createNotesTools(createNotesStore())] });
    const list = registry.list();
    expect(list.map((d) => d.id)).toEqual(["notes.add_note", "notes.delete_note", "notes.read_note", "notes.sync_notes", "notes.word_count"]);
    const add = registry.describe("notes.add_note")!;
    expect(add.inputSchema).toMatchObject({ type: "object", properties: { id: { type: "string" }, text: { type: "string" } } });
    expect(add.approval).toBe("always");
    for (const root of [registry, list, add, { ...registry }, Object.getOwnPropertyNames(registry)]) {
      expect(reachesFunction(root)).toBe(false);
    }
    expect(JSON.stringify(registry)).toBe("{}");
    expect(JSON.stringify(list)).not.toContain("handler");
  });

  it("is frozen", () => {
    const registry = createToolRegistry({ families: [createNotesTools(createNotesStore())] });
    expect(Object.isFrozen(registry)).toBe(true);
    expect(Object.isFrozen(registry.list()[0])).toBe(true);
    expect(() => {
      (registry as unknown as Record<string, unknown>)["extra"] = 1;
    }).toThrow();
  });

  it("fingerprint changes when any manifest changes, and only then", () => {
    const a = createToolRegistry({ families: [defineFamily({ name: "demo", tools: [makeTool("Echo text.")], permissions: [] })] });
    const same = createToolRegistry({ families: [defineFamily({ name: "demo", tools: [makeTool("Echo text.")], permissions: [] })] });
    const other = createToolRegistry({ families: [defineFamily({ name: "demo", tools: [makeTool("Echo text!")], permissions: [] })] });
    const hidden = createToolRegistry({ families: [defineFamily({ name: "demo", tools: [makeTool("Echo text.", "hidden")], permissions: [] })] });
    expect(a.fingerprint()).toMatch(/^[0-9a-f]{64}$/);
    expect(a.fingerprint()).toBe(same.fingerprint());
    expect(a.fingerprint()).not.toBe(other.fingerprint());
    expect(a.fingerprint()).not.toBe(hidden.fingerprint());
  });

  it("hides hidden tools from list() unless asked", () => {
    const registry = createToolRegistry({ families: [defineFamily({ name: "demo", tools: [makeTool("Echo.", "hidden")], permissions: [] })] });
    expect(registry.list()).toEqual([]);
    expect(registry.list({ visibility: ["hidden"] })).toHaveLength(1);
    expect(registry.has("demo.echo")).toBe(true);
  });

  it("refuses duplicate ids and families, and hand-built families with undeclared tokens", () => {
    const notes = createNotesTools(createNotesStore());
    expect(() => createToolRegistry({ families: [notes, notes] })).toThrow(/registered twice/);
    expect(() => createToolRegistry({ families: [{ ...notes, permissions: ["notes:read"] }] })).toThrow(/not in the family's permissions/);
    expect(() => createToolRegistry({ families: [] })).toThrow(/at least one family/);
    const forged = { name: "demo", permissions: [], tools: [{ ...makeTool("x") }] };
    expect(() => createToolRegistry({ families: [forged] })).toThrow(/not created by defineTool/);
  });
});
