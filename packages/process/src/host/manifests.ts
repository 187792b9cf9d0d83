import {
  defineFamily,
  defineTool,
  hashCanonical,
  isSideEffectful,
  RISK_LEVELS,
  scanForInjection,
  TOOL_ID_MAX_LENGTH,
  TOOL_ID_PATTERN,
  ToolError,
  type AnyToolManifest,
  type EffectIdentity,
  type RuntimeIsolation,
  type ToolContext,
  type ToolFamily,
} from "@toolgate/core";
import { sandboxIsolation, type SandboxFacts } from "@toolgate/core/boundary";
import { z } from "zod";
import { classifyToolMessage, VERIFICATION_STATES, type DeclaredTool, type ToolRegister } from "../protocol/messages.js";
import type { CallOutcome } from "./session.js";
import { defaultPreview, Escalations, MAX_ESCALATION_REASON_CHARS } from "./escalations.js";
import { inputSchemaFor } from "./input-schema.js";
import type { ProcessToolSettings, StartToolProcessOptions } from "./options.js";
import { scopeWithin, tokensFor } from "./scopes.js";
import type { ResolvedSandbox } from "./spawn.js";
import { plainLine, toolClaim } from "./untrusted-text.js";

/** What a process tool returns to the gate: the tool's JSON output and its verification claim. */
export const processOutputSchema = z.object({ verified: z.enum(VERIFICATION_STATES), output: z.json() });

export type ProcessInvoke = (toolName: string, input: unknown, ctx: ToolContext, escalationApproved: boolean) => Promise<CallOutcome>;

/** Characters of a tool's error message kept; a longer one is withheld whole (see `plainText`). */
const MAX_ERROR_MESSAGE_CHARS = 1800;

function warn(options: StartToolProcessOptions, message: string, tool?: string): void {
  const event = { level: "warn" as const, process: options.name, message, ...(tool === undefined ? {} : { tool }) };
  if (options.onLog) options.onLog(event);
  else console.warn(`[toolgate process ${options.name}] ${message}`);
}

/** What the inventory says: computed from the sandbox the process was started in, never from what was hoped. */
function isolationOf(options: StartToolProcessOptions, sandbox: ResolvedSandbox, facts: SandboxFacts | undefined): RuntimeIsolation {
  const what = `tool process ${JSON.stringify(options.command)}`;
  if (sandbox.kind === "bubblewrap" && facts !== undefined) {
    return sandboxIsolation(
      facts,
      `${what} (sandbox ${sandbox.automatic ? '"auto"' : '"bubblewrap", chosen by the operator'}; environment allowlisted)`,
      "process",
    );
  }
  if (sandbox.kind === "custom") {
    // The host cannot see what an operator's wrapper enforces: it claims nothing for it.
    const wrapper = (sandbox.option as { argv: readonly string[] }).argv[0] ?? "";
    return {
      network: "as the wrapper allows",
      filesystem: "as the wrapper allows",
      secrets: "none",
      subprocess: "process",
      notes: `${what} inside the operator's wrapper ${JSON.stringify(wrapper)}, unchecked by the host; environment allowlisted`,
    };
  }
  const why = sandbox.automatic ? 'sandbox "auto" found no bwrap on PATH' : 'sandbox "none", chosen by the operator';
  return sandboxIsolation(undefined, `${what} (environment allowlisted)`, "process", why);
}

/** The tool's wire error as one of core's codes. Its message is the tool's text: made plain and bounded, never cut. */
function errorFor(toolId: string, processName: string, toolName: string, outcome: { code: string; message: string }): ToolError {
  const message = plainLine(outcome.message, MAX_ERROR_MESSAGE_CHARS, "the tool's message");
  switch (outcome.code) {
    case "cancelled":
      return new ToolError("cancelled", `${toolId} was cancelled: ${message}`);
    case "unknown_tool":
      return new ToolError("unknown_tool", `tool process ${processName} does not know ${toolName}: ${message}`, { boundary: "effect_not_started" });
    default:
      return new ToolError("handler_failed", `${toolId} failed: ${message}`, { details: { wireCode: plainLine(outcome.code, 128, "the code") } });
  }
}

/**
 * A tool's own text (description and input schema, which the model reads as the tool's definition)
 * that reads like instructions is registered only when the operator accepted that very text.
 */
function textAccepted(options: StartToolProcessOptions, tool: DeclaredTool): boolean {
  const text = { description: tool.description, input_schema: tool.input_schema };
  const findings = scanForInjection(text);
  if (findings.length === 0) return true;
  const digest = hashCanonical(text);
  const accepted = options.acceptedDescriptions ?? {};
  if (Object.hasOwn(accepted, tool.name) && accepted[tool.name] === digest) return true;
  const rules = [...new Set(findings.map((f) => f.rule))].join(", ");
  warn(
    options,
    `tool ${JSON.stringify(tool.name.slice(0, 80))} was not registered: its text reads like instructions to the model (${rules}); accept it with acceptedDescriptions.${tool.name.slice(0, 80)} = descriptionDigest ${digest}`,
    tool.name,
  );
  return false;
}

