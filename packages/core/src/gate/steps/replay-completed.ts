/**
 * Step 7: a completed call under the same key is replayed without running, or asking a human,
 * again: no new effect happens, and a retry after a lost response must work once the grant is
 * spent. A call still running under the key is refused. Failed and unknown attempts are judged
 * after approval, when the intent is recorded.
 */
import { ToolError } from "../../errors.js";
import type { Checked, Keyed, Writable } from "../call-state.js";
import type { GateEnv } from "../env.js";
import type { InvokeResult } from "../results.js";
import { judgeExisting } from "../existing-entry.js";
import { refuse } from "../outcomes.js";
import type { Step } from "../pipeline.js";

export const replayCompleted: Step<Keyed, Checked> = {
  name: "replay-completed",
  run(c, env) {
    if (!c.usesOutbox || c.fresh) return c as Checked; // nothing can exist under the key
    return lookUpKey(c, env);
  },
};

async function lookUpKey(c: Keyed, env: GateEnv): Promise<Checked | InvokeResult<unknown>> {
  let existing;
  try {
    existing = await env.journal.getIntent(c.key);
  } catch (cause) {
    return refuse(env, c, "error", new ToolError("journal_failed", "the journal could not be read", { cause }));
  }
  const next = c as Writable<Checked>;
  next.existing = existing;
  if (existing?.state !== "completed" && existing?.state !== "pending") return next;
  const verdict = await judgeExisting(env, c, existing);
  if (!("retake" in verdict)) return verdict;
  next.retakeFrom = verdict.retake;
  return next;
}
