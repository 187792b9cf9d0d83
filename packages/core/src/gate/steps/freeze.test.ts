import { describe, expect, it } from "vitest";
import { z } from "zod";
import { defineFamily } from "../../family.js";
import { createMemoryJournal } from "../../journal/memory.js";
import { defineProfile } from "../../profile.js";
import { createToolRegistry } from "../../registry.js";
import { tool } from "../fixtures/one-tool.js";
import { createGate } from "../gate.js";
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

  it("2. input larger than maxInputBytes in UTF-8 is refused, however few characters it has; at the limit it passes", async () => {
    const echo = tool({ input: z.object({ t: z.string() }), handler: (input: { t: string }) => input });
    const registry = createToolRegistry({ families: [defineFamily({ name: "x", tools: [echo], permissions: ["x:use"] })] });
    const gate = createGate({ registry, journal: createMemoryJournal(), maxInputBytes: 30 });
    const call = { principal: "a", tenant: "t", profile: defineProfile({ name: "p", allow: ["x:use"], maxRisk: "low" }) };
    // {"t":"…"} is 8 bytes around the text: 22 bytes of text fit.
    const cases: [string, string][] = [
      ["a".repeat(22), "ok"],
      ["a".repeat(23), "error"],
      ["€".repeat(7) + "a", "ok"], // 8 characters, 22 bytes
      ["€".repeat(8), "error"], // 8 characters, 24 bytes (the text is 16 characters in all, under the limit in length)
      ["😀".repeat(5) + "aa", "ok"], // 22 bytes
      ["😀".repeat(6), "error"], // 24 bytes
    ];
    for (const [t, status] of cases) {
      const result = await gate.invoke("x.t", { t }, call);
      expect({ t, status: result.status, code: result.status === "error" ? result.code : undefined }).toEqual({
        t,
        status,
        code: status === "error" ? "invalid_input" : undefined,
      });
    }
  });
});
