import { describe, expect, it } from "vitest";
import { ToolError } from "./errors.js";
import { limitsFor } from "./limits/match.js";
import { defineProfile, type LimitDefinition, type Profile } from "./profile.js";

const withLimits = (limits: readonly unknown[]) => defineProfile({ name: "p", allow: [], maxRisk: "low", limits: limits as LimitDefinition[] });
const problemOf = (limits: readonly unknown[]): string => {
  try {
    withLimits(limits);
  } catch (error) {
    expect(ToolError.is(error, "profile_invalid")).toBe(true);
    return (error as ToolError).message;
  }
  throw new Error("the profile was accepted");
};
const sends = { tools: ["gmail.send_message"], per: "principal", max: 20, windowMs: 86_400_000 } as const;

describe("profile limits: refused", () => {
  it("refuses a limit mixing a window and a concurrency limit, or a window missing a field", () => {
    expect(problemOf([{ ...sends, maxConcurrent: 2 }])).toMatch(/limits\.0: a limit is a window .* not both: drop per, max, windowMs or maxConcurrent/);
    expect(problemOf([{ tools: "*", max: 5, maxConcurrent: 2 }])).toMatch(/not both: drop max or maxConcurrent/);
    expect(problemOf([{ tools: "*", per: "tenant", max: 5 }])).toMatch(/a window limit needs per, max and windowMs \(missing windowMs\)/);
    expect(problemOf([{ tools: "*" }])).toMatch(/missing per, max, windowMs/);
  });

  it("refuses unknown keys by name (a misspelt windowMs never silently drops the limit)", () => {
    expect(problemOf([{ ...sends, window: 60_000 }])).toMatch(/unknown key "window" \(a limit knows name, tools, per, max, windowMs, maxConcurrent\)/);
    expect(problemOf([{ ...sends, kind: "window", id: "x" }])).toMatch(/unknown keys "kind", "id"/);
  });

  it("refuses bounds outside the contract: max 1..1e6, windowMs 1 s..366 d, maxConcurrent 1..10000, whole numbers", () => {
    for (const max of [0, -1, 1_000_001, 1.5, "20", Number.NaN, Number.POSITIVE_INFINITY, null])
      expect(problemOf([{ ...sends, max }])).toMatch(/max must be a whole number from 1 to 1000000/);
    for (const windowMs of [999, 31_622_400_001, 60_000.5, "60000"])
      expect(problemOf([{ ...sends, windowMs }])).toMatch(/windowMs must be a whole number from 1000 to 31622400000/);
    for (const maxConcurrent of [0, 10_001, 2.5, "2"])
      expect(problemOf([{ tools: "*", maxConcurrent }])).toMatch(/maxConcurrent must be a whole number from 1 to 10000/);
    expect(problemOf([{ ...sends, per: "user" }])).toMatch(/per must be "principal", "tenant" or "profile"/);
  });

  it("refuses tool patterns that are neither a tool id nor family.*", () => {
    for (const bad of ["gmail", "gmail.*.x", "*.send", "Gmail.send", "gmail.send*", "", " gmail.send", "*", `a.${"b".repeat(63)}`])
      expect(problemOf([{ ...sends, tools: [bad] }])).toContain(`tool pattern ${JSON.stringify(bad)} must be a tool id`);
    expect(problemOf([{ ...sends, tools: ["gmail.send_message", 5] }])).toMatch(/limits\.0\.tools: tools must be "\*" or an array/);
    expect(problemOf([{ ...sends, tools: [] }])).toMatch(/tools must name at least one tool/);
    for (const tools of ["gmail.*", "all", 5, null, {}]) expect(problemOf([{ ...sends, tools }])).toMatch(/tools must be "\*" or an array/);
    expect(problemOf([{ ...sends, tools: Array.from({ length: 257 }, (_, i) => `a.t${i}`) }])).toMatch(/at most 256 patterns/);
  });

  it("refuses bad names, repeated ids (named or derived), too many limits, and limits that are not a list of objects", () => {
    for (const name of ["-x", "a/b", "a b", "", "x".repeat(65), 5]) expect(problemOf([{ ...sends, name }])).toMatch(/name must be a short identifier/);
    expect(
      problemOf([
        { ...sends, name: "s" },
        { tools: "*", maxConcurrent: 1, name: "s" },
      ]),
    ).toMatch(/limits\.1: the id "s" is taken by an earlier limit/);
    // The same tools in another order, or repeated, is the same count.
    const reordered = { ...sends, tools: ["gmail.send_message", "gmail.*", "gmail.send_message"] };
    expect(problemOf([{ ...sends, tools: ["gmail.*", "gmail.send_message"] }, reordered])).toMatch(
      /limits\.1: the id "gmail\.\*,gmail\.send_message\/principal\/86400000"/,
    );
    expect(
      problemOf([
        { ...sends, max: 1 },
        { ...sends, max: 2 },
      ]),
    ).toMatch(/is taken by an earlier limit/);
    expect(problemOf(Array.from({ length: 65 }, (_, i) => ({ ...sends, name: `l${i}` })))).toMatch(/at most 64 limits/);
    expect(problemOf([null])).toMatch(/each limit must be an object/);
    expect(problemOf([5])).toMatch(/each limit must be an object/);
    expect(() => defineProfile({ name: "p", allow: [], maxRisk: "low", limits: "none" as never })).toThrow(/limits must be an array of limits/);
  });
});

