/**
 * Profiles as the composition file gives them, checked strictly: a key the gate does not know is
 * refused by name, never dropped (a misspelt `twoPersonFrom` would silently turn the two-person
 * rule off), and `twoPersonFrom` (calls at or above this risk need two distinct approvers) is kept.
 */
import { z } from "zod";
import { RISK_LEVELS, ToolError, profileSchema, type Profile, type RiskLevel } from "@toolgate/core";

/** A profile with the two-person rule; the core's `Profile` carries the same field. */
export type ConfigProfile = Profile & { readonly twoPersonFrom?: RiskLevel };

const shape = { ...profileSchema.unwrap().shape };
const known = [...new Set([...Object.keys(shape), "twoPersonFrom"])];

/** One profile of a composition file: the core's profile schema, `twoPersonFrom`, and no other key. */
export const configProfileSchema: z.ZodType<ConfigProfile, unknown> = z
  .strictObject(
    {
      ...shape,
      twoPersonFrom: z.enum(RISK_LEVELS, { error: `twoPersonFrom must be one of ${RISK_LEVELS.join(", ")}` }).optional(),
    },
    {
      error: (issue) =>
        issue.code === "unrecognized_keys"
          ? `unknown key${issue.keys.length > 1 ? "s" : ""} ${issue.keys.map((k) => JSON.stringify(k)).join(", ")} (a profile knows ${known.join(", ")})`
          : "must be a profile object",
    },
  )
  .transform((profile) => Object.freeze(profile) as ConfigProfile);

/** Check the profiles a JavaScript or TypeScript composition file made (it is not otherwise parsed). */
export function checkProfiles(file: string, profiles: readonly unknown[]): readonly ConfigProfile[] {
  const problems: string[] = [];
  const parsed = profiles.map((profile, index) => {
    const result = configProfileSchema.safeParse(profile);
    if (result.success) return result.data;
    const name = (profile as { name?: unknown } | null)?.name;
    const where = `profiles.${index}${typeof name === "string" ? ` (${name})` : ""}`;
    for (const issue of result.error.issues) problems.push(`${[where, ...issue.path.map(String)].join(".")}: ${issue.message}`);
    return undefined;
  });
  if (problems.length > 0)
    throw new ToolError("config_invalid", `${file} is invalid: ${problems.join("; ")}`, {
      details: { problems, hint: `fix the profiles in ${file}, then run the command again` },
    });
  const names = new Set<string>();
  for (const profile of parsed as ConfigProfile[]) {
    if (names.has(profile.name)) throw new ToolError("config_invalid", `${file} is invalid: two profiles are named ${JSON.stringify(profile.name)}`);
    names.add(profile.name);
  }
  return Object.freeze(parsed as ConfigProfile[]);
}

/** What a tool lets an approver edit: its manifest's `edits` (absent = the whole input, `""`). */
type EditsDeclaration = false | { readonly fields: readonly string[] } | undefined;

/** The families as composed: enough to find each tool's manifest `edits` by family. */
export interface ComposedFamilies {
  readonly families: readonly { readonly name: string; readonly tools: readonly { readonly id: string; readonly edits?: EditsDeclaration }[] }[];
}

/** `path` is `prefix` or lies under it (JSON Pointers; `""` is the whole input). */
const isUnder = (path: string, prefix: string): boolean => prefix === "" || path === prefix || path.startsWith(`${prefix}/`);

/** The JSON Schema at a pointer, following `properties` only (an edit names object members, never array items). */
function namesProperty(schema: unknown, pointer: string): boolean {
  let at = schema as { properties?: Record<string, unknown> } | undefined;
  for (const raw of pointer.split("/").slice(1)) {
    const name = raw.replace(/~1/g, "/").replace(/~0/g, "~");
    const next = at?.properties && Object.hasOwn(at.properties, name) ? at.properties[name] : undefined;
    if (next === undefined) return false;
    at = next as typeof at;
  }
  return true;
}

/** Why `field` is not an edit this tool allows, or undefined when it is (it narrows the manifest's list). */
function fieldProblem(tool: { readonly id: string; readonly edits?: EditsDeclaration }, field: string, schema: unknown): string | undefined {
  const allowed = tool.edits === false ? false : (tool.edits?.fields ?? [""]);
  if (allowed === false) return `${tool.id} refuses edits (use false)`;
  const under = allowed.find((m) => isUnder(field, m));
  if (under === undefined && !allowed.some((m) => isUnder(m, field)))
    return `${tool.id} does not let ${JSON.stringify(field)} be edited (it allows ${allowed.map((m) => JSON.stringify(m)).join(", ")})`;
  if (under !== undefined && field !== under && !namesProperty(schema, field)) return `${JSON.stringify(field)} names no member of ${tool.id}'s input`;
  return undefined;
}

/**
 * Check each profile's `approvalEdits` against the composed tools: a key that names no tool or
 * family, or a field no tool it names lets an approver edit, is `profile_invalid` when the
 * composition loads — a typo would otherwise silently allow nothing (or keep a field editable).
 */
export function checkApprovalEdits(file: string, profiles: readonly ConfigProfile[], composed: ComposedFamilies, schemaOf: (toolId: string) => unknown): void {
  const problems: string[] = [];
  for (const [index, profile] of profiles.entries()) {
    const edits = (profile as { approvalEdits?: Readonly<Record<string, false | readonly string[]>> }).approvalEdits;
    for (const [key, fields] of Object.entries(edits ?? {})) {
      const where = `profiles.${index} (${profile.name}).approvalEdits[${JSON.stringify(key)}]`;
      const family = key.endsWith(".*") ? composed.families.find((f) => f.name === key.slice(0, -2)) : undefined;
      const tools = family ? family.tools : composed.families.flatMap((f) => f.tools.filter((t) => t.id === key));
      if (tools.length === 0) {
        problems.push(`${where}: no ${key.endsWith(".*") ? "family" : "tool"} ${JSON.stringify(key.endsWith(".*") ? key.slice(0, -2) : key)} is composed`);
        continue;
      }
      if (fields === false) continue;
      for (const field of fields) {
        const why = tools.map((t) => fieldProblem(t, field, schemaOf(t.id)));
        if (why.every((w) => w !== undefined))
          problems.push(`${where}: ${why.length === 1 ? why[0]! : `no tool of ${key} lets ${JSON.stringify(field)} be edited`}`);
      }
    }
  }
  if (problems.length > 0)
    throw new ToolError("profile_invalid", `${file} is invalid: ${problems.join("; ")}`, {
      details: {
        problems,
        hint: `fix approvalEdits in ${file}: toolgate inventory lists the tools and families; a tool's manifest (edits) names the fields it lets an approver edit`,
      },
    });
}
