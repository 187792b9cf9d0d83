import { pointerSegment, pointerSegments } from "./edit-fields.js";
import { editableFor } from "./gate/edit-allowance.js";
import { limitsFor } from "./limits/match.js";
import type { AnyToolManifest } from "./manifest.js";
import { evaluatePolicy } from "./policy.js";
import type { Profile } from "./profile.js";
import { isJudged, mayWaive, rulesUnder } from "./provenance/under-profile.js";
import type { ProvenanceRules } from "./provenance/types.js";
import { registryInternals, type ToolDescriptor, type ToolRegistry } from "./registry.js";

export interface BuildInventoryOptions {
  /** Profiles to check each tool against. */
  readonly profiles?: readonly Profile[];
}

/** One tool as an operator sees it: every declared fact plus who can reach it. */
export interface InventoryEntry extends ToolDescriptor {
  /** `in-process` for TypeScript families, `process` for tool processes. */
  readonly kind: "in-process" | "process";
  /** Tools that are neither `none` nor `read` change state somewhere. */
  readonly mutates: boolean;
  /** Profiles whose tokens, risk ceiling, consents and egress all allow the tool. */
  readonly reachableBy: readonly string[];
  /** Profiles that cannot reach it, and why. */
  readonly refusedBy: readonly { readonly profile: string; readonly reason: string }[];
  /** The limits that bound its calls, for each profile that reaches it, in the profile's order. */
  readonly limits: readonly InventoryLimit[];
  /**
   * What an approver may edit before a call runs: the manifest's fields (`false`: nothing, `[""]`: the
   * whole input), each reaching profile that narrows them, and warnings (an editable id: a preview of
   * the edit reads whatever object it names, as the caller).
   */
  readonly edits: {
    readonly fields: false | readonly string[];
    readonly profiles: readonly { readonly profile: string; readonly fields: false | readonly string[] }[];
    readonly warnings: readonly string[];
  };
  /**
   * What provenance does with its calls made in a session (`gate.openSession`): the manifest's rules
   * (`null`: none declared), and for each reaching profile under which its calls are judged (a
   * write or destructive tool, or one with rules) what that profile makes of a judgement.
   */
  readonly provenance: {
    readonly rules: ProvenanceRules | null;
    readonly profiles: readonly InventoryProvenance[];
  };
}

/** Provenance for one tool under one profile, as the gate's provenance step applies it. */
export interface InventoryProvenance {
  readonly profile: string;
  /** A destination not from trusted data: asked of a human (`ask`, the default) or refused. */
  readonly onViolation: "ask" | "refuse";
  /** The profile lets calls whose every judged value is trusted skip the manifest's approval. */
  readonly trustedSkipsApproval: boolean;
  /** Whether that can happen for this tool: never a destructive one, a tool that never asks, nor one two approvers must approve. */
  readonly waivable: boolean;
  /** The rules in force: the manifest's, with the profile's for the tool id and for `family.*` added. */
  readonly rules: { readonly destinations: readonly string[]; readonly content: readonly string[] };
  /** The pointers the profile adds to the manifest's (empty when it adds none). */
  readonly added: { readonly destinations: readonly string[]; readonly content: readonly string[] };
}

/** One limit of one profile on a tool: a window (`per`, `max`, `windowMs`) or calls in flight per worker (`maxConcurrent`). */
export interface InventoryLimit {
  readonly profile: string;
  /** The limit's id: its name, or the one derived from its tools, scope and window. */
  readonly limit: string;
  readonly per?: "principal" | "tenant" | "profile";
  readonly max?: number;
  readonly windowMs?: number;
  readonly maxConcurrent?: number;
}

export interface Inventory {
  /** The registry's fingerprint: two inventories with the same one describe the same tools. */
  readonly fingerprint: string;
  readonly families: readonly {
    readonly name: string;
    readonly kind: "in-process" | "process";
    readonly permissions: readonly string[];
    readonly description?: string;
  }[];
  readonly profiles: readonly string[];
  readonly tools: readonly InventoryEntry[];
}

