import { z } from "zod";
import { ToolError } from "./errors.js";
import type { ToolContext, PreviewContext, EffectIdentity } from "./context.js";
import { editsProblems } from "./edit-fields.js";
import { freezeRules, rulesProblems, type CallProvenance, type ProvenanceRules } from "./provenance/judge.js";

/** `family.verb_noun`: lower-case words joined by dots, at most 64 characters. */
export const TOOL_ID_PATTERN = /^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$/;
export const TOOL_ID_MAX_LENGTH = 64;
/** A permission token: `area:verb`, lower case. */
export const TOKEN_PATTERN = /^[a-z][a-z0-9_-]*:[a-z][a-z0-9_-]*$/;

/** What the tool does to the world. Anything but `none` and `read` is side-effectful. */
export const EFFECTS = ["none", "read", "write", "destructive"] as const;
export type Effect = (typeof EFFECTS)[number];

/** Ordered from least to most dangerous; a profile's `maxRisk` is a ceiling. */
export const RISK_LEVELS = ["low", "medium", "high", "critical"] as const;
export type RiskLevel = (typeof RISK_LEVELS)[number];

export const VISIBILITIES = ["default", "advanced", "hidden"] as const;
/** `default`: shown to models; `advanced`: escape hatches, shown with a flag; `hidden`: never listed. */
export type Visibility = (typeof VISIBILITIES)[number];

/** The kind of data a tool may send across a trust boundary; profiles allow egress per class. */
export const DATA_CLASSES = ["public", "internal", "personal", "confidential"] as const;
export type DataClass = (typeof DATA_CLASSES)[number];

/**
 * The concrete boundary a tool crosses. Well-known values are listed for autocompletion; a family
 * may name its own in the same `area-verb` shape.
 */
export type ActionType =
  | "compute"
  | "repo-read"
  | "repo-write"
  | "command-run"
  | "email-read"
  | "email-compose"
  | "email-send"
  | "email-modify"
  | "calendar-read"
  | "calendar-write"
  | "notion-read"
  | "notion-write"
  | "process-call"
  | (string & { readonly __actionType?: never });

/** Derived from `provider` and `dataEgress`; never declared. */
export type SovereigntyClass = "sovereign" | "connected-read" | "connected-egress";

/** What a reviewer needs to know about where a tool body runs and what it can reach. */
export interface RuntimeIsolation {
  /** `none`, `loopback`, or the provider hosts it talks to. */
  readonly network: "none" | "loopback" | "provider" | (string & { readonly __network?: never });
  /** `none`, `read-root`, `write-root`, `workspace`. */
  readonly filesystem: "none" | "read-root" | "write-root" | "workspace" | (string & { readonly __fs?: never });
  /** `none`, or `connector` when the body uses an authorized client from the token runtime. */
  readonly secrets: "none" | "connector";
  /** `none`, `verifier` (allowlisted argv through createVerifier), or `process`. */
  readonly subprocess: "none" | "verifier" | "process";
  readonly notes?: string;
}

/** A concrete summary a human approves. Its hash is bound into the grant. */
export interface ApprovalPreview {
  /** One line: what will happen. */
  readonly summary: string;
  /** Structured facts (recipients, paths, times); rendered to the human as given. */
  readonly details?: Readonly<Record<string, unknown>>;
  /** A unified diff, message body or other long text the human must see exactly. */
  readonly body?: string;
  /**
   * What the body needs and the human approved (a draft's digest, an etag, an escalation's
   * reason): stored and hashed with the preview, so it is part of the grant's binding, and handed
   * to the body as `ctx.plan`. Plain JSON.
   */
  readonly plan?: unknown;
  /** Set by the gate in a session: where the arguments came from. Shown, not hashed. */
  readonly provenance?: CallProvenance;
}

/**
 * When a human must approve. A predicate gets the parsed input and the call's identity (who, for
 * which tenant), so a rule that depends on earlier calls can keep them apart per principal and tenant.
 */
export type ApprovalRule<TInput> = "never" | "always" | ((input: TInput, call: EffectIdentity) => boolean);

