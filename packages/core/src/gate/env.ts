/** What every step shares: the gate's configuration, its journal and redactor, its clock. */
import { randomBytes } from "node:crypto";
import type { ConnectorRuntime, Verifier, Workspace } from "../context.js";
import type { Journal } from "../journal/types.js";
import type { PolicyDecision } from "../policy.js";
import type { Profile } from "../profile.js";
import { createRedactor, type Redactor, type SecretLease } from "../redactor.js";
import type { RegisteredTool } from "../registry.js";
import { createGateTelemetry, type GateTelemetry, type TelemetryOptions } from "../telemetry/gate-telemetry.js";

export interface GateEnv {
  readonly tools: ReadonlyMap<string, RegisteredTool>;
  readonly journal: Journal;
  readonly redactor: Redactor;
  readonly connectors: ConnectorRuntime | undefined;
  readonly verifier: Verifier | undefined;
  readonly workspace: Workspace | undefined;
  readonly clock: () => number;
  /** `clock()` (or `ms`) as an ISO string, formatted once per millisecond. */
  iso(ms?: number): string;
  readonly requestTtlMs: number;
  readonly maxInputBytes: number;
  readonly derivedKeyWindowMs: number;
  /** Profiles are frozen, so a tool's policy decision for a profile never changes: decided once. */
  readonly decisions: WeakMap<Profile, Map<string, PolicyDecision>>;
  /** Bodies that outlived their deadline, until their late result is journaled. */
  readonly pendingLate: Set<Promise<unknown>>;
  /** Calls in flight on this gate per concurrency slot (profile, limit, tool): taken by the `limits` step, given back when the call ends. */
  readonly inFlight: Map<string, number>;
  /** Spans and metrics, when a provider records; `begin` is undefined otherwise. */
  readonly telemetry: GateTelemetry;
  nextInvocationId(): string;
  /** Hold a secret a call's connector read (its tokens) for as long as that call runs. */
  holdForCall(invocationId: string, secret: string): void;
  /** The call has ended (or its late body has settled): its connector's secrets leave the redactor. */
  endCall(invocationId: string): void;
  /** A body outlived its deadline: its secrets stay until the returned function is called, once its late result is in. */
  outlive(invocationId: string): () => void;
}

export interface GateEnvOptions {
  readonly tools: ReadonlyMap<string, RegisteredTool>;
  readonly journal: Journal;
  readonly connectors?: ConnectorRuntime | undefined;
  readonly verifier?: Verifier | undefined;
  readonly workspace?: Workspace | undefined;
  readonly clock?: (() => number) | undefined;
  readonly secrets?: readonly string[] | undefined;
  readonly approvalRequestTtlMs?: number | undefined;
  readonly maxInputBytes?: number | undefined;
  readonly derivedKeyWindowMs?: number | undefined;
  readonly telemetry?: TelemetryOptions | undefined;
}

export function createGateEnv(options: GateEnvOptions): GateEnv {
  const clock = options.clock === undefined ? Date.now : checkedClock(options.clock);
  // Most events of a call fall in the same millisecond: format each millisecond once.
  let isoMs = Number.NaN;
  let isoText = "";
  // Invocation ids: a random per-gate prefix and a counter: unique across processes, cheap per call.
  const prefix = `inv_${randomBytes(8).toString("hex")}_`;
  let counter = 0;
  const redactor = createRedactor(options.secrets ?? [], { clock });
  const held = new Map<string, SecretLease[]>();
  const outliving = new Set<string>();
  const release = (invocationId: string): void => {
    for (const lease of held.get(invocationId) ?? []) lease.release();
    held.delete(invocationId);
  };
  return {
    tools: options.tools,
    journal: options.journal,
    redactor,
    connectors: options.connectors,
    verifier: options.verifier,
    workspace: options.workspace,
    clock,
    iso(ms: number = clock()): string {
      if (ms !== isoMs) {
        isoMs = ms;
        isoText = new Date(ms).toISOString();
      }
      return isoText;
    },
    requestTtlMs: options.approvalRequestTtlMs ?? 24 * 60 * 60_000,
    maxInputBytes: options.maxInputBytes ?? 1024 * 1024,
    derivedKeyWindowMs: options.derivedKeyWindowMs ?? 10 * 60_000,
    decisions: new WeakMap(),
    pendingLate: new Set(),
    inFlight: new Map(),
    telemetry: createGateTelemetry(options.telemetry, redactor),
    nextInvocationId: () => `${prefix}${(counter++).toString(36)}`,
    holdForCall(invocationId, secret) {
      const lease = redactor.hold(secret);
      const leases = held.get(invocationId);
      if (leases) leases.push(lease);
      else held.set(invocationId, [lease]);
    },
    endCall(invocationId) {
      if (!outliving.has(invocationId)) release(invocationId);
    },
    outlive(invocationId) {
      outliving.add(invocationId);
      return () => {
        outliving.delete(invocationId);
        release(invocationId);
      };
    },
  };
}

/** The latest time a Date can hold, in milliseconds either side of the epoch. */
const MAX_DATE_MS = 8.64e15;

/**
 * A host's clock, read defensively: a time it cannot give (it throws, returns NaN, Infinity or a
 * value beyond what a Date holds) reads as NaN, which the resolve step refuses; `Date.now` needs no check.
 */
function checkedClock(raw: () => number): () => number {
  return () => {
    let t: unknown;
    try {
      t = raw();
    } catch {
      return Number.NaN;
    }
    return typeof t === "number" && Math.abs(t) <= MAX_DATE_MS ? t : Number.NaN;
  };
}
