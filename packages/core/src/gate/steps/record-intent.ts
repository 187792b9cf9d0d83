/**
 * Step 11: the intent is journaled before the effect, atomically with the key lookup and the
 * grant's consumption; the body runs only after the journal returns. An earlier failed or unknown
 * attempt is judged here (retaken, replayed as an error, or refused). A call without an outbox
 * entry (pure, no key) only consumes its grant. The call's window limits are charged in the same
 * transaction (or alone, for a pure call without key or grant): a call is counted once, when it
 * commits to run, and a worker that took a window's last slot first makes this call `rate_limited`.
 */
import { ToolError } from "../../errors.js";
import type { GrantCheck, IntentInput, LimitCharge, OutboxState } from "../../journal/types.js";
import type { Approved, Runnable, Writable } from "../call-state.js";
import type { InvokeResult } from "../results.js";
import type { GateEnv } from "../env.js";
import { judgeExisting } from "../existing-entry.js";
import { intentHashOf } from "../intent-hash.js";
import { grantRefusal, grantSpent, redactedInput } from "../grants.js";
import { identity, refuse, settleFailure, targetOf } from "../outcomes.js";
import type { Step } from "../pipeline.js";
import { refuseLimited } from "./limits.js";

type Intended = Approved & Runnable;

export const recordIntent: Step<Approved, Intended> = {
  name: "record-intent",
  run(c, env) {
    const next = c as Writable<Intended>;
    next.plan = c.approval?.plan ?? c.waivedPlan;
    if (c.usesOutbox) return beginIntent(next, env);
    if (c.grant) return consumeGrantAlone(next, c.grant, env);
    if (c.charges) return chargeAlone(next, c.charges, env);
    return next; // a pure call without a key or limits: nothing to record before it runs
  },
};

/** The journal refused the charge (another worker took the window's last slot), or could not record it. */
function notRecorded(env: GateEnv, c: Intended, cause: unknown, message: string): Promise<InvokeResult<unknown>> {
  if (ToolError.is(cause, "rate_limited")) return refuseLimited(env, c, cause);
  return refuse(env, c, "error", new ToolError("journal_failed", message, { cause }));
}

/** A pure call without a key or grant, under window limits: only its charges are recorded. */
async function chargeAlone(c: Intended, charges: readonly LimitCharge[], env: GateEnv): Promise<Intended | InvokeResult<unknown>> {
  try {
    await env.journal.chargeLimits(charges, { type: "limit.charged", at: env.iso(), data: {}, ...identity(c) });
  } catch (cause) {
    return notRecorded(env, c, cause, "the call's count against its limits could not be recorded, so the call was not run");
  }
  return c;
}

/** A call without an outbox entry that needed a human: the grant is consumed on its own. */
async function consumeGrantAlone(c: Intended, grant: GrantCheck, env: GateEnv): Promise<Intended | InvokeResult<unknown>> {
  let outcome;
  try {
    outcome = await env.journal.consumeGrant(
      grant,
      {
        type: "approval.used",
        at: env.iso(),
        ...identity(c),
        data: { requestId: grant.requestId, ...(c.edited ? { inputHash: c.inputHash, askedInputHash: c.edited.askedInputHash } : {}) },
      },
      c.charges ? { charges: c.charges } : undefined,
    );
  } catch (cause) {
    return notRecorded(env, c, cause, "the grant could not be recorded as used, so the call was not run");
  }
  if (outcome.status !== "consumed") return refuse(env, c, "denied", grantRefusal(outcome, grant.requestId));
  grantSpent(env, c);
  return c;
}

async function beginIntent(c: Writable<Intended>, env: GateEnv): Promise<Intended | InvokeResult<unknown>> {
  const intent = intentFor(env, c);
  let retake: { attempts: number; states: readonly OutboxState[] } | undefined;
  if (c.existing) {
    const verdict = c.retakeFrom ? { retake: c.retakeFrom } : await judgeExisting(env, c, c.existing);
    if (!("retake" in verdict)) return verdict;
    retake = { attempts: c.existing.attempts, states: verdict.retake };
  }
  let begun;
  try {
    begun = await env.journal.beginIntent(intent, {
      ...(c.grant ? { grant: c.grant } : {}),
      ...(retake ? { retake } : {}),
      ...(c.charges ? { charges: c.charges } : {}),
    });
  } catch (cause) {
    // The journal cannot tell whether the intent was recorded (a connection lost during its commit):
    // this call did not run, but recovery may find the intent and replay it, so it is not a refusal.
    if (ToolError.is(cause) && cause.boundary === "effect_state_unknown") {
      const error = new ToolError("journal_failed", "whether the intent was recorded is unknown: the call was not run here, recovery may run it", { cause });
      return settleFailure(env, c, "effect_state_unknown", error);
    }
    return notRecorded(env, c, cause, "the intent could not be recorded, so the call was not run");
  }
  if (begun.status === "grant_refused") return refuse(env, c, "denied", grantRefusal(begun.outcome, c.grant?.requestId ?? ""));
  if (begun.status === "existing") {
    const verdict = await judgeExisting(env, c, begun.entry);
    if (!("retake" in verdict)) return verdict;
    return refuse(env, c, "denied", new ToolError("idempotency_in_flight", "another attempt with this idempotency key started at the same time"));
  }
  c.intent = intent;
  if (c.grant) grantSpent(env, c);
  return c;
}

/** The intent of the call as it will run: for an approver's edit, the edited input, hash and target, and which edit it is. */
function intentFor(env: GateEnv, c: Approved): IntentInput {
  const { input, inputRedacted } = redactedInput(env, c);
  const base = {
    key: c.key,
    invocationId: c.invocationId,
    toolId: c.manifest.id,
    principal: c.call.principal,
    tenant: c.call.tenant,
    inputHash: c.inputHash,
    input,
    inputRedacted,
    effect: c.manifest.effect,
    idempotent: c.manifest.idempotent,
    target: targetOf(env, c),
    at: env.iso(),
    ...(c.edited ? { edited: { requestId: c.edited.requestId, askedInputHash: c.edited.askedInputHash, changes: c.edited.changes } } : {}),
  };
  return { ...base, intentHash: intentHashOf(base, inputRedacted ? undefined : c.inputJson) };
}
