import { describe, expect, it } from "vitest";
import { RECOVERY_STEPS } from "../recovery-replay.js";
import { EFFECT_STEPS, INVOKE_STEPS } from "./pipeline.js";

describe("the gate's pipeline", () => {
  it("runs a call's steps in this order (a changed order is a visible decision)", () => {
    expect(INVOKE_STEPS.map((s) => s.name)).toEqual([
      "resolve",
      "freeze",
      "kill-switch",
      "validate",
      "policy",
      "replay-caller-key",
      "provenance",
      "preview",
      "derive-key",
      "replay-completed",
      "limits",
      "approve",
      "record-intent",
      "run",
      "check-output",
      "redact-and-fence",
      "settle",
    ]);
  });

  it("shares its effect steps with recovery's replay: the same objects, not copies", () => {
    expect(INVOKE_STEPS.slice(-EFFECT_STEPS.length)).toEqual([...EFFECT_STEPS]);
    for (const [i, step] of EFFECT_STEPS.entries()) expect(INVOKE_STEPS[INVOKE_STEPS.length - EFFECT_STEPS.length + i]).toBe(step);
    // A recovered intent passes the kill switch too, then the same effect steps.
    expect(RECOVERY_STEPS.map((s) => s.name)).toEqual(["recorded-intent", "kill-switch", ...EFFECT_STEPS.map((s) => s.name)]);
    expect(RECOVERY_STEPS.slice(2)).toEqual([...EFFECT_STEPS]);
  });
});
