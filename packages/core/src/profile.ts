import { z } from "zod";
import { freezeRules, rulesProblems, type ProvenanceRules } from "./provenance/judge.js";
import { ToolError } from "./errors.js";
import { DATA_CLASSES, RISK_LEVELS, TOOL_ID_MAX_LENGTH, TOOL_ID_PATTERN } from "./manifest.js";
import { WINDOW_MAX, WINDOW_MS } from "./limits/window.js";
import { problemsOf } from "./schema-problems.js";
import { fieldListProblems } from "./edit-fields.js";

/**
 * A profile's limit, parsed. `window`: at most `max` calls of its tools per `per` (principal,
 * tenant, or the whole profile) in any `windowMs`, counted in the journal and shared by every
 * worker on it. `concurrent`: at most `maxConcurrent` calls of each of its tools in flight at once
 * on one gate. `id` names the limit's count: its `name`, or for a window limit
 * `<tools joined by ,>/<per>/<windowMs>` (so raising `max` keeps the count), for a concurrency
 * limit `<tools>/concurrent`. `tools` is `"*"` or tool ids and `family.*` patterns, sorted.
 */
export type ProfileLimit =
  | {
      readonly kind: "window";
      readonly id: string;
      readonly tools: "*" | readonly string[];
      readonly per: "principal" | "tenant" | "profile";
      readonly max: number;
      readonly windowMs: number;
    }
  | { readonly kind: "concurrent"; readonly id: string; readonly tools: "*" | readonly string[]; readonly maxConcurrent: number };

/** A limit as a profile declares it: a window (`per`, `max`, `windowMs`) or a concurrency limit (`maxConcurrent`). */
export type LimitDefinition =
  | {
      readonly name?: string;
      readonly tools: "*" | readonly string[];
      readonly per: "principal" | "tenant" | "profile";
      readonly max: number;
      readonly windowMs: number;
    }
  | { readonly name?: string; readonly tools: "*" | readonly string[]; readonly maxConcurrent: number };

/** The most limits one profile may declare (each window limit that applies is one journal read per call). */
export const MAX_PROFILE_LIMITS = 64;
export const MAX_CONCURRENT = { min: 1, max: 10_000 } as const;
const LIMIT_NAME = /^[a-z0-9][a-z0-9_.-]{0,63}$/i;
const FAMILY_PATTERN = /^[a-z][a-z0-9_]*\.\*$/;
const WINDOW_KEYS = ["per", "max", "windowMs"] as const;

const patternProblem = (issue: { readonly input?: unknown }) =>
  `tool pattern ${JSON.stringify(issue.input)} must be a tool id (family.verb_noun) or "family.*"`;
// A refinement, which the union below reports as it is (it names the bad pattern).
const toolPattern = z
  .string({ error: patternProblem })
  .refine((p) => p.length <= TOOL_ID_MAX_LENGTH && (TOOL_ID_PATTERN.test(p) || FAMILY_PATTERN.test(p)), { error: patternProblem });
const whole = (what: string, { min, max }: { readonly min: number; readonly max: number }) => {
  const error = `${what} must be a whole number from ${min} to ${max}`;
  return z.number({ error }).int({ error }).min(min, { error }).max(max, { error });
};

const limitSchema = z
  .strictObject(
    {
      name: z.string({ error: "name must be a short identifier (letters, digits, _ . -; at most 64)" }).regex(LIMIT_NAME, {
        error: "name must be a short identifier (letters, digits, _ . -; at most 64)",
      }),
      tools: z.union(
        [
          z.literal("*"),
          z
            .array(toolPattern)
            .min(1, { error: 'tools must name at least one tool or "family.*" (or be "*")' })
            .refine((tools) => tools.length <= 256, { error: "tools may name at most 256 patterns" }),
        ],
        { error: 'tools must be "*" or an array of tool ids and "family.*" patterns' },
      ),
      per: z.enum(["principal", "tenant", "profile"], { error: 'per must be "principal", "tenant" or "profile"' }),
      max: whole("max", WINDOW_MAX),
      windowMs: whole("windowMs", WINDOW_MS),
      maxConcurrent: whole("maxConcurrent", MAX_CONCURRENT),
    },
    {
      error: (issue) =>
        issue.code === "unrecognized_keys"
          ? `unknown key${issue.keys.length > 1 ? "s" : ""} ${issue.keys.map((k) => JSON.stringify(k)).join(", ")} (a limit knows name, tools, per, max, windowMs, maxConcurrent)`
          : "each limit must be an object",
    },
  )
  .partial({ name: true, per: true, max: true, windowMs: true, maxConcurrent: true })
  .superRefine((limit, ctx) => {
    const windowKeys = WINDOW_KEYS.filter((key) => limit[key] !== undefined);
    if (limit.maxConcurrent !== undefined && windowKeys.length > 0)
      ctx.addIssue({
        code: "custom",
        message: `a limit is a window (per, max, windowMs) or a concurrency limit (maxConcurrent), not both: drop ${windowKeys.join(", ")} or maxConcurrent`,
      });
    else if (limit.maxConcurrent === undefined && windowKeys.length < WINDOW_KEYS.length)
      ctx.addIssue({
        code: "custom",
        message: `a window limit needs per, max and windowMs (missing ${WINDOW_KEYS.filter((key) => limit[key] === undefined).join(", ")}); a concurrency limit gives maxConcurrent alone`,
      });
  })
  .transform((limit): ProfileLimit => {
    const tools = limit.tools === "*" ? "*" : Object.freeze([...new Set(limit.tools)].sort());
    const toolsText = tools === "*" ? "*" : tools.join(",");
    const { name, per, max, windowMs, maxConcurrent } = limit;
    const parsed: ProfileLimit =
      maxConcurrent !== undefined
        ? Object.freeze({ kind: "concurrent", id: name ?? `${toolsText}/concurrent`, tools, maxConcurrent })
        : Object.freeze({ kind: "window", id: name ?? `${toolsText}/${per}/${windowMs}`, tools, per: per!, max: max!, windowMs: windowMs! });
    DEFINITION_OF.set(parsed, limit as LimitDefinition);
    return parsed;
  });

