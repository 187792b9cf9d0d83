import {
  canonicalJson,
  defineFamily,
  defineTool,
  hashCanonical,
  isSideEffectful,
  RISK_LEVELS,
  TOOL_ID_MAX_LENGTH,
  TOOL_ID_PATTERN,
  ToolError,
  type AnyToolManifest,
  type ApprovalPreview,
  type RuntimeIsolation,
  type ToolContext,
  type ToolFamily,
} from "@toolgate/core";
import { z } from "zod";
import { VERIFICATION_STATES, type DeclaredTool, type ToolRegister } from "../protocol/messages.js";
import type { CallOutcome } from "./session.js";
import { inputSchemaFor } from "./input-schema.js";
import type { ProcessToolSettings, StartToolProcessOptions } from "./options.js";
import { scopeWithin, tokensFor } from "./scopes.js";

/** What a process tool returns to the gate: the tool's JSON output and its verification claim. */
export const processOutputSchema = z.object({ verified: z.enum(VERIFICATION_STATES), output: z.json() });

export type ProcessInvoke = (toolName: string, input: unknown, ctx: ToolContext, escalationApproved: boolean) => Promise<CallOutcome>;

const MAX_REMEMBERED_ESCALATIONS = 1024;
const MAX_PREVIEW_INPUT_CHARS = 64 * 1024;

/**
 * Escalations a tool asked for, by tool and input hash. A remembered one makes the gate require
 * approval for the same input, with the reason in the preview and in its plan; the body knows the
 * escalation was approved when the plan it is handed carries that reason. Bounded: the oldest is
 * forgotten.
 */
class Escalations {
  private readonly reasons = new Map<string, string>();

  key(toolId: string, input: unknown): string {
    return `${toolId}\u0000${hashCanonical(input ?? null)}`;
  }

  remember(key: string, reason: string): void {
    this.reasons.delete(key);
    this.reasons.set(key, reason.slice(0, 1000));
    if (this.reasons.size > MAX_REMEMBERED_ESCALATIONS) this.reasons.delete(this.reasons.keys().next().value!);
  }

  reason(key: string): string | undefined {
    return this.reasons.get(key);
  }

  /** True when a human approved this very escalation (the plan of the approved preview names it); consumes it. */
  approvedBy(key: string, plan: unknown): boolean {
    const reason = this.reasons.get(key);
    const approved = reason !== undefined && escalationPlan.safeParse(plan).data?.escalation === reason;
    if (approved) this.reasons.delete(key);
    return approved;
  }
}

const escalationPlan = z.object({ escalation: z.string() });

function warn(options: StartToolProcessOptions, message: string, tool?: string): void {
  const event = { level: "warn" as const, process: options.name, message, ...(tool === undefined ? {} : { tool }) };
  if (options.onLog) options.onLog(event);
  else console.warn(`[toolgate process ${options.name}] ${message}`);
}

function isolationOf(options: StartToolProcessOptions): RuntimeIsolation {
  const sandbox = options.sandbox === undefined ? undefined : typeof options.sandbox === "string" ? options.sandbox : options.sandbox.kind;
  const notes = `tool process ${JSON.stringify(options.command)}${sandbox ? ` inside ${sandbox}` : ", no sandbox"}; environment allowlisted`;
  if (sandbox === "bubblewrap") return { network: "none", filesystem: "read-only host", secrets: "none", subprocess: "process", notes };
  if (sandbox === "firejail") return { network: "none", filesystem: "host", secrets: "none", subprocess: "process", notes };
  return { network: sandbox === "custom" ? "as the wrapper allows" : "unrestricted", filesystem: "host", secrets: "none", subprocess: "process", notes };
}

function defaultPreview(toolId: string, input: unknown, escalation: string | undefined): ApprovalPreview {
  let body = canonicalJson(input ?? null);
  if (body.length > MAX_PREVIEW_INPUT_CHARS)
    body = `${body.slice(0, MAX_PREVIEW_INPUT_CHARS)}\n[… input truncated for the preview; ${body.length} characters in all]`;
  return {
    summary: escalation ? `${toolId} asks for escalation: ${escalation}` : `Run ${toolId} with the input below`,
    details: { tool: toolId, ...(escalation ? { escalation } : {}) },
    body,
    ...(escalation ? { plan: { escalation } } : {}),
  };
}

