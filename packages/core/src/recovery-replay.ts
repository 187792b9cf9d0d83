/**
 * Recovery's replay as a pipeline: a recorded intent takes the place of the first steps (the call
 * was resolved, validated, authorized and journaled before the crash), then the same effect steps
 * as a live call run the body again with the same idempotency key.
 */
import { ToolError } from "./errors.js";
import type { Runnable } from "./gate/call-state.js";
import type { GateEnv } from "./gate/env.js";
import { EFFECT_STEPS, pipeline, runSteps, type Step } from "./gate/pipeline.js";
import type { InvokeResult } from "./gate/results.js";
import { findTool } from "./gate/steps/resolve.js";
import { killSwitchRecovered } from "./gate/steps/kill-switch.js";
import { freezeInput } from "./gate/steps/freeze.js";
import { parseInput } from "./gate/steps/validate.js";
import type { IntentInput, OutboxEntry } from "./journal/types.js";
import type { Profile } from "./profile.js";

interface Recovered {
  readonly entry: OutboxEntry;
  readonly invocationId: string;
  readonly signal: AbortSignal | undefined;
}

const RECOVERY_PROFILE = Object.freeze({
  name: "recovery",
  allow: Object.freeze([]),
  maxRisk: "critical",
  consents: Object.freeze([]),
  egress: Object.freeze([]),
  onInjection: "flag",
  limits: Object.freeze([]),
}) as Profile;

/**
 * The recorded intent, checked as the live steps would check a call: the tool still exists, the
 * recorded input still hashes to what was authorized and still passes the schema. Any failure
 * throws: recovery records the entry as unknown for an operator.
 */
export const recordedIntent: Step<Recovered, Runnable> = {
  name: "recorded-intent",
  run({ entry, invocationId, signal }, env) {
    const tool = findTool(env, entry.toolId);
    if (ToolError.is(tool)) throw tool;
    const frozen = freezeInput(env, entry.input);
    if (ToolError.is(frozen)) throw frozen;
    if (frozen.inputHash !== entry.inputHash) throw new ToolError("journal_failed", `the recorded input of ${entry.key} no longer matches its hash`);
    const checked = parseInput(tool.manifest, frozen.parsed, env.redactor);
    if ("error" in checked) throw checked.error;
    return {
      invocationId,
      requestedId: entry.toolId,
      input: entry.input,
      call: { principal: entry.principal, tenant: entry.tenant, profile: RECOVERY_PROFILE, ...(signal ? { signal } : {}) },
      startedAt: env.clock(),
      tool,
      manifest: tool.manifest,
      ...frozen,
      parsed: checked.data,
      visibleKey: entry.key,
      key: entry.key,
      intent: intentOf(entry),
      // A plan lives only as long as the approved call; a replayed body runs without one.
      plan: undefined,
    };
  },
};

/** An operator's kill switch stops a recovered intent too: it stays claimed-then-unsettled, for a later pass once enabled. */
export const RECOVERY_STEPS = pipeline([recordedIntent, killSwitchRecovered, ...EFFECT_STEPS]);

/** Run a recovered intent's body again with the same key. Only for entries the caller has claimed. */
export function replayIntent(env: GateEnv, entry: OutboxEntry, signal: AbortSignal | undefined): Promise<InvokeResult<unknown>> {
  return runSteps(RECOVERY_STEPS, { entry, invocationId: env.nextInvocationId(), signal }, env);
}

/** The intent an outbox entry was recorded with. */
export function intentOf(entry: OutboxEntry): IntentInput {
  return {
    key: entry.key,
    invocationId: entry.invocationId,
    toolId: entry.toolId,
    principal: entry.principal,
    tenant: entry.tenant,
    inputHash: entry.inputHash,
    input: entry.input,
    inputRedacted: entry.inputRedacted,
    effect: entry.effect,
    idempotent: entry.idempotent,
    target: entry.target,
    intentHash: entry.intentHash,
    at: entry.at,
  };
}
