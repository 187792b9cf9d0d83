/**
 * Step 3 (after the input is frozen, before anything else reads it): an operator's kill switch. The switches are read from the journal at every call, so a
 * tool or family disabled on one worker is refused (`tool_disabled`, journaled) on the next call
 * of every worker sharing the journal. A journal that cannot say refuses the call too.
 */
import { switchFor } from "../../authority/switches.js";
import { ToolError } from "../../errors.js";
import type { KillSwitch } from "../../authority/types.js";
import type { Frozen, Runnable } from "../call-state.js";
import type { GateEnv } from "../env.js";
import type { InvokeResult } from "../results.js";
import { refuse } from "../outcomes.js";
import type { Step } from "../pipeline.js";

export const killSwitch: Step<Frozen, Frozen> = {
  name: "kill-switch",
  run: (c, env) => checkSwitches(c, env),
};

/** The same check for recovery: a disabled tool's recorded intent is not replayed either. */
export const killSwitchRecovered: Step<Runnable, Runnable> = {
  name: "kill-switch",
  run: (c, env) => checkSwitches(c, env),
};

async function checkSwitches<C extends Frozen>(c: C, env: GateEnv): Promise<C | InvokeResult<unknown>> {
  let stop: KillSwitch | undefined;
  try {
    stop = await switchFor(env.journal, c.manifest.id);
  } catch (cause) {
    return refuse(env, c, "error", new ToolError("journal_failed", "the kill switches could not be read, so the call was not run", { cause }));
  }
  if (!stop) return c;
  const error = new ToolError("tool_disabled", `${c.manifest.id} is disabled by an operator (${stop.target}): ${stop.reason}`, {
    details: { target: stop.target, by: stop.by, at: stop.at },
  });
  return refuse(env, c, "denied", error);
}
