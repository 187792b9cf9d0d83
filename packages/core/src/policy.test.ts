import { describe, expect, it } from "vitest";
import { evaluatePolicy } from "./policy.js";
import { defineProfile } from "./profile.js";

const tool = {
  requiredAllowlist: ["repo:read", "verifier:command"],
  risk: "medium",
  requiredConsent: [],
  dataEgress: false,
} as const;

describe("evaluatePolicy", () => {
  it("requires every token: repo:read alone cannot reach a tool needing repo:read + verifier:command", () => {
    const profile = defineProfile({ name: "reader", allow: ["repo:read"], maxRisk: "critical" });
    expect(evaluatePolicy(tool, profile)).toEqual({ kind: "missing_tokens", missing: ["verifier:command"] });
    const both = defineProfile({ name: "checker", allow: ["repo:read", "verifier:command"], maxRisk: "critical" });
    expect(evaluatePolicy(tool, both)).toEqual({ kind: "allow" });
  });

  it("treats maxRisk as a ceiling", () => {
    expect(evaluatePolicy(tool, defineProfile({ name: "low", allow: tool.requiredAllowlist, maxRisk: "low" })).kind).toBe("risk_exceeded");
    expect(evaluatePolicy(tool, defineProfile({ name: "medium", allow: tool.requiredAllowlist, maxRisk: "medium" })).kind).toBe("allow");
  });

  it("checks egress per data class only for tools that send data out", () => {
    const egress = { ...tool, dataEgress: true, dataClass: "personal", provider: "notion" } as const;
    const profile = defineProfile({ name: "p", allow: tool.requiredAllowlist, maxRisk: "high", egress: ["public"] });
    expect(evaluatePolicy(egress, profile)).toEqual({ kind: "egress_refused", dataClass: "personal", provider: "notion" });
  });
});

describe("defineProfile", () => {
  it("refuses wildcards, unknown risk and unknown egress classes", () => {
    expect(() => defineProfile({ name: "p", allow: ["repo:*"], maxRisk: "low" })).toThrow(/no wildcards/);
    expect(() => defineProfile({ name: "p", allow: ["*"], maxRisk: "low" })).toThrow(/no wildcards/);
    expect(() => defineProfile({ name: "p", allow: [], maxRisk: "extreme" as never })).toThrow(/maxRisk/);
    expect(() => defineProfile({ name: "p", allow: [], maxRisk: "low", egress: ["everything" as never] })).toThrow(/egress class/);
  });

  it("lists every problem in one profile_invalid error, naming the bad values", () => {
    const bad = { name: "bad name!", allow: ["repo:*", 5], maxRisk: "extreme", egress: ["everything"], onInjection: "panic", consents: "x" };
    expect(() => defineProfile(bad as never)).toThrow(
      'profile "bad name!" is invalid: name must be a short identifier; allow.0: token "repo:*" must be an exact "area:verb" token (no wildcards); ' +
        'allow.1: token 5 must be an exact "area:verb" token (no wildcards); maxRisk must be one of low, medium, high, critical; ' +
        "consents: Invalid input: expected array, received string; " +
        'egress class "everything" must be one of public, internal, personal, confidential; onInjection must be "flag" or "hold"',
    );
    expect(() => defineProfile({ name: "p", allow: "repo:read" as never, maxRisk: "low" })).toThrow(
      expect.objectContaining({ code: "profile_invalid", message: expect.stringMatching(/allow must be an array of tokens/) }),
    );
  });

  it("returns a frozen profile with defaults filled in and repeated tokens dropped", () => {
    const profile = defineProfile({ name: "p", allow: ["repo:read", "repo:read"], maxRisk: "low" });
    expect(profile).toEqual({ name: "p", allow: ["repo:read"], maxRisk: "low", consents: [], egress: [], onInjection: "flag", limits: [] });
    for (const part of [profile, profile.allow, profile.consents, profile.egress, profile.limits]) expect(Object.isFrozen(part)).toBe(true);
  });
});
