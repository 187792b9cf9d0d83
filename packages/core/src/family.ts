import { ToolError } from "./errors.js";
import type { AnyToolManifest } from "./manifest.js";

/** Tokens any family may require without declaring them: shared boundaries owned by core. */
export const SHARED_BOUNDARY_TOKENS = ["verifier:command", "workspace:write"] as const;
export type SharedBoundaryToken = (typeof SHARED_BOUNDARY_TOKENS)[number];

/** A named group of tools and the permission tokens they may require. */
export interface ToolFamily<
  TName extends string = string,
  TTools extends readonly AnyToolManifest[] = readonly AnyToolManifest[],
  TPermission extends string = string,
> {
  readonly name: TName;
  readonly tools: TTools;
  readonly permissions: readonly TPermission[];
  /** Optional human description, rendered in operator docs. */
  readonly description?: string;
  /** `process` for tools served by a tool process; default `in-process`. */
  readonly kind?: "in-process" | "process";
}

export interface FamilyDefinition<
  TName extends string,
  TTools extends readonly AnyToolManifest[],
  TPermission extends string,
> {
  readonly name: TName;
  readonly tools: TTools;
  /** The family's `as const` list of tokens. */
  readonly permissions: readonly TPermission[];
  readonly description?: string;
  readonly kind?: "in-process" | "process";
}

/**
 * Group manifests into a family. Every tool id must start with `<name>.`, and every token a tool
 * requires must be one of `permissions` or a shared boundary token.
 */
export function defineFamily<
  const TName extends string,
  const TTools extends readonly AnyToolManifest[],
  const TPermission extends string,
>(definition: FamilyDefinition<TName, TTools, TPermission>): ToolFamily<TName, TTools, TPermission> {
  const { name, tools, permissions } = definition;
  const problems: string[] = [];
  if (typeof name !== "string" || !/^[a-z][a-z0-9_]*$/.test(name)) problems.push(`family name ${JSON.stringify(name)} must be a lower-case word`);
  if (!Array.isArray(tools) || tools.length === 0) problems.push("a family needs at least one tool");
  if (!Array.isArray(permissions)) problems.push("permissions must be an array");
  const declared = new Set<string>([...(permissions ?? []), ...SHARED_BOUNDARY_TOKENS]);
  const seen = new Set<string>();
  for (const tool of tools ?? []) {
    if (!tool.id.startsWith(`${name}.`)) problems.push(`tool ${tool.id} does not belong to family ${name} (ids start with "${name}.")`);
    if (seen.has(tool.id)) problems.push(`tool ${tool.id} appears twice`);
    seen.add(tool.id);
    const undeclared = tool.requiredAllowlist.filter((token: string) => !declared.has(token));
    if (undeclared.length > 0) {
      problems.push(`tool ${tool.id} requires ${undeclared.join(", ")}, not in the family's permissions [${(permissions ?? []).join(", ")}]`);
    }
  }
  for (const token of permissions ?? []) {
    if (SHARED_BOUNDARY_TOKENS.includes(token as SharedBoundaryToken)) continue;
    if (!token.startsWith(`${name}:`)) problems.push(`permission ${token} must be family-specific ("${name}:…")`);
  }
  if (problems.length > 0) {
    throw new ToolError("family_invalid", `family ${JSON.stringify(name)} is invalid: ${problems.join("; ")}`, {
      details: { family: name, problems },
    });
  }
  return Object.freeze({
    name,
    tools: Object.freeze([...tools]) as unknown as TTools,
    permissions: Object.freeze([...permissions]),
    ...(definition.description === undefined ? {} : { description: definition.description }),
    ...(definition.kind === undefined ? {} : { kind: definition.kind }),
  });
}