/** The tool's wire error as one of core's codes. */
function errorFor(toolId: string, processName: string, toolName: string, outcome: { code: string; message: string }): ToolError {
  const message = outcome.message.slice(0, 1000);
  switch (outcome.code) {
    case "cancelled":
      return new ToolError("cancelled", `${toolId} was cancelled: ${message}`);
    case "unknown_tool":
      return new ToolError("unknown_tool", `tool process ${processName} does not know ${toolName}: ${message}`, { boundary: "effect_not_started" });
    default:
      return new ToolError("handler_failed", `${toolId} failed: ${message}`, { details: { wireCode: outcome.code.slice(0, 128) } });
  }
}

/** Which declared tools are registered, and with which effective scope; refuses a widening override or a scope above its ceiling. */
function admitted(options: StartToolProcessOptions, registration: ToolRegister): { tool: DeclaredTool; scope: string | null }[] {
  const overrides = options.scopeOverrides ?? {};
  const expected = options.expectedScopes ?? {};
  const allowlist = Object.keys(expected).length > 0;
  const names = new Set<string>();
  const out: { tool: DeclaredTool; scope: string | null }[] = [];
  for (const tool of registration.tools) {
    if (names.has(tool.name)) throw new ToolError("protocol_error", `tool process ${options.name} declared tool ${JSON.stringify(tool.name)} twice`);
    names.add(tool.name);
    if (allowlist && !Object.hasOwn(expected, tool.name)) {
      warn(options, `tool ${JSON.stringify(tool.name)} is not in expectedScopes, so it was not registered`, tool.name);
      continue;
    }
    const id = `${options.name}.${tool.name}`;
    if (!TOOL_ID_PATTERN.test(id) || id.length > TOOL_ID_MAX_LENGTH) {
      throw new ToolError(
        "config_invalid",
        `tool process ${options.name} declares tool ${JSON.stringify(tool.name.slice(0, 80))}: its id ${JSON.stringify(id.slice(0, 100))} must match ${TOOL_ID_PATTERN} and be at most ${TOOL_ID_MAX_LENGTH} characters`,
      );
    }
    const declared = tool.required_scope ? tool.required_scope : null;
    const override = Object.hasOwn(overrides, tool.name) ? overrides[tool.name]! : undefined;
    if (override !== undefined && !scopeWithin(override, declared)) {
      throw new ToolError(
        "config_invalid",
        `scopeOverrides.${tool.name} = ${JSON.stringify(override)} widens (or is unrelated to) the declared scope ${JSON.stringify(declared)}; an override may only narrow it`,
      );
    }
    const scope = override ?? declared;
    const ceiling = Object.hasOwn(expected, tool.name) ? expected[tool.name]! : undefined;
    if (ceiling !== undefined && !scopeWithin(scope, ceiling)) {
      throw new ToolError(
        "config_invalid",
        `tool ${tool.name} of process ${options.name} needs scope ${JSON.stringify(scope)}, above its expected ceiling ${JSON.stringify(ceiling)}${override === undefined ? "; narrow it with scopeOverrides or raise expectedScopes" : ""}`,
      );
    }
    if (override === undefined && ceiling === undefined) {
      warn(
        options,
        `tool ${tool.name} registered with its self-declared scope ${JSON.stringify(declared)}, unchecked: set expectedScopes.${tool.name} to pin a ceiling`,
        tool.name,
      );
    }
    out.push({ tool, scope });
  }
  for (const name of new Set([...Object.keys(overrides), ...Object.keys(expected), ...Object.keys(options.tools ?? {})])) {
    if (!names.has(name)) warn(options, `configuration names tool ${JSON.stringify(name)}, which the process did not declare`, name);
  }
  if (out.length === 0) throw new ToolError("config_invalid", `tool process ${options.name} registered no tool the operator allows`);
  return out;
}

