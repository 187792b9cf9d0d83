import { describe, expect, it } from "vitest";
import { setup, base, full } from "../fixtures/gate-harness.js";

describe("gate step: resolve", () => {
  it("1. unknown tool: refused and journaled, nothing else runs", async () => {
    const { gate, calls, writes, journal } = setup();
    const result = await gate.invoke("notes.does_not_exist", { id: "x" }, base);
    expect(result).toMatchObject({ status: "error", code: "unknown_tool", boundary: "pre_effect_refusal" });
    expect(result.receipt).not.toBeNull();
    expect(writes()).toEqual([]);
    expect(calls("notes.add_note")).toBe(0);
    const events = await journal.readAudit();
    expect(events.map((e) => e.type)).toEqual(["call.refused"]);
    expect(events[0]!.data).toMatchObject({ code: "unknown_tool" });
  });

  it("1. an unknown id from a model cannot be a prototype key", async () => {
    const { gate } = setup();
    for (const id of ["__proto__", "constructor", "toString", "hasOwnProperty"]) {
      expect(await gate.invoke(id, {}, base)).toMatchObject({ status: "error", code: "unknown_tool" });
    }
  });

  it("malformed call options from the host are refused and journaled", async () => {
    const { gate, journal } = setup();
    expect(await gate.invoke("notes.word_count", { text: "a" }, { principal: "", tenant: "t", profile: full })).toMatchObject({
      status: "error",
      code: "config_invalid",
    });
    expect(await gate.invoke("notes.word_count", { text: "a" }, { ...base, idempotencyKey: "" })).toMatchObject({ status: "error", code: "config_invalid" });
    expect((await journal.readAudit()).filter((e) => e.type === "call.refused")).toHaveLength(2);
  });

  it("a profile not made by defineProfile is refused, never thrown on and never honoured stale", async () => {
    const { gate, calls } = setup();
    const input = { text: "a b" };
    // Hand-built without egress (a policy check would read it), and a mutable copy whose token is revoked in place.
    const handBuilt = { name: "hand", allow: ["notes:read"], maxRisk: "low", consents: [], onInjection: "flag" } as unknown as typeof full;
    const mutable = { ...full, allow: [...full.allow] };
    for (const profile of [handBuilt, mutable, Object.freeze({ ...full, allow: [...full.allow] })]) {
      const result = await gate.invoke("notes.word_count", input, { ...base, profile });
      expect(result).toMatchObject({ status: "error", code: "config_invalid" });
      expect((result as { message: string }).message).toMatch(/profile \(from defineProfile/);
    }
    expect(calls("notes.word_count")).toBe(0);
    expect(await gate.invoke("notes.word_count", input, base)).toMatchObject({ status: "ok" });
  });

  it("a sound profile is remembered only when its fields are plain: a frozen profile with a getter is checked at every call", async () => {
    const { gate } = setup();
    const input = { text: "a b" };
    let allow: readonly string[] = full.allow;
    const shifty = Object.freeze(
      Object.defineProperty({ ...full }, "allow", {
        get: () => allow,
        enumerable: true,
      }),
    );
    expect(await gate.invoke("notes.word_count", input, { ...base, profile: shifty })).toMatchObject({ status: "ok" });
    allow = [...full.allow]; // no longer frozen: refused as any other unsound profile
    expect(await gate.invoke("notes.word_count", input, { ...base, profile: shifty })).toMatchObject({ status: "error", code: "config_invalid" });
    // The plain profile, remembered after its first call, still passes.
    expect(await gate.invoke("notes.word_count", input, base)).toMatchObject({ status: "ok" });
    expect(await gate.invoke("notes.word_count", input, base)).toMatchObject({ status: "ok" });
  });
});
