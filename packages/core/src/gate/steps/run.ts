/**
 * Step 12: the body runs with its context: the signal (caller's cancellation and the deadline),
 * the idempotency key to forward, the connector (opened first, scopes checked), progress, the
 * approved plan. A body that outlives its deadline or a cancellation is cut off: its late result
 * is journaled, never returned.
 */
import type { ConnectorHandle } from "../../context.js";
import { ToolError } from "../../errors.js";
import type { Ran, Runnable, Writable } from "../call-state.js";
import type { InvokeResult } from "../results.js";
import { bounded, openConnector } from "../connector-access.js";
import type { GateEnv } from "../env.js";
import { watchLate } from "../late-result.js";
import { askMidCall, asksApproval } from "../mid-call-approval.js";
import { abortedError, settleFailure, thrownError } from "../outcomes.js";
import type { Step } from "../pipeline.js";
import { HandlerRun, type HandlerOutcome } from "../run-handler.js";
import { GateToolContext } from "../tool-context.js";

export const run: Step<Runnable, Ran> = {
  name: "run",
  run(c, env) {
    const { manifest } = c.tool;
    if (c.call.signal?.aborted) {
      return settleFailure(env, c, "effect_not_started", new ToolError("cancelled", `${manifest.id} was cancelled before it started`));
    }
    if (manifest.connector) return openThenRun(c, env);
    return runBody(c, env, undefined);
  },
};

async function openThenRun(c: Runnable, env: GateEnv): Promise<Ran | InvokeResult<unknown>> {
  let connector: ConnectorHandle;
  try {
    connector = await bounded(c, "opening the connector", (signal) => openConnector(env, c, signal));
  } catch (cause) {
    const error = ToolError.is(cause)
      ? cause
      : new ToolError("connector_unavailable", `could not open connector ${c.tool.manifest.connector?.provider}`, { cause });
    return settleFailure(env, c, "effect_not_started", error);
  }
  return runBody(c, env, connector);
}

/** A body that returns synchronously costs no timer and no await. */
function runBody(c: Runnable, env: GateEnv, connector: ConnectorHandle | undefined): Ran | Promise<Ran | InvokeResult<unknown>> {
  const handlerRun = new HandlerRun(c.tool.manifest.timeoutMs, c.call.signal);
  const ctx = new GateToolContext(env, c, handlerRun, connector);
  const started = handlerRun.start(() => c.tool.handler(c.parsed, ctx));
  return started instanceof Promise ? started.then<Ran | InvokeResult<unknown>>((outcome) => settleOutcome(c, env, outcome)) : settleOutcome(c, env, started);
}

function settleOutcome(c: Runnable, env: GateEnv, outcome: HandlerOutcome): Ran | Promise<InvokeResult<unknown>> {
  const { manifest } = c.tool;
  if (outcome.kind === "aborted") {
    watchLate(env, c, outcome.late);
    return settleFailure(env, c, ...abortedError(manifest, outcome.why));
  }
  if (outcome.kind === "threw") {
    // A body may ask for a human before its effect: the caller gets approval_required, as from the approve step.
    if (asksApproval(outcome.error)) return askMidCall(c, env, outcome.error);
    return settleFailure(env, c, ...thrownError(manifest, outcome.error, env.redactor));
  }
  (c as Writable<Ran>).raw = outcome.value;
  return c as Ran;
}
