import { ToolError } from "./errors.js";
import { DATA_CLASSES, RISK_LEVELS, type DataClass, type RiskLevel } from "./manifest.js";

/** What a flagged untrusted result does: pass with a flag, or wait for a human. */
export type InjectionPolicy = "flag" | "hold";

/**
 * A named grant of capability. A tool is reachable only when the profile holds **every** token it
 * requires, its risk is at most `maxRisk`, its consents are granted, and its data class may egress.
 */
export interface Profile<TToken extends string = string> {
  readonly name: string;
  readonly allow: readonly TToken[];
  readonly maxRisk: RiskLevel;
  readonly consents: readonly string[];
  /** Data classes allowed to leave for a provider (tools with `dataEgress: true`). */
  readonly egress: readonly DataClass[];
  readonly onInjection: InjectionPolicy;
}

export interface ProfileDefinition<TToken extends string> {
  readonly name: string;
  readonly allow: readonly TToken[];
  readonly maxRisk: RiskLevel;
  readonly consents?: readonly string[];
  readonly egress?: readonly DataClass[];
  /** Default `flag`. */
  readonly onInjection?: InjectionPolicy;
}

export function defineProfile<const TToken extends string>(definition: ProfileDefinition<TToken>): Profile<TToken> {
  const problems: string[] = [];
  if (typeof definition.name !== "string" || !/^[a-z0-9][a-z0-9_.-]*$/i.test(definition.name)) problems.push("name must be a short identifier");
  if (!Array.isArray(definition.allow)) problems.push("allow must be an array of tokens");
  else {
    for (const token of definition.allow) {
      if (typeof token !== "string" || !token.includes(":") || token.includes("*")) problems.push(`token ${JSON.stringify(token)} must be an exact "area:verb" token (no wildcards)`);
    }
  }
  if (!(RISK_LEVELS as readonly string[]).includes(definition.maxRisk)) problems.push(`maxRisk must be one of ${RISK_LEVELS.join(", ")}`);
  for (const c of definition.egress ?? []) {
    if (!(DATA_CLASSES as readonly string[]).includes(c)) problems.push(`egress class ${JSON.stringify(c)} must be one of ${DATA_CLASSES.join(", ")}`);
  }
  if (definition.onInjection !== undefined && definition.onInjection !== "flag" && definition.onInjection !== "hold") {
    problems.push('onInjection must be "flag" or "hold"');
  }
  if (problems.length > 0) {
    throw new ToolError("profile_invalid", `profile ${JSON.stringify(definition.name)} is invalid: ${problems.join("; ")}`, { details: { problems } });
  }
  return Object.freeze({
    name: definition.name,
    allow: Object.freeze([...new Set(definition.allow)]),
    maxRisk: definition.maxRisk,
    consents: Object.freeze([...(definition.consents ?? [])]),
    egress: Object.freeze([...(definition.egress ?? [])]),
    onInjection: definition.onInjection ?? "flag",
  });
}
