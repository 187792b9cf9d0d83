import type { z } from "zod";
import { deepFreeze, hashCanonical } from "./canonical-json.js";
import { ToolError } from "./errors.js";
import { defineFamily, type ToolFamily } from "./family.js";
import {
  handlerOf,
  jsonSchemaOf,
  type AnyToolManifest,
  type DataClass,
  type Effect,
  type RiskLevel,
  type RuntimeIsolation,
  type SovereigntyClass,
  type ToolHandler,
  type ToolManifest,
  type Visibility,
} from "./manifest.js";

/**
 * What the registry shows of a tool: data only, with JSON Schemas for models and docs.
 * Never a handler or any other function.
 */
export interface ToolDescriptor {
  readonly id: string;
  readonly family: string;
  readonly title: string;
  readonly description: string;
  readonly actionType: string;
  readonly effect: Effect;
  readonly requiredAllowlist: readonly string[];
  readonly risk: RiskLevel;
  readonly visibility: Visibility;
  /** `conditional` when approval is a predicate on the input. */
  readonly approval: "never" | "always" | "conditional";
  readonly idempotent: boolean;
  readonly retryable: boolean;
  readonly reversible: boolean;
  readonly timeoutMs: number;
  readonly provider: string | null;
  readonly dataEgress: boolean;
  readonly dataClass: DataClass | null;
  readonly requiredConsent: readonly string[];
  readonly connector: { readonly provider: string; readonly scopes: readonly string[] } | null;
  readonly runtimeIsolation: RuntimeIsolation;
  readonly untrustedOutput: boolean;
  readonly sovereignty: SovereigntyClass;
  readonly inputSchema: Readonly<Record<string, unknown>>;
  readonly outputSchema: Readonly<Record<string, unknown>>;
}

// ---- type-level helpers: ids and input/output types inferred from the families ----

type AnyFamily = ToolFamily<string, readonly AnyToolManifest[], string>;
export type ToolsOfFamilies<TFamilies extends readonly AnyFamily[]> = TFamilies[number]["tools"][number];
export type ToolIdOf<TTool> = TTool extends { readonly id: infer I extends string } ? I : never;
export type ToolById<TTool, TId extends string> = Extract<TTool, { readonly id: TId }>;
/** The input a caller passes (before zod defaults). */
export type ToolInput<TTool> = TTool extends ToolManifest<string, infer I, z.ZodType, string> ? z.input<I> : never;
/** The output a caller receives (after parsing). */
export type ToolOutput<TTool> = TTool extends ToolManifest<string, z.ZodType, infer O, string> ? z.output<O> : never;

export interface ListOptions {
  /** Which visibilities to include; default `["default", "advanced"]`. `hidden` is never listed unless named. */
  readonly visibility?: readonly Visibility[];
}

/** @internal what the gate needs per tool. */
export interface RegisteredTool {
  readonly manifest: AnyToolManifest;
  readonly handler: ToolHandler;
  readonly family: string;
  readonly descriptor: ToolDescriptor;
}

interface RegistryInternals {
  readonly tools: ReadonlyMap<string, RegisteredTool>;
  readonly families: readonly AnyFamily[];
}

const internals = new WeakMap<object, RegistryInternals>();

/** @internal */
export function registryInternals(registry: ToolRegistry): RegistryInternals {
  const found = internals.get(registry);
  if (!found) throw new ToolError("config_invalid", "not a registry created by createToolRegistry");
  return found;
}

/**
 * A frozen set of families. Ids and input types are carried in `TTool` so the gate can type-check
 * `invoke("gmail.send_message", input)`.
 */
export class ToolRegistry<TTool extends AnyToolManifest = AnyToolManifest> {
  declare readonly "~tool": TTool;

  /** Descriptors of the listed tools: JSON Schemas, never handlers. */
  list(options: ListOptions = {}): readonly ToolDescriptor[] {
    const wanted = new Set<Visibility>(options.visibility ?? ["default", "advanced"]);
    return [...registryInternals(this).tools.values()].map((t) => t.descriptor).filter((d) => wanted.has(d.visibility));
  }

