/** How a tool body ended, as the gate needs to know it. */
export type HandlerOutcome =
  | { readonly kind: "returned"; readonly value: unknown }
  | { readonly kind: "threw"; readonly error: unknown }
  /** Cancelled or past its deadline while running; `late` settles when the body finally does. */
  | { readonly kind: "aborted"; readonly why: "timeout" | "cancelled"; readonly late: Promise<unknown> };

/** One `onAbort` subscription; `listener` is cleared once called or unsubscribed (at most one call). */
interface AbortSubscription {
  listener: ((reason: Error) => void) | undefined;
}

/**
 * One running body: its deadline, the caller's cancellation, and the signal it sees. The
 * AbortController is made only when the body asks for `signal` — most bodies never do, and it is a
 * large share of a small call's cost. `onAbort` tells a body the same without any controller.
 */
export class HandlerRun {
  private controller: AbortController | undefined;
  private abortedWhy: Error | undefined;
  private timedOut = false;
  private finished = false;
  private subscriptions: AbortSubscription[] | undefined;
  private wake: ((outcome: HandlerOutcome) => void) | undefined;
  private late: Promise<unknown> | undefined;

  constructor(
    private readonly timeoutMs: number,
    private readonly callerSignal: AbortSignal | undefined,
  ) {}

  /** The signal the body sees: aborts on the caller's cancellation or at the deadline. */
  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.abortedWhy) this.controller.abort(this.abortedWhy);
      else this.listenToCaller();
    }
    return this.controller.signal;
  }

  /**
   * Call `listener` once, with the reason, when the caller cancels or the deadline passes. Already
   * aborted: it is called synchronously, before `onAbort` returns. The body already ended without an
   * abort: never. A listener that throws is ignored. Returns an unsubscribe (idempotent).
   */
  onAbort(listener: (reason: Error) => void): () => void {
    if (this.abortedWhy) {
      callQuietly(listener, this.abortedWhy);
      return noop;
    }
    if (this.finished) return noop;
    const subscription: AbortSubscription = { listener };
    (this.subscriptions ??= []).push(subscription);
    this.listenToCaller();
    return () => {
      subscription.listener = undefined;
    };
  }

  get aborted(): boolean {
    return this.abortedWhy !== undefined;
  }

  get why(): "timeout" | "cancelled" {
    return this.timedOut ? "timeout" : "cancelled";
  }

  /**
   * Call the body. A body that returns synchronously needs no timer (nothing could interrupt it);
   * one that returns a promise races its deadline and the caller's signal.
   */
  start(body: () => unknown): HandlerOutcome | Promise<HandlerOutcome> {
    let returned: unknown;
    try {
      returned = body();
    } catch (error) {
      this.finish();
      return { kind: "threw", error };
    }
    let pending: Promise<unknown> | undefined;
    try {
      // Adopting a thenable reads its `then` once more; a getter that throws there is the body's failure.
      if (isThenable(returned)) pending = Promise.resolve(returned);
    } catch (error) {
      this.finish();
      return { kind: "threw", error };
    }
    if (pending === undefined) {
      this.finish();
      return { kind: "returned", value: returned };
    }
    this.late = pending;
    return new Promise<HandlerOutcome>((resolve) => {
      const deadline = setTimeout(() => this.abort(true), this.timeoutMs);
      this.wake = (outcome) => {
        clearTimeout(deadline);
        this.finish();
        this.wake = undefined;
        resolve(outcome);
      };
      if (this.abortedWhy) this.wake(this.abortedOutcome());
      else if (this.callerSignal?.aborted) this.abort(false);
      else this.listenToCaller();
      pending.then(
        (value) => this.wake?.({ kind: "returned", value }),
        (error: unknown) => this.wake?.({ kind: "threw", error }),
      );
    });
  }

  private readonly onCallerAbort = (): void => this.abort(false);
  private listening = false;

  private listenToCaller(): void {
    if (this.listening || !this.callerSignal) return;
    if (this.callerSignal.aborted) return this.abort(false);
    this.callerSignal.addEventListener("abort", this.onCallerAbort, { once: true });
    this.listening = true;
  }

  private stopListening(): void {
    if (!this.listening) return;
    this.callerSignal?.removeEventListener("abort", this.onCallerAbort);
    this.listening = false;
  }

  /** The body ended (or was cut off): nothing more to listen to, no listener left to call. */
  private finish(): void {
    this.finished = true;
    this.subscriptions = undefined;
    this.stopListening();
  }

  private abortedOutcome(): HandlerOutcome {
    return { kind: "aborted", why: this.why, late: this.late ?? Promise.resolve(undefined) };
  }

  private abort(deadline: boolean): void {
    if (this.abortedWhy) return;
    this.timedOut = deadline;
    this.abortedWhy = deadline ? new Error("deadline") : callerReason(this.callerSignal);
    this.controller?.abort(this.abortedWhy);
    const subscriptions = this.subscriptions;
    this.subscriptions = undefined;
    if (subscriptions) for (const subscription of subscriptions) notify(subscription, this.abortedWhy);
    this.wake?.(this.abortedOutcome());
  }
}

function notify(subscription: AbortSubscription, reason: Error): void {
  const listener = subscription.listener;
  subscription.listener = undefined;
  if (listener) callQuietly(listener, reason);
}

function callQuietly(listener: (reason: Error) => void, reason: Error): void {
  try {
    listener(reason);
  } catch {
    // a listener's failure is the body's own; it must not stop the abort or the other listeners
  }
}

const noop = (): void => undefined;

function callerReason(signal: AbortSignal | undefined): Error {
  const reason: unknown = signal?.reason;
  return reason instanceof Error ? reason : new Error("cancelled");
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return value !== null && (typeof value === "object" || typeof value === "function") && typeof (value as { then?: unknown }).then === "function";
}