/** The capability inventory: every tool, hidden ones included, checked against every profile. */
export function buildInventory(registry: ToolRegistry, options: BuildInventoryOptions = {}): Inventory {
  const profiles = options.profiles ?? [];
  const { tools, families } = registryInternals(registry);
  const kindOf = new Map(families.map((f) => [f.name, f.kind ?? "in-process"] as const));
  return {
    fingerprint: registry.fingerprint(),
    families: families.map((f) => ({
      name: f.name,
      kind: f.kind ?? "in-process",
      permissions: [...f.permissions],
      ...(f.description === undefined ? {} : { description: f.description }),
    })),
    profiles: profiles.map((p) => p.name),
    tools: [...tools.values()].map(({ manifest, descriptor }) => {
      const reachableBy: string[] = [];
      const refusedBy: { profile: string; reason: string }[] = [];
      const limits: InventoryLimit[] = [];
      const fields = editableFor(manifest, undefined);
      const narrowed: { profile: string; fields: false | readonly string[] }[] = [];
      const judged: InventoryProvenance[] = [];
      for (const profile of profiles) {
        const decision = evaluatePolicy(manifest, profile);
        if (decision.kind !== "allow") {
          refusedBy.push({ profile: profile.name, reason: reasonText(decision) });
          continue;
        }
        reachableBy.push(profile.name);
        const own = editableFor(manifest, profile);
        if (JSON.stringify(own) !== JSON.stringify(fields)) narrowed.push({ profile: profile.name, fields: own });
        const underProfile = provenanceUnder(manifest, profile);
        if (underProfile !== undefined) judged.push(underProfile);
        for (const l of limitsFor(profile, manifest.id))
          limits.push(
            l.kind === "window"
              ? { profile: profile.name, limit: l.id, per: l.per, max: l.max, windowMs: l.windowMs }
              : { profile: profile.name, limit: l.id, maxConcurrent: l.maxConcurrent },
          );
      }
      return {
        ...descriptor,
        kind: kindOf.get(descriptor.family) ?? "in-process",
        mutates: descriptor.effect === "write" || descriptor.effect === "destructive",
        reachableBy,
        refusedBy,
        limits,
        edits: { fields, profiles: narrowed, warnings: idWarnings(fields, descriptor.inputSchema) },
        provenance: { rules: manifest.provenance ?? null, profiles: judged },
      };
    }),
  };
}

/**
 * What the provenance step does with this tool's calls under `profile` (the step's own merge: the
 * manifest's rules, the profile's for the tool id, then for `family.*`); undefined when its calls
 * are not judged (neither a write nor destructive, and no rules).
 */
function provenanceUnder(manifest: AnyToolManifest, profile: Profile): InventoryProvenance | undefined {
  const { rules, added } = rulesUnder(manifest, profile);
  if (!isJudged(manifest, rules)) return undefined;
  const trustedSkipsApproval = profile.provenance?.trustedSkipsApproval === true;
  return {
    profile: profile.name,
    onViolation: profile.provenance?.onViolation ?? "ask",
    trustedSkipsApproval,
    waivable: trustedSkipsApproval && manifest.approval !== "never" && mayWaive(manifest, profile),
    rules: { destinations: rules.destinations ?? [], content: rules.content ?? [] },
    added: { destinations: added.destinations ?? [], content: added.content ?? [] },
  };
}

/** Editable fields named like ids (`…Id`, `…_id`, `id`); for the whole input, its top-level members so named. */
function idWarnings(fields: false | readonly string[], inputSchema: unknown): string[] {
  if (fields === false) return [];
  const idLike = (name: string | undefined) => name !== undefined && /(^|[a-z0-9_])(id|Id|ID)$/.test(name);
  const props = (inputSchema as { properties?: Record<string, unknown> } | undefined)?.properties ?? {};
  const named = fields
    .flatMap((f) => (f === "" ? Object.keys(props).map((k) => `/${pointerSegment(k)}`) : [f]))
    .filter((f) => idLike(pointerSegments(f).at(-1)));
  return named.map((f) => `${f} is editable: an approver's edit of an id makes the edit's preview read the object it names, as the caller`);
}

function reasonText(decision: ReturnType<typeof evaluatePolicy>): string {
  switch (decision.kind) {
    case "allow":
      return "allowed";
    case "missing_tokens":
      return `missing ${decision.missing.join(", ")}`;
    case "risk_exceeded":
      return `risk ${decision.risk} above ${decision.maxRisk}`;
    case "consent_missing":
      return `consent ${decision.missing.join(", ")} not granted`;
    case "egress_refused":
      return `${decision.dataClass} egress to ${decision.provider} not allowed`;
  }
}