describe("profile limits: parsed", () => {
  it("parses windows and concurrency limits into frozen limits with ids (max is not in the id)", () => {
    const profile = withLimits([
      { name: "sends", ...sends },
      { tools: "*", per: "tenant", max: 600, windowMs: 60_000 },
      { tools: ["repo.check"], maxConcurrent: 2 },
      { tools: ["notes.*", "gmail.send_message"], per: "profile", max: 3, windowMs: 1_000 },
    ]);
    expect(profile.limits).toEqual([
      { kind: "window", id: "sends", tools: ["gmail.send_message"], per: "principal", max: 20, windowMs: 86_400_000 },
      { kind: "window", id: "*/tenant/60000", tools: "*", per: "tenant", max: 600, windowMs: 60_000 },
      { kind: "concurrent", id: "repo.check/concurrent", tools: ["repo.check"], maxConcurrent: 2 },
      { kind: "window", id: "gmail.send_message,notes.*/profile/1000", tools: ["gmail.send_message", "notes.*"], per: "profile", max: 3, windowMs: 1_000 },
    ]);
    expect(Object.isFrozen(profile.limits)).toBe(true);
    for (const limit of profile.limits) {
      expect(Object.isFrozen(limit)).toBe(true);
      if (limit.tools !== "*") expect(Object.isFrozen(limit.tools)).toBe(true);
    }
    expect(withLimits([{ ...sends, max: 5 }]).limits[0]!.id).toBe(withLimits([{ ...sends, max: 500 }]).limits[0]!.id);
  });

  it("defaults to no limits, and a parsed profile spread into defineProfile again keeps its limits", () => {
    const none = defineProfile({ name: "p", allow: [], maxRisk: "low" });
    expect(none.limits).toEqual([]);
    expect(Object.isFrozen(none.limits)).toBe(true);
    const named = withLimits([
      { name: "sends", ...sends },
      { tools: "*", maxConcurrent: 3 },
    ]);
    const again = defineProfile({ ...named, name: "q", onInjection: "hold" });
    expect(again.limits).toEqual(named.limits);
    // A copy of a parsed limit (not the one defineProfile made) is refused as unknown keys, not guessed at.
    expect(() => defineProfile({ ...named, limits: named.limits.map((l) => ({ ...l })) })).toThrow(/unknown keys "kind", "id"/);
  });
});

describe("limitsFor", () => {
  const profile = withLimits([
    { name: "sends", ...sends },
    { tools: ["gmail.*"], per: "tenant", max: 100, windowMs: 60_000 },
    { tools: "*", per: "profile", max: 1000, windowMs: 60_000 },
    { tools: ["repo.check"], maxConcurrent: 2 },
  ]);
  const ids = (toolId: string) => limitsFor(profile, toolId).map((l) => l.id);

  it("matches exact ids, family.* (that family only) and *, in the profile's order", () => {
    expect(ids("gmail.send_message")).toEqual(["sends", "gmail.*/tenant/60000", "*/profile/60000"]);
    expect(ids("gmail.list_messages")).toEqual(["gmail.*/tenant/60000", "*/profile/60000"]);
    expect(ids("gmailx.send_message")).toEqual(["*/profile/60000"]);
    expect(ids("gmail.send_message_2")).toEqual(["gmail.*/tenant/60000", "*/profile/60000"]);
    expect(ids("repo.check")).toEqual(["*/profile/60000", "repo.check/concurrent"]);
    expect(ids("nodot")).toEqual(["*/profile/60000"]);
  });

  it("is decided once per profile and tool; a profile without limits shares one empty array", () => {
    expect(limitsFor(profile, "gmail.send_message")).toBe(limitsFor(profile, "gmail.send_message"));
    expect(Object.isFrozen(limitsFor(profile, "gmail.send_message"))).toBe(true);
    const none = defineProfile({ name: "n", allow: [], maxRisk: "low" });
    const other = defineProfile({ name: "m", allow: [], maxRisk: "low", limits: [] });
    expect(limitsFor(none, "a.b")).toBe(limitsFor(other, "c.d"));
    expect(limitsFor(withLimits([{ ...sends }]), "notes.add_note")).toBe(limitsFor(none, "a.b"));
  });

  it("refuses limits defineProfile did not make (not frozen, malformed) with config_invalid", () => {
    const base = defineProfile({ name: "h", allow: [], maxRisk: "low" });
    const forged = (limits: unknown) => Object.freeze({ ...base, limits }) as unknown as Profile;
    const good = () => ({ kind: "window", id: "x", tools: Object.freeze(["a.b"]), per: "tenant", max: 1, windowMs: 1_000 });
    for (const limits of [
      [Object.freeze(good())], // the list not frozen
      Object.freeze([good()]), // the limit not frozen
      Object.freeze([Object.freeze({ ...good(), max: 0 })]),
      Object.freeze([Object.freeze({ ...good(), tools: ["a.b"] })]),
      Object.freeze([Object.freeze({ ...good(), kind: "other" })]),
      Object.freeze([Object.freeze(good()), Object.freeze(good())]),
      Object.freeze([Object.freeze({ kind: "concurrent", id: "c", tools: "*", maxConcurrent: 0 })]),
      null,
      5,
      "x",
    ]) {
      expect(() => limitsFor(forged(limits), "a.b")).toThrow(expect.objectContaining({ code: "config_invalid" }));
    }
    expect(limitsFor(forged(Object.freeze([Object.freeze(good())])), "a.b")).toHaveLength(1);
    expect(limitsFor(forged(undefined), "a.b")).toEqual([]);
  });
});