/** The OAuth scopes a tool needs from the connector token runtime. */
export interface ConnectorRequirement {
  readonly provider: string;
  readonly scopes: readonly string[];
}

/** Builds the concrete summary a human approves for one input. */
export type PreviewFunction<TInput> = (input: TInput, ctx: PreviewContext) => ApprovalPreview | Promise<ApprovalPreview>;

/**
 * The fields every tool declares, whatever its effect and approval rule. `TInput`/`TOutput` are
 * zod schemas; types come from them. See DESIGN.md's table for the meaning of each field.
 */
export interface ToolFields<TId extends string, TInput extends z.ZodType, TOutput extends z.ZodType, TToken extends string> {
  /** `family.verb_noun`, e.g. `gmail.send_message`. */
  readonly id: TId;
  readonly title: string;
  /** What the model reads. State irreversibility plainly ("cannot be undone"). */
  readonly description: string;
  readonly input: TInput;
  readonly output: TOutput;
  readonly actionType: ActionType;
  /** Permission tokens; the profile must hold every one. */
  readonly requiredAllowlist: readonly TToken[];
  readonly risk: RiskLevel;
  readonly visibility?: Visibility;
  /** Deadline for the handler; the signal aborts at this point. Default 30 s. */
  readonly timeoutMs?: number;
  /**
   * Set when the call crosses a trust boundary (e.g. `google`, `notion`). Defaults to
   * `connector.provider`; a tool with a connector need not write it again.
   */
  readonly provider?: string;
  /** True when the caller's data leaves for the provider. */
  readonly dataEgress?: boolean;
  readonly dataClass?: DataClass;
  /** Consents the profile must have been granted (e.g. `send-email-on-my-behalf`). */
  readonly requiredConsent?: readonly string[];
  readonly connector?: ConnectorRequirement;
  readonly runtimeIsolation: RuntimeIsolation;
  /** True where output carries content someone else wrote (mail, pages, files, command output). */
  readonly untrustedOutput: boolean;
  /** Short, secret-free description of what the call touches, for audit and docs. */
  readonly target?: (input: z.output<TInput>) => string;
  /** Short, secret-free description of the result, for audit. */
  readonly describeResult?: (output: z.output<TOutput>) => string;
  /** Input members an approver may edit (JSON Pointers to declared members); `false` refuses edits. Default: the whole input. */
  readonly edits?: false | { readonly fields: readonly string[] };
  /** Input members (JSON Pointers, `*` any item) that must come from trusted data, and those that may carry untrusted data only to them. */
  readonly provenance?: ProvenanceRules;
}

/**
 * When a human must approve, checked by the compiler: `approval: "always"` or a predicate needs a
 * `preview`; only `approval: "never"` may leave it out.
 */
export type ApprovalFields<TInput> =
  | {
      readonly approval: "never";
      readonly preview?: PreviewFunction<TInput>;
    }
  | {
      readonly approval: Exclude<ApprovalRule<TInput>, "never">;
      /** Required whenever approval can be required: the concrete summary a human approves. */
      readonly preview: PreviewFunction<TInput>;
    };

/**
 * What a repeat, a retry or an undo means for the tool. A `write` or `destructive` tool declares
 * every flag; a `read` or `none` tool may leave them out, and each defaults to `true`. (The first
 * member admits any effect, so an effect only known as `Effect` compiles when every flag is set.)
 */
export type ExecutionFields =
  | {
      readonly effect: Effect;
      /** The same call under the same idempotency key has its effect once: recovery may replay it. */
      readonly idempotent: boolean;
      /** A call that failed may be tried again. */
      readonly retryable: boolean;
      /** The effect can be undone. */
      readonly reversible: boolean;
    }
  | {
      readonly effect: "none" | "read";
      /** Each of these defaults to `true`. */
      readonly idempotent?: boolean;
      readonly retryable?: boolean;
      readonly reversible?: boolean;
    };

