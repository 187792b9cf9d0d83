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
import { RECOVERY_PROFILE } from "./gate/recovered.js";
import type { IntentInput, OutboxEntry } from "./journal/types.js";

interface Recovered {
  readonly entry: OutboxEntry;
  readonly invocationId: string;
  readonly signal: AbortSignal | undefined;
}

/**
 * What recovery would replay, checked as the live steps would check a call: the tool still exists
 * and is, as registered now, an idempotent side effect of the recorded kind (a live retry of an
 * unknown entry follows the tool as registered too), and the recorded input still hashes to what
 * was authorized and still passes the schema. A `ToolError` says why it cannot be replayed.
 */
export function checkRecorded(env: GateEnv, entry: OutboxEntry) {
  const tool = findTool(env, entry.toolId);
  if (ToolError.is(tool)) return tool;
  const { manifest } = tool;
  if (!manifest.idempotent || manifest.effect !== entry.effect) {
    const now = `${manifest.idempotent ? "an idempotent" : "a non-idempotent"} ${manifest.effect}`;
    return new ToolError("effect_state_unknown", `${entry.toolId} is registered now as ${now}, not the idempotent ${entry.effect} it was recorded as`);
  }
  const frozen = freezeInput(env, entry.input);
  if (ToolError.is(frozen)) return frozen;
  if (frozen.inputHash !== entry.inputHash) return new ToolError("journal_failed", `the recorded input of ${entry.key} no longer matches its hash`);
  const checked = parseInput(manifest, frozen.parsed, env.redactor);
  if ("error" in checked) return checked.error;
  return { tool, frozen, parsed: checked.data };
}

/** The recorded intent as the first step of a replay (recovery settled it for an operator if {@link checkRecorded} refused it). */
export const recordedIntent: Step<Recovered, Runnable> = {
  name: "recorded-intent",
  run({ entry, invocationId, signal }, env) {
    const checked = checkRecorded(env, entry);
    if (ToolError.is(checked)) throw checked;
    const { tool, frozen, parsed } = checked;
    return {
      invocationId,
      requestedId: entry.toolId,
      input: entry.input,
      call: { principal: entry.principal, tenant: entry.tenant, profile: RECOVERY_PROFILE, ...(signal ? { signal } : {}) },
      startedAt: env.clock(),
      tool,
      manifest: tool.manifest,
      ...frozen,
      parsed,
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
