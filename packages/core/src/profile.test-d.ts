import { expectTypeOf, it } from "vitest";
import type { DataClass, RiskLevel } from "./manifest.js";
import { defineProfile, type InjectionPolicy, type Profile, type ProfileLimit } from "./profile.js";

it("infers the profile's types from its schema, with the tokens as literals", () => {
  const profile = defineProfile({ name: "p", allow: ["repo:read", "repo:write"], maxRisk: "low" });
  expectTypeOf(profile.allow).toEqualTypeOf<readonly ("repo:read" | "repo:write")[]>();
  expectTypeOf<Profile["maxRisk"]>().toEqualTypeOf<RiskLevel>();
  expectTypeOf<Profile["egress"]>().toEqualTypeOf<readonly DataClass[]>();
  expectTypeOf<Profile["consents"]>().toEqualTypeOf<readonly string[]>();
  expectTypeOf<InjectionPolicy>().toEqualTypeOf<"flag" | "hold">();
  defineProfile({ name: "p", allow: profile.allow, maxRisk: "high", consents: ["c"], egress: ["personal"], onInjection: "hold" });
  // @ts-expect-error an unknown risk
  defineProfile({ name: "p", allow: [], maxRisk: "extreme" });
  // @ts-expect-error an unknown data class
  defineProfile({ name: "p", allow: [], maxRisk: "low", egress: ["everything"] });
  // @ts-expect-error maxRisk is required
  defineProfile({ name: "p", allow: [] });
});

it("types a profile's limits: a window or a concurrency limit, as defined and as parsed", () => {
  const profile = defineProfile({
    name: "p",
    allow: [],
    maxRisk: "low",
    limits: [
      { tools: ["gmail.send_message"], per: "principal", max: 20, windowMs: 86_400_000 },
      { name: "checks", tools: "*", maxConcurrent: 2 },
    ],
  });
  expectTypeOf(profile.limits).toEqualTypeOf<readonly ProfileLimit[]>();
  defineProfile({ ...profile, name: "q" });
  // @ts-expect-error per must be one of principal, tenant, profile
  defineProfile({ name: "p", allow: [], maxRisk: "low", limits: [{ tools: "*", per: "user", max: 1, windowMs: 1000 }] });
  // @ts-expect-error a window limit needs windowMs
  defineProfile({ name: "p", allow: [], maxRisk: "low", limits: [{ tools: "*", per: "tenant", max: 1 }] });
});
