import { ToolError } from "../errors.js";
import { createAuthority } from "../authority/create-authority.js";
import type { Authority } from "../authority/types.js";
import type { ProgressEvent, ConnectorRuntime, Verifier, Workspace } from "../context.js";
import type { Journal } from "../journal/types.js";
import type { AnyToolManifest } from "../manifest.js";
import type { Profile } from "../profile.js";
import type { Redactor } from "../redactor.js";
import { registryInternals, type ToolById, type ToolIdOf, type ToolInput, type ToolOutput, type ToolRegistry } from "../registry.js";
import { createApprovalDesk, type ApprovalDesk, type ApprovalGrant } from "./approvals.js";
import { startCall } from "./call-state.js";
import { createGateEnv, type GateEnv } from "./env.js";
import { INVOKE_STEPS, runSteps } from "./pipeline.js";
import type { InvokeResult } from "./results.js";
import type { TelemetryOptions } from "../telemetry/gate-telemetry.js";
import { openSession, type ProvenanceSession, type SessionOptions } from "../provenance/session.js";

export interface CreateGateOptions<TTool extends AnyToolManifest> {
  readonly registry: ToolRegistry<TTool>;
  readonly journal: Journal;
  /** The token runtime; required when any tool declares a `connector`. */
  readonly connectors?: ConnectorRuntime;
  readonly verifier?: Verifier;
  readonly workspace?: Workspace;
  /** Milliseconds since the epoch; default `Date.now`. Used for timestamps and expiry. */
  readonly clock?: () => number;
  /** Secret values redacted from every output, error, progress event and journal entry. */
  readonly secrets?: readonly string[];
  /** How long an approval request waits for a human; default 24 hours. */
  readonly approvalRequestTtlMs?: number;
  /** Largest canonical input accepted, in bytes; default 1 MiB. */
  readonly maxInputBytes?: number;
  /**
   * Without a caller's key, an identical side-effectful call within this window is a retry and is
   * replayed; after it, a new call. Default 10 minutes.
   */
  readonly derivedKeyWindowMs?: number;
  /**
   * OpenTelemetry: a span per call and per step, and metrics. Default: the global providers, looked
   * up per call; with none registered a call costs nothing more. Principal and tenant are recorded
   * only with `recordPrincipal: true`.
   */
  readonly telemetry?: TelemetryOptions;
}

/** Per-call facts from the host (never from the model). */
export interface CallOptions {
  readonly principal: string;
  readonly tenant: string;
  readonly profile: Profile;
  /** The caller's key. Without one, side-effectful calls get a key derived from tool, input, principal and tenant. */
  readonly idempotencyKey?: string;
  readonly approval?: ApprovalGrant;
  /** A framework's or client's own id for this call (at most 256 characters): recorded on its approval request and shown. */
  readonly callRef?: string;
  readonly signal?: AbortSignal;
  readonly onProgress?: (event: ProgressEvent) => void;
  /**
   * The agent run this call belongs to (`gate.openSession`): its outputs are remembered, and a
   * side-effectful call's arguments are judged by where they came from (see `docs/security-model.md`).
   */
  readonly session?: ProvenanceSession;
}

/** The input type for `invoke(id, …)`: typed for a known id, `unknown` for a string from a model. */
export type InputFor<TTool, TId extends string> =
  string extends ToolIdOf<TTool>
    ? unknown // a registry whose ids are not literal types (families built from arrays at run time)
    : TId extends ToolIdOf<TTool>
      ? ToolInput<ToolById<TTool, TId>>
      : string extends TId
        ? unknown
        : never;
export type OutputFor<TTool, TId extends string> =
  string extends ToolIdOf<TTool> ? unknown : TId extends ToolIdOf<TTool> ? ToolOutput<ToolById<TTool, TId>> : unknown;

/** Any gate, whatever its registry's tools: for functions that take a gate and do not care which. */
export type AnyGate = Gate<any>;

export interface Gate<TTool extends AnyToolManifest = AnyToolManifest> {
  /**
   * Run one tool call through the steps of `INVOKE_STEPS`, in order: resolve, freeze, kill-switch, validate,
   * policy, replay-caller-key, provenance (in a session: where the arguments came from), preview, derive-key, replay-completed (a completed call under the
   * same key replays before a human is asked — with the caller's key, before the preview too),
   * limits (the profile's rate limits and budgets, before a human is asked), approve, record-intent
   * (the grant and the limits' counts are consumed with it), run, check-output, redact-and-fence,
   * settle. Never throws for anything a call can do wrong; the result says what happened.
   */
  invoke<const TId extends string>(toolId: TId, input: InputFor<TTool, TId>, call: CallOptions): Promise<InvokeResult<OutputFor<TTool, TId>>>;
  readonly approvals: ApprovalDesk;
  /** Operators, sessions, MCP clients and kill switches, kept in this gate's journal. */
  readonly authority: Authority;
  readonly redactor: Redactor;
  readonly registry: ToolRegistry<TTool>;
  readonly journal: Journal;
  /**
   * Open a session (one agent run): `trusted` is what the host vouches for (the user's own
   * instructions, configured contacts). Pass it as `call.session` on every call of the run.
   */
  openSession(options?: SessionOptions): ProvenanceSession;
  /** Wait for calls that outlived their deadline to settle in the journal (tests, shutdown). */
  drain(): Promise<void>;
}

export function createGate<TTool extends AnyToolManifest>(options: CreateGateOptions<TTool>): Gate<TTool> {
  if (!options?.registry) throw new ToolError("config_invalid", "createGate needs a registry");
  if (!options.journal) throw new ToolError("config_invalid", "createGate needs a journal");
  const { registry, journal } = options;
  const { tools } = registryInternals(registry);
  for (const t of tools.values()) {
    if (t.manifest.connector && !options.connectors) {
      throw new ToolError("config_invalid", `tool ${t.manifest.id} needs connector ${t.manifest.connector.provider}, but the gate has no connectors`);
    }
  }
  const env = createGateEnv({ ...options, tools });
  const authority = createAuthority(journal, { clock: env.clock, redactor: env.redactor });

  const invoke = (requestedId: string, input: unknown, call: CallOptions): Promise<InvokeResult<unknown>> => {
    return runSteps(INVOKE_STEPS, startCall(env.nextInvocationId(), requestedId, input, call, env.clock()), env);
  };

  const gate: Gate<TTool> = {
    invoke: invoke as Gate<TTool>["invoke"],
    approvals: createApprovalDesk(env, authority),
    authority,
    redactor: env.redactor,
    registry,
    journal,
    openSession: (options?: SessionOptions) => openSession(env, options),
    async drain() {
      while (env.pendingLate.size > 0) await Promise.all([...env.pendingLate]);
    },
  };
  gateEnvs.set(gate, env);
  return Object.freeze(gate);
}

const gateEnvs = new WeakMap<object, GateEnv>();

/** @internal what recovery needs from a gate: its steps' shared state. */
export function envOfGate(gate: Gate<any>): GateEnv | undefined {
  return gateEnvs.get(gate);
}
