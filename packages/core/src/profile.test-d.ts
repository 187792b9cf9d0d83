import { expectTypeOf, it } from "vitest";
import type { DataClass, RiskLevel } from "./manifest.js";
import { defineProfile, type InjectionPolicy, type Profile } from "./profile.js";

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
