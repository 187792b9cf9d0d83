import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import type { ConnectorRuntime, ToolContext, Verifier, Workspace } from "../context.js";
import { defineFamily, SHARED_BOUNDARY_TOKENS, type ToolFamily } from "../family.js";
import { createGate, type Gate } from "../gate/gate.js";
import type { InvokeResult } from "../gate/results.js";
import { createMemoryJournal } from "../journal/memory.js";
import type { Journal } from "../journal/types.js";
import { DATA_CLASSES, jsonSchemaOf, withHandler, type AnyToolManifest } from "../manifest.js";
import { defineProfile, type Profile } from "../profile.js";
import { createToolRegistry } from "../registry.js";
import { grantAsOwner } from "./approver.js";

/** What one conformance test needs to run a family's real handlers. */
export interface FamilyTestContext {
  readonly connectors?: ConnectorRuntime;
  readonly verifier?: Verifier;
  readonly workspace?: Workspace;
  readonly journal?: Journal;
  /** Secrets the family's context uses (tokens, keys); none may appear in any result. */
  readonly secrets?: readonly string[];
  /** Called after each test. */
  readonly cleanup?: () => Promise<void> | void;
}

export interface DescribeToolFamilyOptions {
  /** Fresh context per test: emulators, roots, connections. */
  readonly makeContext: () => Promise<FamilyTestContext> | FamilyTestContext;
  /** A valid input for every tool id in the family (hidden ones included). */
  readonly validInputs: Readonly<Record<string, unknown>>;
  /** Extra inputs each tool must refuse, beyond the generated ones. */
  readonly invalidInputs?: Readonly<Record<string, readonly unknown[]>>;
  readonly principal?: string;
  readonly tenant?: string;
  /** Tools whose cancellation test is skipped, each with the reason (shown in the test name). */
  readonly skipCancellation?: Readonly<Record<string, string>>;
  /**
   * Puts `secret` where `toolId` will return it — a file's content, a message's subject, a page's
   * title (through the family's fixtures or emulators) — and returns the input that makes the tool
   * return it. Called once per tool, after `makeContext`, with the context it built. The suite
   * registers the secret with the gate, checks that the tool's own output really carried it, and
   * checks that nothing the gate returned, journaled or asked a human about does. A tool whose
   * input and output schemas hold no text at all needs no planting; every other tool does.
   */
  readonly plantSecret?: (toolId: string, secret: string, ctx: FamilyTestContext) => unknown;
}

interface Instrumented {
  readonly family: ToolFamily;
  readonly calls: Map<string, number>;
  readonly signals: Map<string, AbortSignal[]>;
  /** What each body returned, threw or reported as progress, before the gate saw it. */
  readonly raw: Map<string, unknown[]>;
  onStart: ((toolId: string, ctx: ToolContext) => void) | undefined;
}

function instrument(family: ToolFamily): Instrumented {
  const state: Instrumented = { family, calls: new Map(), signals: new Map(), raw: new Map(), onStart: undefined };
  const seen = (id: string, value: unknown): void => void state.raw.set(id, [...(state.raw.get(id) ?? []), value]);
  const tools = family.tools.map((manifest: AnyToolManifest) =>
    // The wrapper is async: a body that never looks at its signal still cannot finish before the
    // gate sees an abort that came while it started (the cancellation test relies on it).
    withHandler(manifest, (inner) => async (input, ctx) => {
      state.calls.set(manifest.id, (state.calls.get(manifest.id) ?? 0) + 1);
      state.signals.set(manifest.id, [...(state.signals.get(manifest.id) ?? []), ctx.signal]);
      state.onStart?.(manifest.id, ctx);
      // A view of the gate's context with progress observed; every other member is read from the context itself.
      const progress = (event: Parameters<ToolContext["progress"]>[0]) => (seen(manifest.id, event), ctx.progress(event));
      const observed = new Proxy(ctx, { get: (target, key) => (key === "progress" ? progress : Reflect.get(target, key)) });
      try {
        const value: unknown = await inner(input, observed);
        seen(manifest.id, value);
        return value;
      } catch (error) {
        seen(manifest.id, error instanceof Error ? { message: error.message, details: (error as { details?: unknown }).details } : error);
        throw error;
      }
    }),
  );
  return Object.assign(state, {
    family: defineFamily({
      name: family.name,
      tools,
      permissions: family.permissions,
      ...(family.description === undefined ? {} : { description: family.description }),
      ...(family.kind === undefined ? {} : { kind: family.kind }),
    }),
  });
}

