/** Step 1: the gate's clock gave a time, the call options are well formed, the tool exists, and the call was not cancelled already. */
import { sessionState } from "../../provenance/session.js";
import { ToolError } from "../../errors.js";
import { RISK_LEVELS } from "../../manifest.js";
import type { RegisteredTool } from "../../registry.js";
import type { CallStart, Resolved, Writable } from "../call-state.js";
import type { GateEnv } from "../env.js";
import type { ApprovalGrant } from "../approvals.js";
import type { CallOptions } from "../gate.js";
import { refuse } from "../outcomes.js";
import type { Step } from "../pipeline.js";
import { redactedPrefix } from "../foreign-text.js";

const MAX_KEY_LENGTH = 256;
/** The longest call reference the journal stores (the framework adapters pass the same bound). */
const MAX_CALL_REF_LENGTH = 256;

export const resolve: Step<CallStart, Resolved> = {
  name: "resolve",
  run(c, env) {
    if (Number.isNaN(c.startedAt)) return refuse(env, c, "error", new ToolError("config_invalid", "the gate's clock gave no time (createGate's clock option)"));
    const problem = checkCallOptions(c.call);
    if (problem) return refuse(env, c, "error", problem);
    const tool = findTool(env, c.requestedId);
    if (ToolError.is(tool)) return refuse(env, c, "error", tool);
    if (c.call.signal?.aborted) return refuse(env, c, "error", new ToolError("cancelled", `${c.requestedId} was cancelled before it started`));
    const next = c as Writable<Resolved>;
    next.tool = tool;
    next.manifest = tool.manifest;
    return next;
  },
};

export function findTool(env: GateEnv, id: unknown): RegisteredTool | ToolError {
  const tool = typeof id === "string" ? env.tools.get(id) : undefined;
  if (tool) return tool;
  let asked: string;
  try {
    asked = String(id);
  } catch {
    asked = "unprintable";
  }
  // Redacted before it is cut: a model may name a secret as a tool, and a cut must never leave part of one.
  return new ToolError("unknown_tool", `no tool named ${JSON.stringify(redactedPrefix(env.redactor, asked, 128))}`, {
    details: { known: [...env.tools.values()].filter((t) => t.manifest.visibility !== "hidden").map((t) => t.manifest.id) },
  });
}

function checkCallOptions(call: CallOptions): ToolError | undefined {
  if (!call || typeof call !== "object") return new ToolError("config_invalid", "invoke needs call options { principal, tenant, profile }");
  const problems: string[] = [];
  if (typeof call.principal !== "string" || call.principal === "") problems.push("principal");
  if (typeof call.tenant !== "string" || call.tenant === "") problems.push("tenant");
  if (!isSoundProfile(call.profile)) problems.push("profile (from defineProfile: frozen, with allow, consents and egress)");
  if (
    call.idempotencyKey !== undefined &&
    (typeof call.idempotencyKey !== "string" || call.idempotencyKey.length === 0 || call.idempotencyKey.length > MAX_KEY_LENGTH)
  ) {
    problems.push(`idempotencyKey (1–${MAX_KEY_LENGTH} characters)`);
  }
  if (call.callRef !== undefined && (typeof call.callRef !== "string" || call.callRef.length === 0 || call.callRef.length > MAX_CALL_REF_LENGTH)) {
    problems.push(`callRef (1–${MAX_CALL_REF_LENGTH} characters)`);
  }
  const grant: unknown = call.approval;
  if (
    grant !== undefined &&
    (grant === null ||
      typeof grant !== "object" ||
      typeof (grant as ApprovalGrant).requestId !== "string" ||
      typeof (grant as ApprovalGrant).token !== "string")
  ) {
    problems.push("approval (the grant from gate.approvals.grant: requestId and token strings)");
  }
  if (call.signal !== undefined && !(call.signal instanceof AbortSignal)) problems.push("signal (an AbortSignal)");
  if (call.onProgress !== undefined && typeof call.onProgress !== "function") problems.push("onProgress (a function)");
  if (call.session !== undefined && sessionState(call.session) === undefined) problems.push("session (from gate.openSession)");
  return problems.length === 0 ? undefined : new ToolError("config_invalid", `invoke's call options are missing or malformed: ${problems.join(", ")}`);
}

/**
 * A profile as `defineProfile` makes it: frozen, its lists frozen. Policy decisions are cached per
 * profile, so a profile that could change after its first call (a token revoked in place) is
 * refused rather than honoured stale, and one missing a field is refused rather than thrown on.
 */
function isSoundProfile(profile: unknown): boolean {
  if (profile === null || typeof profile !== "object" || !Object.isFrozen(profile)) return false;
  if (soundProfiles.has(profile)) return true;
  const p = profile as Partial<Record<"name" | "maxRisk" | "onInjection" | "allow" | "consents" | "egress", unknown>>;
  const sound =
    typeof p.name === "string" &&
    (RISK_LEVELS as readonly unknown[]).includes(p.maxRisk) &&
    (p.onInjection === "flag" || p.onInjection === "hold") &&
    frozenList(p.allow) &&
    frozenList(p.consents) &&
    frozenList(p.egress);
  if (sound && PROFILE_FIELDS.every((field) => "value" in (Object.getOwnPropertyDescriptor(profile, field) ?? {}))) soundProfiles.add(profile);
  return sound;
}

/**
 * Profiles found sound whose fields are own data properties: frozen, those cannot change, so the
 * check is not repeated. One with a getter is checked again at every call, as before.
 */
const soundProfiles = new WeakSet<object>();
const PROFILE_FIELDS = ["name", "maxRisk", "onInjection", "allow", "consents", "egress"] as const;

function frozenList(list: unknown): boolean {
  return Array.isArray(list) && Object.isFrozen(list) && list.every((item) => typeof item === "string");
}