/** The process's family: one manifest per admitted tool, each an ordinary manifest to the gate. */
export function buildFamily(options: StartToolProcessOptions, registration: ToolRegister, invoke: ProcessInvoke): ToolFamily {
  const escalations = new Escalations();
  const isolation = isolationOf(options);
  const permissions = new Set<string>();
  const manifests: AnyToolManifest[] = [];
  for (const { tool, scope } of admitted(options, registration)) {
    const id = `${options.name}.${tool.name}`;
    const settings: ProcessToolSettings = options.tools?.[tool.name] ?? {};
    const tokens = tokensFor(options.name, tool.name, scope, options.scopeTokens);
    for (const t of tokens) permissions.add(t);
    const input = inputSchemaFor(id, tool.input_schema);
    const operatorRule = settings.approval ?? "never";
    const sideEffectful = isSideEffectful(settings.effect ?? "write");
    const operatorPreview = settings.preview;
    const common = {
      id,
      title: settings.title ?? tool.name,
      description: tool.description.trim() || `Tool ${tool.name} served by tool process ${options.name} (it gave no description).`,
      input,
      output: processOutputSchema,
      actionType: settings.actionType ?? "process-call",
      effect: settings.effect ?? "write",
      requiredAllowlist: tokens,
      risk: settings.risk ?? "medium",
      ...(settings.visibility === undefined ? {} : { visibility: settings.visibility }),
      idempotent: settings.idempotent ?? false,
      retryable: settings.retryable ?? false,
      reversible: settings.reversible ?? false,
      timeoutMs: settings.timeoutMs ?? options.callTimeoutMs ?? 30_000,
      ...(settings.provider === undefined ? {} : { provider: settings.provider }),
      ...(settings.dataEgress === undefined ? {} : { dataEgress: settings.dataEgress }),
      ...(settings.dataClass === undefined ? {} : { dataClass: settings.dataClass }),
      ...(settings.requiredConsent === undefined ? {} : { requiredConsent: settings.requiredConsent }),
      runtimeIsolation: isolation,
      untrustedOutput: true,
      ...(settings.target === undefined ? {} : { target: settings.target }),
      describeResult: (output: z.output<typeof processOutputSchema>) => `verified: ${output.verified}`,
    };
    const handler = async (value: unknown, ctx: ToolContext): Promise<z.input<typeof processOutputSchema>> => {
      const key = escalations.key(id, value);
      const approved = escalations.approvedBy(key, ctx.plan);
      let outcome: CallOutcome;
      try {
        outcome = await invoke(tool.name, value, ctx, approved);
      } catch (error) {
        // Sent but no answer: for a side-effectful tool, nobody knows whether the effect happened.
        if (ToolError.is(error) && error.boundary === undefined) {
          throw new ToolError(error.code, error.message, { cause: error, boundary: sideEffectful ? "effect_state_unknown" : "effect_failed" });
        }
        throw error;
      }
      if (outcome.kind === "result") return { verified: outcome.verified, output: outcome.output as z.input<typeof processOutputSchema>["output"] };
      if (outcome.kind === "error") throw errorFor(id, options.name, tool.name, outcome);
      const reason = outcome.reason.slice(0, 1000);
      if (approved) {
        throw new ToolError("approval_invalid", `${id} asked for escalation again after a human approved it: ${reason}`, { boundary: "effect_not_started" });
      }
      escalations.remember(key, reason);
      // Core has no way yet for a body to ask for approval mid-call: the same input now requires it.
      throw new ToolError("approval_unknown", `${id} requires escalation (${reason}); no approval was given. Call again with the same input to request one.`, {
        boundary: "effect_not_started",
        details: { escalation: reason, retry: "same input" },
      });
    };
    // The approval rule is a predicate (an escalation can make any call need a human), so core's
    // rule for an operator's "never" is applied here: a high-risk write always asks.
    if (operatorRule === "never" && sideEffectful && RISK_LEVELS.indexOf(common.risk) >= RISK_LEVELS.indexOf("high")) {
      throw new ToolError("manifest_invalid", `tool ${id}: a ${common.effect} tool with risk ${common.risk} cannot declare approval "never"`);
    }
    manifests.push(
      defineTool({
        ...common,
        approval: (value: unknown) => {
          if (escalations.reason(escalations.key(id, value)) !== undefined) return true;
          if (operatorRule === "never") return false;
          if (operatorRule === "always") return true;
          return operatorRule(value);
        },
        preview: (value: unknown, ctx) => {
          const reason = escalations.reason(escalations.key(id, value));
          if (reason === undefined && operatorPreview) return operatorPreview(value, ctx);
          return defaultPreview(id, value, reason);
        },
        handler,
      }),
    );
  }
  return defineFamily({
    name: options.name,
    tools: manifests,
    permissions: [...permissions],
    description: `Tools served by tool process ${registration.tool_process_name || options.name} (${options.command}).`,
    kind: "process",
  });
}