/** The body. Reachable only through the gate. */
export interface ToolBody<TInput extends z.ZodType, TOutput extends z.ZodType> {
  readonly handler: (input: z.output<TInput>, ctx: ToolContext) => Promise<z.input<TOutput>> | z.input<TOutput>;
}

/**
 * Everything a tool author declares: the common fields, an approval rule with the preview it
 * needs, the effect with the execution flags it needs, and the body.
 */
export type ToolDefinition<TId extends string, TInput extends z.ZodType, TOutput extends z.ZodType, TToken extends string> = ToolFields<
  TId,
  TInput,
  TOutput,
  TToken
> &
  ApprovalFields<z.output<TInput>> &
  ExecutionFields &
  ToolBody<TInput, TOutput>;

/**
 * A defined tool. The handler is held privately: nothing on this object, or anything derived from
 * it, reaches the body except the gate.
 */
export interface ToolManifest<
  TId extends string = string,
  TInput extends z.ZodType = z.ZodType,
  TOutput extends z.ZodType = z.ZodType,
  TToken extends string = string,
> extends ToolFields<TId, TInput, TOutput, TToken> {
  readonly effect: Effect;
  readonly approval: ApprovalRule<z.output<TInput>>;
  readonly preview?: PreviewFunction<z.output<TInput>>;
  readonly idempotent: boolean;
  readonly retryable: boolean;
  readonly reversible: boolean;
  readonly visibility: Visibility;
  readonly timeoutMs: number;
  readonly dataEgress: boolean;
  readonly requiredConsent: readonly string[];
  readonly sovereignty: SovereigntyClass;
  /** Phantom marker; carries the types for inference only. */
  readonly "~types"?: { readonly input: z.input<TInput>; readonly output: z.output<TOutput> };
}

export type AnyToolManifest = ToolManifest<string, any, any, string>;

export type ToolHandler = (input: unknown, ctx: ToolContext) => unknown;

/** Module-private: manifest → handler. Only the registry (and through it the gate) reads it. */
const handlers = new WeakMap<object, ToolHandler>();

/** @internal */
export function handlerOf(manifest: AnyToolManifest): ToolHandler {
  const handler = handlers.get(manifest);
  if (!handler) throw new ToolError("manifest_invalid", `tool ${manifest.id} was not created by defineTool`);
  return handler;
}

/** @internal Used by the conformance suite to instrument (never replace) a body. */
export function withHandler<M extends AnyToolManifest>(manifest: M, wrap: (inner: ToolHandler) => ToolHandler): M {
  const copy = Object.freeze({ ...manifest }) as M;
  handlers.set(copy, wrap(handlerOf(manifest)));
  return copy;
}

export const DEFAULT_TIMEOUT_MS = 30_000;

export function isSideEffectful(effect: Effect): boolean {
  return effect === "write" || effect === "destructive";
}

export function sovereigntyOf(tool: { provider?: string | undefined; dataEgress?: boolean | undefined }): SovereigntyClass {
  if (!tool.provider) return "sovereign";
  return tool.dataEgress ? "connected-egress" : "connected-read";
}

export function riskRank(risk: RiskLevel): number {
  return RISK_LEVELS.indexOf(risk);
}

/**
 * Define one tool. Checks every rule that can be checked without its family and returns a frozen
 * manifest; the handler is kept out of reach.
 */