/** A profile holding everything the family could need. */
function fullProfile(family: ToolFamily, drop?: string): Profile {
  const tokens = [...family.permissions, ...SHARED_BOUNDARY_TOKENS].filter((t) => t !== drop);
  return defineProfile({
    name: drop === undefined ? "conformance-full" : "conformance-missing-one",
    allow: tokens,
    maxRisk: "critical",
    consents: [...new Set(family.tools.flatMap((t: AnyToolManifest) => [...t.requiredConsent]))],
    egress: [...DATA_CLASSES],
  });
}

const GENERATED_INVALID: readonly unknown[] = [null, 42, "not an object", [], true];

/**
 * The minimum test set every tool family passes. Handlers are instrumented, never replaced: the
 * family's real bodies run against the context `makeContext` builds.
 */
export function describeToolFamily(family: ToolFamily, options: DescribeToolFamilyOptions): void {
  const principal = options.principal ?? "conformance-agent";
  const tenant = options.tenant ?? "conformance-tenant";

  const setup = async (extraSecrets: readonly string[] = []): Promise<{ gate: Gate; probe: Instrumented; ctx: FamilyTestContext }> => {
    const ctx = await options.makeContext();
    const probe = instrument(family);
    const gate = createGate({
      registry: createToolRegistry({ families: [probe.family] }),
      journal: ctx.journal ?? createMemoryJournal(),
      ...(ctx.connectors ? { connectors: ctx.connectors } : {}),
      ...(ctx.verifier ? { verifier: ctx.verifier } : {}),
      ...(ctx.workspace ? { workspace: ctx.workspace } : {}),
      secrets: [...(ctx.secrets ?? []), ...extraSecrets],
    });
    return { gate, probe, ctx };
  };
  const withSetup = (fn: (s: { gate: Gate; probe: Instrumented; ctx: FamilyTestContext }) => Promise<void>, extraSecrets?: readonly string[]) => async () => {
    const s = await setup(extraSecrets);
    try {
      await fn(s);
    } finally {
      await s.gate.drain();
      await s.ctx.cleanup?.();
    }
  };
  /** Invoke, granting approval when asked, as a human would. */
  const invokeApproved = async (
    gate: Gate,
    id: string,
    input: unknown,
    profile: Profile,
    extra: { signal?: AbortSignal; onProgress?: (event: unknown) => void } = {},
  ): Promise<InvokeResult> => {
    const first = await gate.invoke(id, input, { principal, tenant, profile, ...extra });
    if (first.status !== "approval_required" || first.reason !== "call") return first;
    const grant = await grantAsOwner(gate, first.requestId);
    return gate.invoke(id, input, { principal, tenant, profile, approval: grant, ...extra });
  };

  describe(`tool family ${family.name} (conformance)`, () => {
    const tools = family.tools as readonly AnyToolManifest[];

    it("has a valid input for every tool", () => {
      for (const tool of tools) expect(Object.hasOwn(options.validInputs, tool.id), `validInputs lacks ${tool.id}`).toBe(true);
      for (const tool of tools) expect(tool.input.safeParse(options.validInputs[tool.id]).success, `validInputs[${tool.id}] does not parse`).toBe(true);
    });

    it("lists every visible tool with JSON Schemas and no functions", () => {
      const registry = createToolRegistry({ families: [family] });
      const listed = registry.list({ visibility: ["default", "advanced", "hidden"] });
      expect(listed.map((d) => d.id).sort()).toEqual(tools.map((t) => t.id).sort());
      for (const d of listed) {
        expect(d.inputSchema).toBeTypeOf("object");
        expect(d.outputSchema).toBeTypeOf("object");
        expect(reachesFunction(d)).toBe(false);
      }
      expect(reachesFunction(registry)).toBe(false);
    });

    it("declares complete, family-specific tokens, each used by some tool", () => {
      const used = new Set(tools.flatMap((t) => [...t.requiredAllowlist]));
      for (const token of family.permissions) {
        expect(token.startsWith(`${family.name}:`) || (SHARED_BOUNDARY_TOKENS as readonly string[]).includes(token), `${token} is not family-specific`).toBe(
          true,
        );
        expect(used.has(token), `permission ${token} is declared but no tool requires it`).toBe(true);
      }
      for (const tool of tools) {
        expect(tool.requiredAllowlist.length > 0 || tool.effect === "none", `${tool.id} requires no token`).toBe(true);
      }
    });

    for (const tool of tools) {
      describe(tool.id, () => {
        for (const token of tool.requiredAllowlist) {
          it(
            `is refused to a profile missing ${token}, before its handler runs`,
            withSetup(async ({ gate, probe }) => {
              const result = await gate.invoke(tool.id, options.validInputs[tool.id], { principal, tenant, profile: fullProfile(family, token) });
              expect(result.status).toBe("denied");
              expect(result.status === "denied" && result.code).toBe("permission_denied");
              expect(probe.calls.get(tool.id) ?? 0).toBe(0);
            }),
          );
        }

        it(
          "refuses malformed input before its handler runs",
          withSetup(async ({ gate, probe }) => {
            const candidates = [...GENERATED_INVALID, ...(options.invalidInputs?.[tool.id] ?? [])];
            let refused = 0;
            for (const input of candidates) {
              const accepted = tool.input.safeParse(input).success;
              if (accepted && !(options.invalidInputs?.[tool.id] ?? []).includes(input)) continue;
              const result = await gate.invoke(tool.id, input, { principal, tenant, profile: fullProfile(family) });
              expect(result.status, `input ${JSON.stringify(input)}`).toBe("error");
              expect(result.status === "error" && result.code).toBe("invalid_input");
              refused++;
            }
            expect(refused).toBeGreaterThan(0);
            expect(probe.calls.get(tool.id) ?? 0).toBe(0);
          }),
        );

        const gated = tool.approval === "always" || (typeof tool.approval === "function" && safeApproval(tool, options.validInputs[tool.id]));
        if (gated) {
          it(
            "does not run without a matching grant",
            withSetup(async ({ gate, probe }) => {
              const profile = fullProfile(family);
              const input = options.validInputs[tool.id];
              const first = await gate.invoke(tool.id, input, { principal, tenant, profile });
              expect(first.status).toBe("approval_required");
              if (first.status !== "approval_required") return;
              expect(first.preview.summary.length).toBeGreaterThan(0);
              const grant = await grantAsOwner(gate, first.requestId);
              // The same grant presented by another principal, or with a forged token, is refused.
              const otherPrincipal = await gate.invoke(tool.id, input, { principal: `${principal}-other`, tenant, profile, approval: grant });
              expect(otherPrincipal.status).toBe("denied");
              const forged = await gate.invoke(tool.id, input, { principal, tenant, profile, approval: { ...grant, token: "forged-token-value" } });
              expect(forged.status).toBe("denied");
              expect(probe.calls.get(tool.id) ?? 0).toBe(0);
            }),
          );
        }

        const outputHoldsText = schemaHoldsText(jsonSchemaOf(tool.output, "output"));
        const inputHoldsText = schemaHoldsText(jsonSchemaOf(tool.input, "input"));
        it(
          outputHoldsText
            ? "never returns, journals or shows a registered secret that its output carried"
            : inputHoldsText
              ? "never journals a registered secret that its input carried (its output holds no text)"
              : "holds no text in its input or output, so a secret has no way in or out",
          async () => {
            if (!outputHoldsText && !inputHoldsText) {
              // Asserted rather than assumed: adding a text field makes this tool need planting.
              expect([tool.input, tool.output].map((schema, i) => schemaHoldsText(jsonSchemaOf(schema, i === 0 ? "input" : "output")))).toEqual([false, false]);
              return;
            }
            expect(options.plantSecret, `describeToolFamily needs plantSecret: give the suite a way to put a secret where ${tool.id} returns it`).toBeTypeOf(
              "function",
            );
            const planted = `tgsecret${randomBytes(12).toString("hex")}`;
            await withSetup(
              async ({ gate, probe, ctx }) => {
                const input = await options.plantSecret!(tool.id, planted, ctx);
                const profile = fullProfile(family);
                const progress: unknown[] = [];
                const results = [
                  await invokeApproved(gate, tool.id, input, profile, { onProgress: (e) => progress.push(e) }),
                  await gate.invoke(tool.id, null, { principal, tenant, profile }),
                ];
                // The check proves something only if the secret really passed through the gate.
                if (outputHoldsText) {
                  expect(
                    JSON.stringify(probe.raw.get(tool.id) ?? []),
                    `the planted secret never reached ${tool.id}'s output: plantSecret must put it where the tool returns it`,
                  ).toContain(planted);
                } else {
                  expect(JSON.stringify(input), `plantSecret must put the secret in ${tool.id}'s input`).toContain(planted);
                }
                const stored = JSON.stringify([await gate.journal.readAudit(), await gate.journal.listOutbox(), await gate.journal.listApprovals()]);
                for (const secret of [planted, ...(ctx.secrets ?? [])]) {
                  for (const result of results) expect(JSON.stringify(result), `a result of ${tool.id}`).not.toContain(secret);
                  expect(JSON.stringify(progress), `progress of ${tool.id}`).not.toContain(secret);
                  expect(stored, `the journal of ${tool.id}'s call`).not.toContain(secret);
                }
              },
              [planted],
            )();
          },
        );

        const skip = options.skipCancellation?.[tool.id];
        if (skip !== undefined) {
          it.skip(`honours cancellation (skipped: ${skip})`, () => undefined);
        } else {
          it(
            "honours cancellation: an aborted call does not start, an abort mid-call reaches the body",
            withSetup(async ({ gate, probe }) => {
              const profile = fullProfile(family);
              const before = new AbortController();
              before.abort();
              const early = await invokeApproved(gate, tool.id, options.validInputs[tool.id], profile, { signal: before.signal });
              expect(early.status).toBe("error");
              expect(early.status === "error" && early.code).toBe("cancelled");
              expect(probe.calls.get(tool.id) ?? 0).toBe(0);

              const during = new AbortController();
              probe.onStart = (id) => {
                if (id === tool.id) during.abort(new Error("conformance abort"));
              };
              const late = await invokeApproved(gate, tool.id, options.validInputs[tool.id], profile, { signal: during.signal });
              probe.onStart = undefined;
              expect(probe.calls.get(tool.id) ?? 0).toBe(1);
              expect(probe.signals.get(tool.id)?.[0]?.aborted).toBe(true);
              // Aborted while it started, the call is cancelled — whether or not the body looked.
              expect(late.status).toBe("error");
              expect(late.status === "error" && late.code).toBe("cancelled");
              expect(late.status === "error" && late.boundary).toBe(
                tool.effect === "none" || tool.effect === "read" ? "effect_failed" : "effect_state_unknown",
              );
            }),
          );
        }
      });
    }
  });
}

