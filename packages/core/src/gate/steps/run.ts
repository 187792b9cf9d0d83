/**
 * Step 12: the body runs with its context: the signal (caller's cancellation and the deadline),
 * the idempotency key to forward, the connector (opened first, scopes checked), progress, the
 * approved plan. A body that outlives its deadline or a cancellation is cut off: its late result
 * is journaled, never returned.
 */
import type { ConnectorHandle, ProgressEvent, ToolContext } from "../../context.js";
import { ToolError } from "../../errors.js";
import { scanForInjection } from "../../untrusted.js";
import type { Ran, Runnable, Writable } from "../call-state.js";
import type { InvokeResult } from "../results.js";
import { bounded, openConnector } from "../connector-access.js";
import type { GateEnv } from "../env.js";
import { watchLate } from "../late-result.js";
import { abortedError, identity, settleFailure, thrownError } from "../outcomes.js";
import type { Step } from "../pipeline.js";
import { HandlerRun, type HandlerOutcome } from "../run-handler.js";

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
  const ctx = contextFor(env, c, handlerRun, connector);
  const started = handlerRun.start(() => c.tool.handler(c.parsed, ctx));
  return started instanceof Promise ? started.then<Ran | InvokeResult<unknown>>((outcome) => settleOutcome(c, env, outcome)) : settleOutcome(c, env, started);
}

function settleOutcome(c: Runnable, env: GateEnv, outcome: HandlerOutcome): Ran | Promise<InvokeResult<unknown>> {
  const { manifest } = c.tool;
  if (outcome.kind === "aborted") {
    watchLate(env, c, outcome.late);
    return settleFailure(env, c, ...abortedError(manifest, outcome.why));
  }
  if (outcome.kind === "threw") return settleFailure(env, c, ...thrownError(manifest, outcome.error, env.redactor));
  (c as Writable<Ran>).raw = outcome.value;
  return c as Ran;
}

function contextFor(env: GateEnv, c: Runnable, run: HandlerRun, connector: ConnectorHandle | undefined): ToolContext {
  return {
    get signal() {
      return run.signal;
    },
    onAbort: (listener: (reason: Error) => void) => run.onAbort(listener),
    idempotencyKey: c.key,
    effect: identity(c),
    plan: c.plan,
    progress: (event: ProgressEvent) => {
      const listener = c.call.onProgress;
      if (!listener || run.aborted) return;
      try {
        const shown: ProgressEvent = env.redactor.redact({
          message: String(event?.message ?? ""),
          ...(event?.fraction === undefined ? {} : { fraction: event.fraction }),
          ...(event?.data ? { data: event.data } : {}),
        });
        listener(c.tool.manifest.untrustedOutput ? untrustedProgress(c.tool.manifest.id, shown) : shown);
      } catch {
        // a listener's failure is not the tool's
      }
    },
    connector,
    verifier: env.verifier,
    workspace: env.workspace,
    registerSecret: (value: string) => env.redactor.register(value),
    redactText: (text: string) => env.redactor.redactText(String(text)),
  };
}

/**
 * An untrusted tool's progress (a status line quoting what it read) may reach a model unfenced, as
 * a progress notification: it is marked untrusted, and withheld, data too, when it reads like instructions.
 */
function untrustedProgress(toolId: string, event: ProgressEvent): ProgressEvent {
  if (scanForInjection({ message: event.message, data: event.data ?? null }).length === 0) return { ...event, untrusted: true };
  return {
    message: `(progress text of ${toolId} withheld: it reads like instructions)`,
    ...(event.fraction === undefined ? {} : { fraction: event.fraction }),
    untrusted: true,
  };
}