export function defineTool<const TId extends string, TInput extends z.ZodType, TOutput extends z.ZodType, const TToken extends string>(
  definition: ToolDefinition<TId, TInput, TOutput, TToken>,
): ToolManifest<TId, TInput, TOutput, TToken> {
  const problems = manifestProblems(definition);
  if (problems.length > 0) {
    throw new ToolError("manifest_invalid", `tool ${JSON.stringify(definition.id)} is invalid: ${problems.join("; ")}`, {
      details: { toolId: definition.id, problems },
    });
  }
  const { handler, ...rest } = definition;
  const provider = providerOf(definition);
  const manifest = {
    ...rest,
    // A write tool that left one out was refused above; a read or pure tool defaults to true.
    idempotent: definition.idempotent ?? true,
    retryable: definition.retryable ?? true,
    reversible: definition.reversible ?? true,
    ...(provider === undefined ? {} : { provider }),
    visibility: definition.visibility ?? "default",
    timeoutMs: definition.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    dataEgress: definition.dataEgress ?? false,
    requiredAllowlist: Object.freeze([...definition.requiredAllowlist]),
    requiredConsent: Object.freeze([...(definition.requiredConsent ?? [])]),
    sovereignty: sovereigntyOf({ provider, dataEgress: definition.dataEgress }),
    runtimeIsolation: Object.freeze({ ...definition.runtimeIsolation }),
    ...(definition.edits ? { edits: Object.freeze({ fields: Object.freeze([...definition.edits.fields]) }) } : {}),
    ...(definition.provenance ? { provenance: freezeRules(definition.provenance) } : {}),
    ...(definition.connector
      ? { connector: Object.freeze({ provider: definition.connector.provider, scopes: Object.freeze([...definition.connector.scopes]) }) }
      : {}),
  } as ToolManifest<TId, TInput, TOutput, TToken>;
  Object.freeze(manifest);
  handlers.set(manifest, handler as ToolHandler);
  return manifest;
}

/** The provider a tool crosses to: its own `provider`, else its connector's. */
function providerOf(d: { readonly provider?: string | undefined; readonly connector?: ConnectorRequirement | undefined }): string | undefined {
  return d.provider ?? d.connector?.provider;
}

const nonEmpty = (value: unknown): boolean => typeof value === "string" && value.trim().length > 0;

/** A definition as the run-time check sees it: the compiler's rules may have been bypassed. */
type UncheckedDefinition = Omit<ToolFields<string, z.ZodType, z.ZodType, string>, "target" | "describeResult" | "edits" | "provenance"> & {
  readonly edits?: unknown;
  readonly provenance?: unknown;
  readonly effect: Effect;
  readonly approval: unknown;
  readonly preview?: unknown;
  readonly idempotent?: unknown;
  readonly retryable?: unknown;
  readonly reversible?: unknown;
  readonly handler: unknown;
  readonly target?: unknown;
  readonly describeResult?: unknown;
};

