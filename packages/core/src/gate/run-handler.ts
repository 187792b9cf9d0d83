/** How a tool body ended, as the gate needs to know it. */
export type HandlerOutcome =
  | { readonly kind: "returned"; readonly value: unknown }
  | { readonly kind: "threw"; readonly error: unknown }
  /** Cancelled or past its deadline while running; `late` settles when the body finally does. */
  | { readonly kind: "aborted"; readonly why: "timeout" | "cancelled"; readonly late: Promise<unknown> };

/**
 * One running body: its deadline, the caller's cancellation, and the signal it sees. The
 * AbortController is made only when the body asks for `signal` — most bodies never do, and it is a
 * large share of a small call's cost.
 */
export class HandlerRun {
  private controller: AbortController | undefined;
  private abortedWhy: Error | undefined;
  private timedOut = false;
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
      this.stopListening();
      return { kind: "threw", error };
    }
    let pending: Promise<unknown> | undefined;
    try {
      // Adopting a thenable reads its `then` once more; a getter that throws there is the body's failure.
      if (isThenable(returned)) pending = Promise.resolve(returned);
    } catch (error) {
      this.stopListening();
      return { kind: "threw", error };
    }
    if (pending === undefined) {
      this.stopListening();
      return { kind: "returned", value: returned };
    }
    this.late = pending;
    return new Promise<HandlerOutcome>((resolve) => {
      const deadline = setTimeout(() => this.abort(true), this.timeoutMs);
      this.wake = (outcome) => {
        clearTimeout(deadline);
        this.stopListening();
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

  private abortedOutcome(): HandlerOutcome {
    return { kind: "aborted", why: this.why, late: this.late ?? Promise.resolve(undefined) };
  }

  private abort(deadline: boolean): void {
    if (this.abortedWhy) return;
    this.timedOut = deadline;
    this.abortedWhy = deadline ? new Error("deadline") : callerReason(this.callerSignal);
    this.controller?.abort(this.abortedWhy);
    this.wake?.(this.abortedOutcome());
  }
}

function callerReason(signal: AbortSignal | undefined): Error {
  const reason: unknown = signal?.reason;
  return reason instanceof Error ? reason : new Error("cancelled");
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return value !== null && (typeof value === "object" || typeof value === "function") && typeof (value as { then?: unknown }).then === "function";
}
