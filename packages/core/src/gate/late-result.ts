/** A body that outlived its deadline: its late result is journaled, never returned. */
import { hashCanonical } from "../canonical-json.js";
import { isSideEffectful } from "../manifest.js";
import { scanForInjection } from "../untrusted.js";
import type { Runnable, Writable } from "./call-state.js";
import type { GateEnv } from "./env.js";
import { audit, describeOutput, errorText } from "./outcomes.js";
import { releaseSlots } from "./steps/limits.js";

export function watchLate(env: GateEnv, c: Runnable, run: Promise<unknown>): void {
  const { manifest } = c.tool;
  const late = run.then(
    async (raw) => {
      const checked = manifest.output.safeParse(raw);
      const output = checked.success ? env.redactor.redact(checked.data) : undefined;
      const data = {
        late: true,
        valid: checked.success,
        ...(checked.success ? { outputHash: hashCanonical(output ?? null), result: describeOutput(manifest, output, env.redactor) } : {}),
      };
      if (c.intent && checked.success && isSideEffectful(manifest.effect)) {
        // The effect did happen: record it so a retry with the same key replays instead of repeating.
        const findings = manifest.untrustedOutput ? scanForInjection(output) : [];
        await env.journal.settleIntent(c.key, {
          state: "completed",
          boundary: "effect_completed",
          intentHash: c.intent.intentHash,
          invocationId: c.invocationId,
          at: env.iso(),
          result: { output, outputHash: hashCanonical(output ?? null), untrusted: manifest.untrustedOutput, findings },
          audit: env.redactor.redact(data),
          eventType: "call.late_result",
        });
      } else {
        await audit(env, c, "call.late_result", data);
      }
    },
    async (cause: unknown) => {
      await audit(env, c, "call.late_result", { late: true, failed: true, message: env.redactor.redactText(errorText(cause)).slice(0, 500) });
    },
  );
  const ended = env.outlive(c.invocationId);
  // The body is still in flight: its concurrency slots stay taken until it settles, not when the call ends.
  const slots = c.slots;
  (c as Writable<Runnable>).slots = undefined;
  const tracked = late
    .catch(() => undefined)
    .finally(() => {
      env.pendingLate.delete(tracked);
      ended();
      if (slots !== undefined) releaseSlots(env, slots);
    });
  env.pendingLate.add(tracked);
}
