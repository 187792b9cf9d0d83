/**
 * Step 8: a completed call under the same key is replayed without running, or asking a human, again: no
 * new effect happens, and a retry after a lost response must work once the grant is spent. A call
 * still running under the key is refused. Failed and unknown attempts are judged after approval,
 * when the intent is recorded.
 *
 * Two steps apply the rule. With the caller's own key, `replay-caller-key` looks before the
 * preview: the preview may read state the effect used up (a sent draft, a deleted event), and the
 * retry must replay, not fail on it. A derived key depends on the preview, so `replay-completed`
 * looks after it.
 */
import { ToolError } from "../../errors.js";
import type { OutboxEntry } from "../../journal/types.js";
import type { Authorized, Checked, Keyed, Writable } from "../call-state.js";
import { assignKeys } from "./derive-key.js";
import type { GateEnv } from "../env.js";
import type { InvokeResult } from "../results.js";
import { judgeExisting } from "../existing-entry.js";
import { refuse } from "../outcomes.js";
import type { Step } from "../pipeline.js";

export const replayCallerKey: Step<Authorized, Authorized> = {
  name: "replay-caller-key",
  run(c, env) {
    if (c.call.idempotencyKey === undefined) return c;
    return lookUpKey(assignKeys(c, undefined), env);
  },
};

export const replayCompleted: Step<Keyed, Checked> = {
  name: "replay-completed",
  run(c, env) {
    // Nothing can exist under a fresh key; a caller's key was looked up before the preview.
    if (!c.usesOutbox || c.fresh || c.call.idempotencyKey !== undefined) return c as Checked;
    return lookUpKey(c, env, true);
  },
};

/**
 * A retry of a call an approver edited, whose key was derived from a preview the edited call's
 * effect has since changed (the event it moved reads differently now): the journal's edited-run
 * record, found by the input as asked (tool, input, principal, tenant), names the edited call's
 * key. Within the derived-key window that entry answers the retry as a replay (or refuses it while
 * it runs, or while its effect is unknown); never a run. Only an entry its own key would retake (it
 * failed before its effect) lets the retry go on to ask a human anew. Read only by a call about to ask a human that found nothing under its key.
 */
async function editedRunEntry(c: Keyed, env: GateEnv): Promise<OutboxEntry | undefined> {
  const run = await env.journal.editedRun(c.manifest.id, c.inputHash, c.call.principal, c.call.tenant);
  if (run === undefined || !(Date.parse(run.at) >= env.clock() - env.derivedKeyWindowMs)) return undefined;
  return env.journal.getIntent(run.key);
}

async function lookUpKey(c: Keyed, env: GateEnv, derived = false): Promise<Checked | InvokeResult<unknown>> {
  let existing;
  let edited;
  try {
    existing = await env.journal.getIntent(c.key);
    if (derived && existing === undefined && c.approval) edited = await editedRunEntry(c, env);
  } catch (cause) {
    return refuse(env, c, "error", new ToolError("journal_failed", "the journal could not be read", { cause }));
  }
  const next = c as Writable<Checked>;
  next.existing = existing;
  if (edited !== undefined) {
    // Another key's entry: it answers this call as it would under its own key (a replay, a run in
    // flight, an effect that may have happened), but is never retaken under this call's key.
    const verdict = await judgeExisting(env, c, edited);
    if (!("retake" in verdict)) return verdict;
  }
  if (existing?.state !== "completed" && existing?.state !== "pending") return next;
  const verdict = await judgeExisting(env, c, existing);
  if (!("retake" in verdict)) return verdict;
  next.retakeFrom = verdict.retake;
  return next;
}
