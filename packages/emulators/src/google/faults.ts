import type { GoogleEndpointId } from "./scopes.js";

/**
 * A fault the emulator injects into matching requests.
 *
 * - `latency`: wait `ms` before handling the request (the effect still happens, as on a slow
 *   server; a client that gave up meanwhile never hears about it).
 * - `rate_limit`: answer 429 with `Retry-After: retryAfterSeconds` (default 1) and Google's
 *   `rateLimitExceeded` error; nothing is applied.
 * - `server_error`: answer `status` (default 503) with Google's `backendError`; nothing is applied.
 * - `drop_after_effect`: apply the request, then destroy the connection without answering. The
 *   client sees a reset socket; the emulator's state shows the effect.
 * - `drop_before_effect`: destroy the connection without applying anything.
 */
export type FaultRule =
  | ({ readonly kind: "latency"; readonly ms: number } & FaultScope)
  | ({ readonly kind: "rate_limit"; readonly retryAfterSeconds?: number } & FaultScope)
  | ({ readonly kind: "server_error"; readonly status?: 500 | 502 | 503 | 504 } & FaultScope)
  | ({ readonly kind: "drop_after_effect" } & FaultScope)
  | ({ readonly kind: "drop_before_effect" } & FaultScope);

export interface FaultScope {
  /** Endpoints it applies to (`gmail.users.messages.send`, `oauth2.token`…); absent means every API method (not OAuth). */
  readonly methods?: readonly GoogleEndpointId[];
  /** How many matching requests it applies to; default 1. `Infinity` keeps it until removed. */
  readonly times?: number;
}

/** A fault in force. */
export interface InjectedFault {
  readonly rule: FaultRule;
  /** Requests it has applied to so far. */
  readonly hits: number;
  /** Stop applying it. */
  remove(): void;
}

interface Slot {
  readonly rule: FaultRule;
  hits: number;
  removed: boolean;
}

/** @internal the emulator's fault table. */
export class FaultTable {
  private slots: Slot[] = [];

  add(rule: FaultRule): InjectedFault {
    const slot: Slot = { rule, hits: 0, removed: false };
    this.slots.push(slot);
    return {
      rule,
      get hits() {
        return slot.hits;
      },
      remove: () => {
        slot.removed = true;
        this.slots = this.slots.filter((s) => s !== slot);
      },
    };
  }

  clear(): void {
    for (const slot of this.slots) slot.removed = true;
    this.slots = [];
  }

  /** The faults that apply to this request, in the order added; each use counts as a hit. */
  take(endpoint: GoogleEndpointId, kinds: readonly FaultRule["kind"][]): FaultRule[] {
    const taken: FaultRule[] = [];
    for (const slot of this.slots) {
      if (slot.removed || !kinds.includes(slot.rule.kind)) continue;
      const methods = slot.rule.methods;
      const matches = methods ? methods.includes(endpoint) : !endpoint.startsWith("oauth2.");
      if (!matches) continue;
      slot.hits++;
      taken.push(slot.rule);
      if (slot.hits >= (slot.rule.times ?? 1)) {
        slot.removed = true;
      }
    }
    this.slots = this.slots.filter((s) => !s.removed);
    return taken;
  }
}
