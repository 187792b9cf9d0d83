import { match } from "ts-pattern";
import { ToolError } from "./errors.js";
import { riskRank, type AnyToolManifest, type DataClass, type RiskLevel } from "./manifest.js";
import type { Profile } from "./profile.js";

/** The outcome of checking one tool against one profile: data, matched exhaustively. */
export type PolicyDecision =
  | { readonly kind: "allow" }
  | { readonly kind: "missing_tokens"; readonly missing: readonly string[] }
  | { readonly kind: "risk_exceeded"; readonly risk: RiskLevel; readonly maxRisk: RiskLevel }
  | { readonly kind: "consent_missing"; readonly missing: readonly string[] }
  | { readonly kind: "egress_refused"; readonly dataClass: DataClass; readonly provider: string };

type PolicyTool = Pick<AnyToolManifest, "requiredAllowlist" | "risk" | "requiredConsent" | "dataEgress" | "dataClass" | "provider">;

/** Checks in order: tokens (all required), risk ceiling, consent, egress. The first failure wins. */
export function evaluatePolicy(tool: PolicyTool, profile: Profile): PolicyDecision {
  const held = new Set<string>(profile.allow);
  const missing = tool.requiredAllowlist.filter((t) => !held.has(t));
  if (missing.length > 0) return { kind: "missing_tokens", missing };
  if (riskRank(tool.risk) > riskRank(profile.maxRisk)) return { kind: "risk_exceeded", risk: tool.risk, maxRisk: profile.maxRisk };
  const consents = new Set(profile.consents);
  const missingConsent = tool.requiredConsent.filter((c) => !consents.has(c));
  if (missingConsent.length > 0) return { kind: "consent_missing", missing: missingConsent };
  if (tool.dataEgress) {
    // defineTool guarantees a dataClass whenever dataEgress is set; refuse if a hand-built one lacks it.
    const dataClass = tool.dataClass ?? "confidential";
    if (!profile.egress.includes(dataClass)) return { kind: "egress_refused", dataClass, provider: tool.provider ?? "unknown" };
  }
  return { kind: "allow" };
}

/** Turn a decision into the gate's refusal, or undefined to go on. */
export function refusalFor(toolId: string, profile: Profile, decision: PolicyDecision): ToolError | undefined {
  return match(decision)
    .with({ kind: "allow" }, () => undefined)
    .with(
      { kind: "missing_tokens" },
      (d) =>
        new ToolError("permission_denied", `profile ${profile.name} lacks ${d.missing.join(", ")} required by ${toolId}`, {
          details: { missing: d.missing, profile: profile.name },
        }),
    )
    .with(
      { kind: "risk_exceeded" },
      (d) =>
        new ToolError("risk_exceeded", `${toolId} is ${d.risk} risk; profile ${profile.name} allows at most ${d.maxRisk}`, {
          details: { risk: d.risk, maxRisk: d.maxRisk, profile: profile.name },
        }),
    )
    .with(
      { kind: "consent_missing" },
      (d) =>
        new ToolError("consent_required", `${toolId} needs consent ${d.missing.join(", ")}, not granted to profile ${profile.name}`, {
          details: { missing: d.missing, profile: profile.name },
        }),
    )
    .with(
      { kind: "egress_refused" },
      (d) =>
        new ToolError("egress_denied", `profile ${profile.name} does not allow ${d.dataClass} data to leave for ${d.provider} (${toolId})`, {
          details: { dataClass: d.dataClass, provider: d.provider, profile: profile.name },
        }),
    )
    .exhaustive();
}

/** Whether a call of `tool` under `profile` needs two distinct approvers (`twoPersonFrom` at or below its risk). */
export function needsTwoApprovers(tool: Pick<AnyToolManifest, "risk">, profile: Pick<Profile, "twoPersonFrom">): boolean {
  return profile.twoPersonFrom !== undefined && riskRank(tool.risk) >= riskRank(profile.twoPersonFrom);
}
