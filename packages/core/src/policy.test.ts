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
});
