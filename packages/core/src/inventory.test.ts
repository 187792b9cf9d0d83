import { describe, expect, it } from "vitest";
import { createNotesStore, createNotesTools } from "./testing/notes-family.js";
import { buildInventory } from "./inventory.js";
import { GENERATED_MARKER, renderOperatorDocs } from "./operator-docs.js";
import { defineProfile } from "./profile.js";
import { createToolRegistry } from "./registry.js";

const registry = createToolRegistry({ families: [createNotesTools(createNotesStore())] });
const reader = defineProfile({ name: "reader", allow: ["notes:read"], maxRisk: "low" });
const admin = defineProfile({ name: "admin", allow: ["notes:read", "notes:write", "notes:delete", "notes:sync"], maxRisk: "high" });

describe("buildInventory", () => {
  it("lists every declared fact and which profiles reach each tool", () => {
    const inventory = buildInventory(registry, { profiles: [reader, admin] });
    expect(inventory.fingerprint).toBe(registry.fingerprint());
    const del = inventory.tools.find((t) => t.id === "notes.delete_note")!;
    expect(del).toMatchObject({
      family: "notes",
      kind: "in-process",
      actionType: "notes-write",
      effect: "destructive",
      mutates: true,
      requiredAllowlist: ["notes:write", "notes:delete"],
      risk: "high",
      approval: "always",
      idempotent: true,
      reversible: false,
      sovereignty: "sovereign",
      reachableBy: ["admin"],
      refusedBy: [{ profile: "reader", reason: "missing notes:write, notes:delete" }],
    });
    expect(del.inputSchema).toMatchObject({ type: "object" });
    const read = inventory.tools.find((t) => t.id === "notes.read_note")!;
    expect(read.reachableBy).toEqual(["reader", "admin"]);
    expect(read.untrustedOutput).toBe(true);
  });
});

describe("renderOperatorDocs", () => {
  it("renders one deterministic page per family, marked as generated", () => {
    const inventory = buildInventory(registry, { profiles: [reader, admin] });
    const pages = renderOperatorDocs(inventory);
    expect(pages.map((p) => p.path)).toEqual(["tools/notes.md"]);
    const page = pages[0]!.content;
    expect(page.startsWith(GENERATED_MARKER)).toBe(true);
    expect(page).toContain("## `notes.delete_note`");
    expect(page).toContain("**changes state**");
    expect(page).toContain("Delete a note. This cannot be undone.");
    expect(page).toContain("| Reachable by | `admin` |");
    expect(page).toContain("not idempotent");
    expect(renderOperatorDocs(buildInventory(registry, { profiles: [reader, admin] }))[0]!.content).toBe(page);
  });
});
