/**
 * Step 9: the intent is journaled before the effect, atomically with the key lookup and the
 * grant's consumption; the body runs only after the journal returns. An earlier failed or unknown
 * attempt is judged here (retaken, replayed as an error, or refused). A call without an outbox
 * entry (pure, no key) only consumes its grant.
 */
import { hashCanonical } from "../../canonical-json.js";
import { ToolError } from "../../errors.js";
import type { GrantCheck, IntentInput, OutboxState } from "../../journal/types.js";
import type { Approved, Runnable, Writable } from "../call-state.js";
import type { InvokeResult } from "../results.js";
import type { GateEnv } from "../env.js";
import { judgeExisting } from "../existing-entry.js";
import { grantRefusal, grantSpent } from "../grants.js";
import { refuse, targetOf } from "../outcomes.js";
import type { Step } from "../pipeline.js";

type Intended = Approved & Runnable;

export const recordIntent: Step<Approved, Intended> = {
  name: "record-intent",
  run(c, env) {
    const next = c as Writable<Intended>;
    next.plan = c.approval?.plan;
    if (c.usesOutbox) return beginIntent(next, env);
    if (c.grant) return consumeGrantAlone(next, c.grant, env);
    return next; // a pure call without a key: nothing to record before it runs
  },
};

/** A call without an outbox entry that needed a human: the grant is consumed on its own. */
async function consumeGrantAlone(c: Intended, grant: GrantCheck, env: GateEnv): Promise<Intended | InvokeResult<unknown>> {
  let outcome;
  try {
    outcome = await env.journal.consumeGrant(grant, {
      type: "approval.used",
      at: env.iso(),
      invocationId: c.invocationId,
      toolId: c.manifest.id,
      principal: c.call.principal,
      tenant: c.call.tenant,
      data: { requestId: grant.requestId },
    });
  } catch (cause) {
    return refuse(env, c, "error", new ToolError("journal_failed", "the grant could not be recorded as used, so the call was not run", { cause }));
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
    begun = await env.journal.beginIntent(intent, { ...(c.grant ? { grant: c.grant } : {}), ...(retake ? { retake } : {}) });
  } catch (cause) {
    return refuse(env, c, "error", new ToolError("journal_failed", "the intent could not be recorded, so the call was not run", { cause }));
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

function intentFor(env: GateEnv, c: Approved): IntentInput {
  const redactedJson = env.redactor.redactText(c.inputJson);
  const base = {
    key: c.key,
    invocationId: c.invocationId,
    toolId: c.manifest.id,
    principal: c.call.principal,
    tenant: c.call.tenant,
    inputHash: c.inputHash,
    input: JSON.parse(redactedJson) as unknown,
    inputRedacted: redactedJson !== c.inputJson,
    effect: c.manifest.effect,
    idempotent: c.manifest.idempotent,
    target: targetOf(env, c),
    at: env.iso(),
  };
  return { ...base, intentHash: hashCanonical(base) };
}
