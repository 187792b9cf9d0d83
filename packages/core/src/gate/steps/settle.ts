/** Step 15: the result is journaled, bound to the intent's hash (or audited once, for a call without an intent). */
import type { JournalReceipt } from "../../journal/types.js";
import type { Fenced } from "../call-state.js";
import type { GateEnv } from "../env.js";
import type { InvokeResult } from "../results.js";
import { audit, okResult } from "../outcomes.js";
import type { Step } from "../pipeline.js";

export const settle: Step<Fenced, never> = {
  name: "settle",
  run(c, env) {
    if (c.intent) return settleIntent(c, env);
    // A call without an intent: one audit event, no async frame of its own.
    const flagged = c.findings.length > 0 ? { flagged: c.findings.map((f) => f.rule) } : undefined;
    return audit(env, c, "call.completed", {
      inputHash: c.inputHash,
      outputHash: c.outputHash,
      result: c.described,
      durationMs: env.clock() - c.startedAt,
      ...flagged,
    }).then((receipt) => c.held ?? okResult(c, c.output, c.findings, false, receipt, c.outputJson));
  },
};

async function settleIntent(c: Fenced, env: GateEnv): Promise<InvokeResult<unknown>> {
  const { manifest } = c.tool;
  const flagged = c.findings.length > 0 ? { flagged: c.findings.map((f) => f.rule) } : undefined;
  const heldBy = c.held?.status === "approval_required" ? c.held.requestId : undefined;
  let receipt: JournalReceipt | null;
  try {
    receipt = await env.journal.settleIntent(c.key, {
      state: "completed",
      boundary: "effect_completed",
      intentHash: c.intent!.intentHash,
      invocationId: c.invocationId,
      at: env.iso(),
      result: {
        output: c.output,
        outputHash: c.outputHash,
        untrusted: manifest.untrustedOutput,
        findings: c.findings,
        ...(heldBy === undefined ? {} : { heldBy }),
      },
      audit: env.redactor.redact({ durationMs: env.clock() - c.startedAt, result: c.described, ...flagged }),
    });
  } catch {
    // The effect happened; the outbox entry stays pending for recovery. Say so rather than hide it.
    return {
      status: "error",
      toolId: manifest.id,
      invocationId: c.invocationId,
      receipt: null,
      code: "journal_failed",
      message: `${manifest.id} completed, but its result could not be journaled; recovery will find the intent`,
      boundary: "effect_completed",
      retryable: false,
    };
  }
  return c.held ?? okResult(c, c.output, c.findings, false, receipt, c.outputJson);
}