function manifestProblems(d: UncheckedDefinition): string[] {
  const problems: string[] = [];
  if (typeof d.id !== "string" || !TOOL_ID_PATTERN.test(d.id)) {
    problems.push(`id must match ${TOOL_ID_PATTERN} (family.verb_noun)`);
  } else if (d.id.length > TOOL_ID_MAX_LENGTH) {
    problems.push(`id is ${d.id.length} characters; at most ${TOOL_ID_MAX_LENGTH}`);
  }
  if (!nonEmpty(d.title)) problems.push("title is required");
  if (!nonEmpty(d.description)) problems.push("description is required (it is what the model reads)");
  if (!(d.input instanceof z.ZodType)) problems.push("input must be a zod schema");
  if (!(d.output instanceof z.ZodType)) problems.push("output must be a zod schema");
  if (!nonEmpty(d.actionType)) problems.push("actionType is required");
  if (!(EFFECTS as readonly string[]).includes(d.effect)) problems.push(`effect must be one of ${EFFECTS.join(", ")}`);
  if (!(RISK_LEVELS as readonly string[]).includes(d.risk)) problems.push(`risk must be one of ${RISK_LEVELS.join(", ")}`);
  if (d.visibility !== undefined && !(VISIBILITIES as readonly string[]).includes(d.visibility)) {
    problems.push(`visibility must be one of ${VISIBILITIES.join(", ")}`);
  }
  if (!Array.isArray(d.requiredAllowlist)) {
    problems.push("requiredAllowlist must be an array of permission tokens");
  } else {
    if (d.requiredAllowlist.length === 0 && d.effect !== "none") {
      problems.push("requiredAllowlist is empty: a tool that reads or changes anything must require a token");
    }
    for (const token of d.requiredAllowlist) {
      if (typeof token !== "string" || !TOKEN_PATTERN.test(token)) {
        problems.push(`token ${JSON.stringify(token)} must look like "area:verb"`);
      } else if (/^(external|any|all|\*)[:-]|:\*$/.test(token)) {
        problems.push(`token ${JSON.stringify(token)} is too broad; name the specific boundary`);
      }
    }
    if (new Set(d.requiredAllowlist).size !== d.requiredAllowlist.length) problems.push("requiredAllowlist repeats a token");
  }
  const approval: unknown = d.approval;
  if (approval !== "never" && approval !== "always" && typeof approval !== "function") {
    problems.push('approval must be "never", "always" or a predicate on the input');
  }
  if (approval !== "never" && typeof d.preview !== "function") {
    problems.push("a tool that can require approval must define preview(input) so a human sees what they approve");
  }
  if (approval === "never" && (d.effect === "write" || d.effect === "destructive") && riskRank(d.risk) >= riskRank("high")) {
    problems.push(`a ${d.effect} tool with risk ${d.risk} cannot declare approval "never"`);
  }
  for (const flag of ["idempotent", "retryable", "reversible"] as const) {
    if (d[flag] === undefined && !isSideEffectful(d.effect)) continue;
    if (typeof d[flag] !== "boolean") problems.push(`${flag} must be true or false${d[flag] === undefined ? ` (a ${d.effect} tool declares it)` : ""}`);
  }
  if (typeof d.untrustedOutput !== "boolean") problems.push("untrustedOutput must be true or false");
  if (d.timeoutMs !== undefined && (!Number.isInteger(d.timeoutMs) || d.timeoutMs <= 0 || d.timeoutMs > 3_600_000)) {
    problems.push("timeoutMs must be a whole number of milliseconds between 1 and 3,600,000");
  }
  if (d.provider !== undefined && !nonEmpty(d.provider)) problems.push("provider must be a non-empty string when set");
  if (d.dataEgress && !providerOf(d)) problems.push("dataEgress needs a provider: egress to whom?");
  if (d.dataEgress && d.dataClass === undefined) problems.push("dataEgress needs a dataClass so profiles can allow or refuse it");
  if (d.dataClass !== undefined && !(DATA_CLASSES as readonly string[]).includes(d.dataClass)) {
    problems.push(`dataClass must be one of ${DATA_CLASSES.join(", ")}`);
  }
  if (d.connector !== undefined) {
    if (!nonEmpty(d.connector.provider) || !Array.isArray(d.connector.scopes) || d.connector.scopes.length === 0) {
      problems.push("connector needs a provider and at least one scope");
    } else if (d.provider !== undefined && d.connector.provider !== d.provider) {
      problems.push(`connector.provider ${JSON.stringify(d.connector.provider)} differs from provider ${JSON.stringify(d.provider)}`);
    }
  }
  const iso = d.runtimeIsolation as Partial<RuntimeIsolation> | undefined;
  if (!iso || !nonEmpty(iso.network) || !nonEmpty(iso.filesystem) || !nonEmpty(iso.secrets) || !nonEmpty(iso.subprocess)) {
    problems.push("runtimeIsolation needs network, filesystem, secrets and subprocess");
  }
  if (typeof d.handler !== "function") problems.push("handler must be a function");
  if (d.target !== undefined && typeof d.target !== "function") problems.push("target must be a function");
  if (d.describeResult !== undefined && typeof d.describeResult !== "function") problems.push("describeResult must be a function");
  if (d.edits !== undefined) problems.push(...editsProblems(d.edits, () => jsonSchemaOf(d.input, "input")));
  problems.push(...rulesProblems(d.provenance, "provenance", true));
  return problems;
}

/** The JSON Schema a model or a doc sees for a zod schema. */
export function jsonSchemaOf(schema: z.ZodType, io: "input" | "output"): Record<string, unknown> {
  // A JSON round trip: zod attaches non-enumerable validator functions to the schema object.
  return JSON.parse(JSON.stringify(z.toJSONSchema(schema, { io, unrepresentable: "any" }))) as Record<string, unknown>;
}
