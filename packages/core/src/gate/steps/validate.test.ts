import { describe, expect, it } from "vitest";
import { defineProfile } from "../../profile.js";
import { setup, base } from "../fixtures/gate-harness.js";

describe("gate step: validate", () => {
  it("3. invalid input: refused with issues and the JSON Schema before policy, approval or journal writes", async () => {
    const { gate, calls, writes, probe } = setup();
    const noTokens = defineProfile({ name: "none", allow: ["other:thing"], maxRisk: "low" });
    const result = await gate.invoke("notes.add_note", { id: "", text: 5 } as never, { ...base, profile: noTokens });
    expect(result.status).toBe("error");
    if (result.status !== "error") return;
    expect(result.code).toBe("invalid_input"); // not permission_denied: validation comes first
    expect(result.issues?.map((i) => i.path).sort()).toEqual(["id", "text"]);
    expect(result.inputSchema).toMatchObject({ type: "object" });
    expect(calls("notes.add_note")).toBe(0);
    expect(probe.previewCalls).toBe(0);
    expect(writes()).toEqual([]);
  });

  it("3. unknown properties are refused by strict schemas (no smuggled fields)", async () => {
    const { gate } = setup();
    const result = await gate.invoke("notes.add_note", { id: "a", text: "b", approved: true } as never, base);
    expect(result).toMatchObject({ status: "error", code: "invalid_input" });
    // A key named __proto__ from a model's JSON is a key like any other: hashed, and refused here.
    const smuggled = await gate.invoke("notes.add_note", JSON.parse('{"id":"a","text":"b","__proto__":{"approved":true}}') as never, base);
    expect(smuggled).toMatchObject({ status: "error", code: "invalid_input" });
  });
});