let warm = false;

/**
 * Run, once per host, the code a registration first runs cold (the JSON Schema conversion both
 * ways, the injection scan of a tool's text, the frame check), on a sample, while the first tool
 * process boots: its one-time cost then leaves the way from spawn to the first result. Only a
 * warm-up: it registers nothing, and a failure here is ignored (the real registration reports its own).
 */
export function warmRegistration(): void {
  if (warm) return;
  warm = true;
  const sample = {
    description: "Count the words of a text.",
    input_schema: { type: "object", properties: { text: { type: "string", maxLength: 100 } }, required: ["text"] },
  };
  try {
    inputSchemaFor("warm.up", sample.input_schema);
    scanForInjection(sample);
    classifyToolMessage({ type: "ToolRegister", tool_process_name: "warm", tools: [{ name: "warm", ...sample, required_scope: null }] });
  } catch {
    // a warm-up only
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
    if (!textAccepted(options, tool)) continue;
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
export function buildFamily(
  options: StartToolProcessOptions,
  sandbox: ResolvedSandbox,
  facts: SandboxFacts | undefined,
  registration: ToolRegister,
  invoke: ProcessInvoke,
): ToolFamily {
  const escalations = new Escalations(options.name);
  const isolation = isolationOf(options, sandbox, facts);
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
      // The key (a hash of the input) is computed only when some escalation is remembered, or one is asked for.
      const key = (): string => escalations.key(id, value, ctx.effect);
      const approved = !escalations.empty && escalations.approvedBy(key(), ctx.plan);
      let outcome: CallOutcome;
      try {
        outcome = await invoke(tool.name, value, ctx, approved);
      } catch (error) {
        // Sent but no answer: for a side-effectful tool, nobody knows whether the effect happened.
        if (ToolError.is(error) && error.boundary === undefined) {
          throw new ToolError(error.code, error.message, {
            cause: error,
            boundary: sideEffectful ? "effect_state_unknown" : "effect_failed",
            ...(error.details ? { details: error.details } : {}),
          });
        }
        throw error;
      }
      if (outcome.kind === "result") return { verified: outcome.verified, output: outcome.output as z.input<typeof processOutputSchema>["output"] };
      if (outcome.kind === "error") throw errorFor(id, options.name, tool.name, outcome);
      // The reason is the tool's claim: it travels as labelled data (details), never in the message's own wording.
      if (approved) {
        throw new ToolError("approval_invalid", `${id} asked for escalation again after a human approved it; the call was not run again`, {
          boundary: "effect_not_started",
          details: { escalation: toolClaim(options.name, outcome.reason, MAX_ESCALATION_REASON_CHARS) },
        });
      }
      const escalationKey = key();
      const claim = escalations.remember(escalationKey, outcome.reason);
      // The gate asks a human now, with the host's escalation preview (the reason as labelled data, its digest in the plan):
      // the caller gets approval_required in this round trip. The same input from the same caller then asks for that very
      // preview, so once granted the retry takes the grant and is sent with escalation_approved.
      throw new ToolError(
        "approval_unknown",
        `${id} asked for a human's approval before acting; none was given. Call again with the same input to request one.`,
        {
          boundary: "effect_not_started",
          details: { escalation: claim, retry: "same input" },
          askApproval: escalations.preview(escalationKey, id, value)!,
        },
      );
    };
    // The approval rule is a predicate (an escalation can make any call need a human), so core's
    // rule for an operator's "never" is applied here: a high-risk write always asks.
    if (operatorRule === "never" && sideEffectful && RISK_LEVELS.indexOf(common.risk) >= RISK_LEVELS.indexOf("high")) {
      throw new ToolError("manifest_invalid", `tool ${id}: a ${common.effect} tool with risk ${common.risk} cannot declare approval "never"`);
    }
    manifests.push(
      defineTool({
        ...common,
        // The process's input schema is its own: an approver approves or denies its calls as asked, never edits them.
        edits: false,
        // The gate hands a predicate the call's identity: an escalation counts only for the caller it was raised for.
        // (Optional here only so an older core, which passed the input alone, still type-checks; without it nothing matches.)
        approval: (value: unknown, call?: EffectIdentity) => {
          if (!escalations.empty && escalations.has(escalations.key(id, value, call))) return true;
          if (operatorRule === "never") return false;
          if (operatorRule === "always") return true;
          return (operatorRule as (input: unknown, call?: EffectIdentity) => boolean)(value, call);
        },
        preview: (value: unknown, ctx) => {
          const escalated = escalations.empty ? undefined : escalations.preview(escalations.key(id, value, ctx.effect), id, value);
          if (escalated) return escalated;
          return operatorPreview ? operatorPreview(value, ctx) : defaultPreview(id, value);
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
