/**
 * The gate as data: the order of a call is an array of named steps, run by one small loop. A step
 * takes one stage of the call and returns the next, or a finished result (a refusal, a replay, an
 * approval request). Steps that need no I/O return synchronously and cost no await.
 */
import type { GateEnv } from "./env.js";
import type { InvokeResult } from "./results.js";
import type { CallStart } from "./call-state.js";
import { unexpectedFailure } from "./unexpected.js";
import { resolve } from "./steps/resolve.js";
import { killSwitch } from "./steps/kill-switch.js";
import { freeze } from "./steps/freeze.js";
import { validate } from "./steps/validate.js";
import { policy } from "./steps/policy.js";
import { provenance } from "./steps/provenance.js";
import { preview } from "./steps/preview.js";
import { deriveKey } from "./steps/derive-key.js";
import { replayCallerKey, replayCompleted } from "./steps/replay-completed.js";
import { limits, releaseSlots } from "./steps/limits.js";
import { approve } from "./steps/approve.js";
import { recordIntent } from "./steps/record-intent.js";
import { run } from "./steps/run.js";
import { checkOutput } from "./steps/check-output.js";
import { redactAndFence } from "./steps/redact-and-fence.js";
import { settle } from "./steps/settle.js";

type Finished = InvokeResult<unknown>;

export interface Step<In, Out> {
  readonly name: string;
  run(call: In, env: GateEnv): Out | Finished | Promise<Out | Finished>;
}

// Any step, whatever its stages.
type AnyStep = Step<any, any>;
type In<S> = S extends Step<infer I, unknown> ? I : never;
type Out<S> = S extends Step<never, infer O> ? O : never;

/** `true` when each step accepts what the one before it returns; otherwise names the break. */
export type Connected<S extends readonly AnyStep[]> = S extends readonly [infer A, infer B, ...infer Rest extends AnyStep[]]
  ? [Out<A>] extends [In<B>]
    ? Connected<[B & AnyStep, ...Rest]>
    : { readonly brokenAfter: A }
  : true;

/** Checks at compile time that the steps connect, and keeps the array as given. */
export function pipeline<const S extends readonly AnyStep[]>(steps: S & (Connected<S> extends true ? unknown : Connected<S>)): S {
  return steps;
}

/** Run `steps` over `start`; the last step always finishes the call. */
export async function runSteps<S extends { readonly invocationId: string; readonly slots?: readonly string[] | undefined }>(
  steps: readonly AnyStep[],
  start: S,
  env: GateEnv,
): Promise<Finished> {
  // Undefined unless a tracer or meter provider records: then no clock read, span or attribute object.
  const traced = env.telemetry.begin(start);
  let current: unknown = start;
  try {
    for (let i = 0; i < steps.length; i++) {
      const step = steps[i]!;
      let next: unknown = traced === undefined ? step.run(current, env) : traced.step(step, current, env);
      if (next instanceof Promise) next = await next;
      if (isFinished(next)) return traced === undefined ? next : traced.finish(next, step.name);
      current = next;
    }
  } catch (cause) {
    // A failure of the gate itself (a host's clock that stopped giving a time mid-call): invoke still never throws.
    return unexpectedFailure(env, current as CallStart, cause);
  } finally {
    // The secrets the call's connector read leave the redactor with the call (or after its late body).
    env.endCall(start.invocationId);
    if (start.slots !== undefined) releaseSlots(env, start.slots); // concurrency slots the limits step took, whatever the result
    traced?.close();
  }
  throw new Error(`the pipeline ${steps.map((s) => s.name).join(" → ")} ended without a result`);
}

function isFinished(value: unknown): value is Finished {
  return typeof (value as { status?: unknown }).status === "string";
}

/**
 * The order of every call. A completed call under the same key replays before a human is asked
 * (no new effect happens); the grant is consumed atomically with the intent.
 */
export const INVOKE_STEPS = pipeline([
  resolve,
  freeze, // synchronous, before any await: the caller cannot change the input after invoke
  killSwitch,
  validate,
  policy,
  replayCallerKey,
  provenance,
  preview,
  deriveKey,
  replayCompleted,
  limits,
  approve,
  recordIntent,
  run,
  checkOutput,
  redactAndFence,
  settle,
]);

/** The steps after the intent: shared by live calls and recovery's replay. */
export const EFFECT_STEPS = pipeline([run, checkOutput, redactAndFence, settle]);
