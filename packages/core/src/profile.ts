import { z } from "zod";
import { ToolError } from "./errors.js";
import { DATA_CLASSES, RISK_LEVELS } from "./manifest.js";
import { problemsOf } from "./schema-problems.js";

const tokenProblem = (issue: { readonly input?: unknown }) => `token ${JSON.stringify(issue.input)} must be an exact "area:verb" token (no wildcards)`;

/**
 * A named grant of capability. A tool is reachable only when the profile holds **every** token it
 * requires, its risk is at most `maxRisk`, its consents are granted, and its data class may egress.
 * Parsing a definition yields the frozen profile: defaults filled in, repeated tokens dropped.
 */
export const profileSchema = z
  .object({
    name: z.string({ error: "name must be a short identifier" }).regex(/^[a-z0-9][a-z0-9_.-]*$/i, { error: "name must be a short identifier" }),
    /** Exact `area:verb` tokens; no wildcards. */
    allow: z
      .array(
        z.string({ error: tokenProblem }).refine((token) => token.includes(":") && !token.includes("*"), { error: tokenProblem }),
        {
          error: "allow must be an array of tokens",
        },
      )
      .transform((tokens) => Object.freeze([...new Set(tokens)])),
    /** The riskiest tool the profile may reach. */
    maxRisk: z.enum(RISK_LEVELS, { error: `maxRisk must be one of ${RISK_LEVELS.join(", ")}` }),
    /** Consents granted (e.g. `send-email-on-my-behalf`). Default none. */
    consents: z.array(z.string()).default([]).readonly(),
    /** Data classes allowed to leave for a provider (tools with `dataEgress: true`). Default none. */
    egress: z
      .array(z.enum(DATA_CLASSES, { error: (issue) => `egress class ${JSON.stringify(issue.input)} must be one of ${DATA_CLASSES.join(", ")}` }))
      .default([])
      .readonly(),
    /** What a flagged untrusted result does: pass with a flag, or wait for a human. Default `flag`. */
    onInjection: z.enum(["flag", "hold"], { error: 'onInjection must be "flag" or "hold"' }).default("flag"),
    /** Calls at or above this risk need two distinct approvers. Default none (one approver). */
    twoPersonFrom: z.enum(RISK_LEVELS, { error: `twoPersonFrom must be one of ${RISK_LEVELS.join(", ")}` }).optional(),
  })
  .readonly();

/** A defined profile: the parsed definition, frozen, with its tokens typed. */
export type Profile<TToken extends string = string> = Omit<z.output<typeof profileSchema>, "allow"> & { readonly allow: readonly TToken[] };
/** What `defineProfile` takes: the schema's input, with the tokens typed. */
export type ProfileDefinition<TToken extends string> = Omit<z.input<typeof profileSchema>, "allow"> & { readonly allow: readonly TToken[] };
export type InjectionPolicy = Profile["onInjection"];

export function defineProfile<const TToken extends string>(definition: ProfileDefinition<TToken>): Profile<TToken> {
  const parsed = profileSchema.safeParse(definition);
  if (!parsed.success) {
    const problems = problemsOf(parsed.error);
    throw new ToolError("profile_invalid", `profile ${JSON.stringify(definition?.name)} is invalid: ${problems.join("; ")}`, { details: { problems } });
  }
  return parsed.data as Profile<TToken>;
}
