/**
 * What a profile makes of a tool's provenance, in one place for the gate's provenance step and the
 * inventory: the rules in force, whether its calls are judged, whether one may skip its approval.
 */
import { isSideEffectful, type AnyToolManifest } from "../manifest.js";
import { needsTwoApprovers } from "../policy.js";
import type { Profile } from "../profile.js";
import { mergeRules } from "./judge.js";
import type { ProvenanceRules } from "./types.js";

/** The manifest's rules with the profile's for the tool id, then for `family.*`, added (`added`: the profile's part). */
export function rulesUnder(manifest: AnyToolManifest, profile: Profile): { readonly rules: ProvenanceRules; readonly added: ProvenanceRules } {
  const extra = profile.provenance?.tools;
  const added = mergeRules(extra?.[manifest.id], extra?.[`${manifest.id.slice(0, manifest.id.indexOf("."))}.*`]);
  return { rules: mergeRules(manifest.provenance, added), added };
}

/** A side-effectful tool's calls are judged, and any tool's whose rules name something. */
export function isJudged(manifest: AnyToolManifest, rules: ProvenanceRules): boolean {
  return isSideEffectful(manifest.effect) || (rules.destinations?.length ?? 0) + (rules.content?.length ?? 0) > 0;
}

/**
 * Whether a trusted call may skip the approval its manifest asks for: never a destructive one (an
 * injection can ask for one with trusted data alone: archive the page the operator named), nor one
 * the profile wants two approvers for.
 */
export function mayWaive(manifest: AnyToolManifest, profile: Profile): boolean {
  return manifest.effect !== "destructive" && !needsTwoApprovers(manifest, profile);
}
