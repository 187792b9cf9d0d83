import { z } from "zod";
import { ToolError } from "./errors.js";
import type { AnyToolManifest } from "./manifest.js";
import { problemsOf } from "./schema-problems.js";

/** Tokens any family may require without declaring them: shared boundaries owned by core. */
export const SHARED_BOUNDARY_TOKENS = ["verifier:command", "workspace:write"] as const;
export type SharedBoundaryToken = (typeof SHARED_BOUNDARY_TOKENS)[number];

const isManifest = (value: unknown): value is AnyToolManifest =>
  typeof value === "object" &&
  value !== null &&
  typeof (value as AnyToolManifest).id === "string" &&
  Array.isArray((value as AnyToolManifest).requiredAllowlist);

/**
 * A named group of tools and the permission tokens they may require. Every tool id starts with
 * `<name>.`, and every token a tool requires is one of `permissions` or a shared boundary token.
 */
export const familySchema = z
  .object({
    name: z.string().regex(/^[a-z][a-z0-9_]*$/, { error: (issue) => `family name ${JSON.stringify(issue.input)} must be a lower-case word` }),
    tools: z
      .array(z.custom<AnyToolManifest>(isManifest, { error: "tools must be manifests made by defineTool" }), { error: "a family needs at least one tool" })
      .min(1, { error: "a family needs at least one tool" })
      .readonly(),
    /** The family's `as const` list of tokens. */
    permissions: z.array(z.string(), { error: "permissions must be an array" }).readonly(),
    /** Optional human description, rendered in operator docs. */
    description: z.string().optional(),
    /** `process` for tools served by a tool process; default `in-process`. */
    kind: z.enum(["in-process", "process"]).optional(),
  })
  .superRefine(({ name, tools, permissions }, ctx) => {
    const problem = (message: string) => ctx.addIssue({ code: "custom", message });
    const declared = new Set<string>([...permissions, ...SHARED_BOUNDARY_TOKENS]);
    const seen = new Set<string>();
    for (const tool of tools) {
      if (!tool.id.startsWith(`${name}.`)) problem(`tool ${tool.id} does not belong to family ${name} (ids start with "${name}.")`);
      if (seen.has(tool.id)) problem(`tool ${tool.id} appears twice`);
      seen.add(tool.id);
      const undeclared = tool.requiredAllowlist.filter((token: string) => !declared.has(token));
      if (undeclared.length > 0) problem(`tool ${tool.id} requires ${undeclared.join(", ")}, not in the family's permissions [${permissions.join(", ")}]`);
    }
    for (const token of permissions) {
      if (!SHARED_BOUNDARY_TOKENS.includes(token as SharedBoundaryToken) && !token.startsWith(`${name}:`)) {
        problem(`permission ${token} must be family-specific ("${name}:…")`);
      }
    }
  })
  .readonly();

type Typed<T, TName extends string, TTools, TPermission extends string> = Omit<T, "name" | "tools" | "permissions"> & {
  readonly name: TName;
  readonly tools: TTools;
  readonly permissions: readonly TPermission[];
};

/** A defined family: the parsed definition, frozen, with its name, tools and tokens typed. */
export type ToolFamily<
  TName extends string = string,
  TTools extends readonly AnyToolManifest[] = readonly AnyToolManifest[],
  TPermission extends string = string,
> = Typed<z.output<typeof familySchema>, TName, TTools, TPermission>;

/** What `defineFamily` takes: the schema's input, with name, tools and tokens typed. */
export type FamilyDefinition<TName extends string, TTools extends readonly AnyToolManifest[], TPermission extends string> = Typed<
  z.input<typeof familySchema>,
  TName,
  TTools,
  TPermission
>;

/**
 * Group manifests into a family. Every tool id must start with `<name>.`, and every token a tool
 * requires must be one of `permissions` or a shared boundary token.
 */
export function defineFamily<const TName extends string, const TTools extends readonly AnyToolManifest[], const TPermission extends string>(
  definition: FamilyDefinition<TName, TTools, TPermission>,
): ToolFamily<TName, TTools, TPermission> {
  const parsed = familySchema.safeParse(definition);
  if (!parsed.success) {
    const problems = problemsOf(parsed.error);
    throw new ToolError("family_invalid", `family ${JSON.stringify(definition?.name)} is invalid: ${problems.join("; ")}`, {
      details: { family: definition?.name, problems },
    });
  }
  return parsed.data as ToolFamily<TName, TTools, TPermission>;
}
