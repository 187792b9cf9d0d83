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