/** True when a JSON Schema admits a string anywhere (or any value at all). */
export function schemaHoldsText(schema: unknown, seen: Set<unknown> = new Set()): boolean {
  if (schema === true || schema === undefined) return true;
  if (schema === null || typeof schema !== "object" || seen.has(schema)) return false;
  seen.add(schema);
  const s = schema as Record<string, unknown>;
  const branches = ["anyOf", "oneOf", "allOf"].flatMap((k) => (Array.isArray(s[k]) ? (s[k] as unknown[]) : []));
  if (branches.length > 0) return branches.some((b) => schemaHoldsText(b, seen));
  if (s.const !== undefined || Array.isArray(s.enum)) return false; // fixed values carry nothing planted
  const type = s.type;
  if (type === undefined) return Object.keys(s).every((k) => k === "$schema" || k === "description" || k === "title");
  const types = Array.isArray(type) ? type : [type];
  if (types.includes("string")) return true;
  if (types.includes("object")) {
    const props = Object.values((s.properties as Record<string, unknown> | undefined) ?? {});
    const extra = s.additionalProperties;
    return props.some((p) => schemaHoldsText(p, seen)) || (extra !== undefined && extra !== false && schemaHoldsText(extra, seen));
  }
  if (types.includes("array")) return schemaHoldsText(s.items ?? true, seen);
  return false;
}

