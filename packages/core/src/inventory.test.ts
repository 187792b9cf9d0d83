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

describe("limits in the inventory", () => {
  const HOUR = 3_600_000;
  const metered = defineProfile({
    name: "metered",
    allow: ["notes:read", "notes:write", "notes:delete", "notes:sync"],
    maxRisk: "high",
    limits: [
      { name: "deletes", tools: ["notes.delete_note"], per: "principal", max: 1, windowMs: 24 * HOUR },
      { tools: ["notes.*"], per: "tenant", max: 600, windowMs: 60_000 },
      { tools: "*", maxConcurrent: 2 },
    ],
  });
  // The reader declares a limit on a tool it cannot reach: nothing to bound there, so nothing listed.
  const limitedReader = defineProfile({
    name: "limited-reader",
    allow: ["notes:read"],
    maxRisk: "low",
    limits: [{ tools: ["notes.delete_note", "notes.read_note"], per: "profile", max: 5, windowMs: HOUR }],
  });

  it("lists, for each profile that reaches a tool, the limits whose patterns name it (exact id, family.*, *), and none for a profile that cannot reach it", () => {
    const inventory = buildInventory(registry, { profiles: [limitedReader, metered, reader] });
    const del = inventory.tools.find((t) => t.id === "notes.delete_note")!;
    expect(del.refusedBy.map((r) => r.profile)).toEqual(["limited-reader", "reader"]);
    expect(del.limits).toEqual([
      { profile: "metered", limit: "deletes", per: "principal", max: 1, windowMs: 24 * HOUR },
      { profile: "metered", limit: "notes.*/tenant/60000", per: "tenant", max: 600, windowMs: 60_000 },
      { profile: "metered", limit: "*/concurrent", maxConcurrent: 2 },
    ]);
    const read = inventory.tools.find((t) => t.id === "notes.read_note")!;
    expect(read.limits.map((l) => `${l.profile}:${l.limit}`)).toEqual([
      "limited-reader:notes.delete_note,notes.read_note/profile/3600000",
      "metered:notes.*/tenant/60000",
      "metered:*/concurrent",
    ]);
    expect(buildInventory(registry, { profiles: [reader, admin] }).tools.every((t) => t.limits.length === 0)).toBe(true);
    expect(buildInventory(registry).tools.every((t) => t.limits.length === 0)).toBe(true);
  });

  it("shows each tool's limits in the operator docs, per profile, and points the operator at budgets", () => {
    const page = renderOperatorDocs(buildInventory(registry, { profiles: [metered, reader] }))[0]!.content;
    const section = page.slice(page.indexOf("## `notes.delete_note`"));
    expect(section.slice(0, section.indexOf("\n## ", 5))).toContain(
      "| Limits | `metered`: 1 call per principal every 24 h (`deletes`); `metered`: 600 calls per tenant every 1 min (`notes.*/tenant/60000`); `metered`: 2 in flight per worker (`*/concurrent`) |",
    );
    expect(page).toContain("`limit.charged` events and `rate_limited` refusals");
    const plain = renderOperatorDocs(buildInventory(registry, { profiles: [reader, admin] }))[0]!.content;
    expect(plain).not.toContain("| Limits |");
    expect(plain).not.toContain("limit.charged");
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

describe("edits in the inventory and the operator docs", () => {
  const narrow = defineProfile({ ...admin, name: "narrow", approvalEdits: { "notes.add_note": ["/text"], "notes.*": false } });

  it("shows what an approver may edit, each profile that narrows it, and warns of an editable id", () => {
    const inventory = buildInventory(registry, { profiles: [admin, narrow] });
    const add = inventory.tools.find((t) => t.id === "notes.add_note")!;
    expect(add.edits).toEqual({
      fields: [""],
      profiles: [{ profile: "narrow", fields: false }],
      warnings: [expect.stringContaining("/id is editable")],
    });
    const docs = renderOperatorDocs(inventory)
      .map((page) => page.content)
      .join("\n");
    expect(docs).toContain("| An approver may edit | the whole input");
    expect(docs).toContain("| Edits per profile | `narrow`: nothing: approve or deny as asked |");
    expect(docs).toContain("/id is editable");
  });
});