  /** The descriptor of one tool, hidden ones included; undefined when unknown. */
  describe(id: string): ToolDescriptor | undefined {
    return registryInternals(this).tools.get(id)?.descriptor;
  }

  has(id: string): id is ToolIdOf<TTool> {
    return registryInternals(this).tools.has(id);
  }

  /** Every registered id, hidden ones included, sorted. */
  ids(): readonly ToolIdOf<TTool>[] {
    return [...registryInternals(this).tools.keys()] as ToolIdOf<TTool>[];
  }

  /** Family names with their permission tokens. */
  families(): readonly { readonly name: string; readonly permissions: readonly string[]; readonly description?: string }[] {
    return registryInternals(this).families.map((f) => ({
      name: f.name,
      permissions: f.permissions,
      ...(f.description === undefined ? {} : { description: f.description }),
    }));
  }

  /** SHA-256 over every descriptor and family: changes when any manifest changes. */
  fingerprint(): string {
    return hashCanonical({
      families: this.families(),
      tools: [...registryInternals(this).tools.values()].map((t) => t.descriptor),
    });
  }
}

export interface CreateToolRegistryOptions<TFamilies extends readonly AnyFamily[]> {
  readonly families: TFamilies;
}

/**
 * Compose families into one frozen registry. Refuses duplicate ids and families, and tokens a
 * family does not declare.
 */
export function createToolRegistry<const TFamilies extends readonly AnyFamily[]>(
  options: CreateToolRegistryOptions<TFamilies>,
): ToolRegistry<ToolsOfFamilies<TFamilies>> {
  const families = options?.families;
  if (!Array.isArray(families) || families.length === 0) {
    throw new ToolError("registry_invalid", "createToolRegistry needs at least one family");
  }
  const tools = new Map<string, RegisteredTool>();
  const names = new Set<string>();
  for (const family of families) {
    // Families may be built by hand; hold them to the same rules as defineFamily.
    defineFamily(family);
    if (names.has(family.name)) throw new ToolError("registry_invalid", `family ${family.name} is registered twice`);
    names.add(family.name);
    for (const manifest of family.tools) {
      if (tools.has(manifest.id)) throw new ToolError("registry_invalid", `tool id ${manifest.id} is registered twice`);
      tools.set(manifest.id, {
        manifest,
        handler: handlerOf(manifest),
        family: family.name,
        descriptor: describeManifest(manifest, family.name),
      });
    }
  }
  const sorted = new Map([...tools.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  const registry = new ToolRegistry<ToolsOfFamilies<TFamilies>>();
  internals.set(registry, { tools: sorted, families: Object.freeze([...families]) });
  return Object.freeze(registry);
}

function describeManifest(m: AnyToolManifest, family: string): ToolDescriptor {
  let inputSchema: Record<string, unknown>;
  let outputSchema: Record<string, unknown>;
  try {
    inputSchema = jsonSchemaOf(m.input, "input");
    outputSchema = jsonSchemaOf(m.output, "output");
  } catch (cause) {
    throw new ToolError("manifest_invalid", `tool ${m.id}: its schemas cannot be expressed as JSON Schema`, { cause });
  }
  const approval: unknown = m.approval;
  return deepFreeze({
    id: m.id,
    family,
    title: m.title,
    description: m.description,
    actionType: m.actionType,
    effect: m.effect,
    requiredAllowlist: [...m.requiredAllowlist],
    risk: m.risk,
    visibility: m.visibility,
    approval: typeof approval === "function" ? "conditional" : (approval as "never" | "always"),
    idempotent: m.idempotent,
    retryable: m.retryable,
    reversible: m.reversible,
    timeoutMs: m.timeoutMs,
    provider: m.provider ?? null,
    dataEgress: m.dataEgress,
    dataClass: m.dataClass ?? null,
    requiredConsent: [...m.requiredConsent],
    connector: m.connector ? { provider: m.connector.provider, scopes: [...m.connector.scopes] } : null,
    runtimeIsolation: { ...m.runtimeIsolation },
    untrustedOutput: m.untrustedOutput,
    sovereignty: m.sovereignty,
    inputSchema,
    outputSchema,
  });
}
