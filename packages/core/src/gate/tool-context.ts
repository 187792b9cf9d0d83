/**
 * The context a body gets. One small object per call: what it reads (the signal, the effect's
 * identity, the bound functions) is made when the body first reads it, so a body that reads
 * nothing costs no AbortController, no closures and no identity object. What the gate keeps (its
 * redactor, the call) sits in private fields a body cannot reach. Functions read from it stay
 * bound (`const { progress } = ctx` works); its members are accessors on the prototype, so a
 * spread (`{ ...ctx }`) copies only the plain fields.
 */
import type { ConnectorHandle, EffectIdentity, ProgressEvent, ToolContext, Verifier, Workspace } from "../context.js";
import { scanForInjection } from "../untrusted.js";
import type { Runnable } from "./call-state.js";
import type { GateEnv } from "./env.js";
import { identity } from "./outcomes.js";
import type { HandlerRun } from "./run-handler.js";

export class GateToolContext implements ToolContext {
  readonly idempotencyKey: string;
  readonly plan: unknown;
  readonly connector: ConnectorHandle | undefined;
  readonly verifier: Verifier | undefined;
  readonly workspace: Workspace | undefined;
  readonly #env: GateEnv;
  readonly #c: Runnable;
  readonly #run: HandlerRun;
  #effect: EffectIdentity | undefined;
  #progress: ((event: ProgressEvent) => void) | undefined;
  #onAbort: ((listener: (reason: Error) => void) => () => void) | undefined;
  #registerSecret: ((value: string) => void) | undefined;
  #redactText: ((text: string) => string) | undefined;

  constructor(env: GateEnv, c: Runnable, run: HandlerRun, connector: ConnectorHandle | undefined) {
    this.#env = env;
    this.#c = c;
    this.#run = run;
    this.idempotencyKey = c.key;
    this.plan = c.plan;
    this.connector = connector;
    this.verifier = env.verifier;
    this.workspace = env.workspace;
  }

  get signal(): AbortSignal {
    return this.#run.signal;
  }

  get effect(): EffectIdentity {
    return (this.#effect ??= identity(this.#c));
  }

  get onAbort(): (listener: (reason: Error) => void) => () => void {
    const run = this.#run;
    return (this.#onAbort ??= (listener) => run.onAbort(listener));
  }

  get progress(): (event: ProgressEvent) => void {
    const env = this.#env;
    const c = this.#c;
    const run = this.#run;
    return (this.#progress ??= (event) => report(env, c, run, event));
  }

  get registerSecret(): (value: string) => void {
    const redactor = this.#env.redactor;
    return (this.#registerSecret ??= (value) => redactor.register(value));
  }

  get redactText(): (text: string) => string {
    const redactor = this.#env.redactor;
    return (this.#redactText ??= (text) => redactor.redactText(String(text)));
  }
}

function report(env: GateEnv, c: Runnable, run: HandlerRun, event: ProgressEvent): void {
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