function safeApproval(tool: AnyToolManifest, input: unknown): boolean {
  const parsed = tool.input.safeParse(input);
  if (!parsed.success) return false;
  try {
    return (tool.approval as (i: unknown) => boolean)(parsed.data) !== false;
  } catch {
    return true;
  }
}

/**
 * True when a function can be reached from `root`: through own properties (enumerable or not,
 * symbol keys, accessors), through spreading, or through a JSON round trip.
 */
export function reachesFunction(root: unknown): boolean {
  let json: unknown = null;
  try {
    json = JSON.parse(JSON.stringify(root) ?? "null") as unknown;
  } catch {
    json = null;
  }
  return walk(root, new Set()) || walk(typeof root === "object" && root !== null ? { ...root } : root, new Set()) || walk(json, new Set());
}

function walk(value: unknown, seen: Set<unknown>): boolean {
  if (typeof value === "function") return true;
  if (value === null || typeof value !== "object" || seen.has(value)) return false;
  seen.add(value);
  for (const key of Reflect.ownKeys(value)) {
    const descriptor = Object.getOwnPropertyDescriptor(value, key);
    if (!descriptor) continue;
    if (descriptor.get || descriptor.set) return true;
    if (walk(descriptor.value, seen)) return true;
  }
  return false;
}
