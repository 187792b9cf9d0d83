import { describe, expect, it } from "vitest";
import { setup, approve, base } from "../fixtures/gate-harness.js";

describe("gate step: freeze", () => {
  it("2. input that is not plain JSON (cycle, bigint, non-finite) is refused before validation", async () => {
    const { gate, calls, writes } = setup();
    const cyclic: Record<string, unknown> = { id: "a" };
    cyclic["self"] = cyclic;
    for (const input of [cyclic, { id: "a", text: 10n }, { id: "a", text: Number.NaN }]) {
      const result = await gate.invoke("notes.add_note", input, base);
      expect(result).toMatchObject({ status: "error", code: "invalid_input", boundary: "pre_effect_refusal" });
    }
    expect(calls("notes.add_note")).toBe(0);
    expect(writes()).toEqual([]);
  });

  it("2. the handler gets a frozen copy: mutating the caller's object later changes nothing", async () => {
    const { gate, store } = setup();
    const input = { id: "n1", text: "original" };
    const { grant } = await approve(gate, "notes.add_note", input);
    const pending = gate.invoke("notes.add_note", input, { ...base, approval: grant });
    input.text = "changed after the call";
    expect((await pending).status).toBe("ok");
    expect(store.notes.get("n1")).toBe("original");
  });
});