/** What a parsed limit was defined as: a profile spread into `defineProfile` again keeps its limits. */
const DEFINITION_OF = new WeakMap<ProfileLimit, LimitDefinition>();

const NO_LIMITS: readonly ProfileLimit[] = Object.freeze([]);
const limitsSchema = z
  .array(
    z.preprocess((value) => DEFINITION_OF.get(value as ProfileLimit) ?? value, limitSchema),
    { error: "limits must be an array of limits" },
  )
  .max(MAX_PROFILE_LIMITS, { error: `a profile may declare at most ${MAX_PROFILE_LIMITS} limits` })
  .superRefine((limits, ctx) => {
    const seen = new Set<string>();
    for (const [index, limit] of limits.entries()) {
      if (seen.has(limit.id))
        ctx.addIssue({ code: "custom", path: [index], message: `the id ${JSON.stringify(limit.id)} is taken by an earlier limit (name one of the two)` });
      seen.add(limit.id);
    }
  })
  .transform((limits): readonly ProfileLimit[] => Object.freeze(limits))
  .default(() => NO_LIMITS);

/** Per tool id or `family.*`: `false` or the JSON Pointers an approver may edit; frozen. It only narrows the manifest's `edits`. */
const approvalEditsSchema = z
  .record(
    toolPattern,
    z
      .union([z.literal(false), z.array(z.unknown()).readonly()], { error: "each approvalEdits entry must be false or an array of JSON Pointers" })
      .superRefine((entry, ctx) => {
        for (const message of entry === false ? [] : fieldListProblems(entry, "the entry")) ctx.addIssue({ code: "custom", message });
      }),
    { error: 'approvalEdits must be an object of tool ids or "family.*" to false or JSON Pointers' },
  )
  .refine((all) => Object.keys(all).length <= 256, { error: "approvalEdits may name at most 256 tools or families" })
  .transform((all): Readonly<Record<string, false | readonly string[]>> =>
    Object.freeze(Object.fromEntries(Object.entries(all).map(([k, v]) => [k, v === false ? (false as const) : Object.freeze([...(v as string[])])]))),
  );

/** Provenance in a session: what a broken rule does, whether trusted calls skip the manifest's approval, rules added per tool id or `family.*`. */
const provenanceSchema = z
  .object({
    onViolation: z.enum(["ask", "refuse"], { error: 'provenance.onViolation must be "ask" or "refuse"' }).default("ask"),
    trustedSkipsApproval: z.boolean({ error: "provenance.trustedSkipsApproval must be true or false" }).default(false),
    tools: z
      .record(
        toolPattern,
        z.unknown().superRefine((rules, ctx) => {
          for (const message of rulesProblems(rules, "each provenance.tools entry")) ctx.addIssue({ code: "custom", message });
        }),
        { error: 'provenance.tools must be an object of tool ids or "family.*" to { destinations?, content? }' },
      )
      .default({})
      .transform((all): Readonly<Record<string, ProvenanceRules>> =>
        Object.freeze(Object.fromEntries(Object.entries(all).map(([k, v]) => [k, freezeRules(v as ProvenanceRules)]))),
      ),
  })
  .strict()
  .readonly();

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
    /**
     * Calls per window (counted in the journal, shared by every worker on it) and calls in flight
     * (per worker), each for some tools. Default none. See {@link ProfileLimit}.
     */
    limits: limitsSchema,
    /** Which input fields an approver may edit, per tool id or `family.*` (narrows the manifest's `edits`). Default: the manifest's. */
    approvalEdits: approvalEditsSchema.optional(),
    /** What provenance does for calls made in a session (`gate.openSession`). Default: a broken rule asks a human; nothing skips approval. */
    provenance: provenanceSchema.optional(),
  })
  .readonly();

/** A defined profile: the parsed definition, frozen, with its tokens typed. */
export type Profile<TToken extends string = string> = Omit<z.output<typeof profileSchema>, "allow"> & { readonly allow: readonly TToken[] };
/** What `defineProfile` takes: the schema's input, with the tokens typed. */
export type ProfileDefinition<TToken extends string> = Omit<z.input<typeof profileSchema>, "allow" | "limits"> & {
  readonly allow: readonly TToken[];
  /** A parsed profile's limits may be given back as they are (a profile spread into `defineProfile` again). */
  readonly limits?: readonly (LimitDefinition | ProfileLimit)[];
};
export type InjectionPolicy = Profile["onInjection"];

export function defineProfile<const TToken extends string>(definition: ProfileDefinition<TToken>): Profile<TToken> {
  const parsed = profileSchema.safeParse(definition);
  if (!parsed.success) {
    const problems = problemsOf(parsed.error);
    throw new ToolError("profile_invalid", `profile ${JSON.stringify(definition?.name)} is invalid: ${problems.join("; ")}`, { details: { problems } });
  }
  return parsed.data as Profile<TToken>;
}
