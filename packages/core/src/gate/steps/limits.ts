/**
 * Step: a profile's limits (calls per window, shared by every worker on the journal; calls in
 * flight per worker) are checked before a human is asked and before any effect. A completed call
 * replayed under its key never reaches this step, so it is not counted twice.
 */
import type { Checked } from "../call-state.js";
import type { GateEnv } from "../env.js";
import type { Step } from "../pipeline.js";

export const limits: Step<Checked, Checked> = {
  name: "limits",
  run(c) {
    return c;
  },
};

/** Give back the concurrency slots a call took (runs once, when the call ends, whatever its result). */
export function releaseSlots(env: GateEnv, slots: readonly string[]): void {
  for (const slot of slots) {
    const n = (env.inFlight.get(slot) ?? 0) - 1;
    if (n > 0) env.inFlight.set(slot, n);
    else env.inFlight.delete(slot);
  }
}
