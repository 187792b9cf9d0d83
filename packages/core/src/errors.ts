/**
 * The closed set of error codes a Toolgate call can end with.
 *
 * Two kinds share one set, as the `kind` of each entry says:
 * - `definition`: a programmer's mistake found while defining tools, families, registries,
 *   profiles or helpers. Thrown at start-up; never crosses the wire.
 * - `call`: the outcome of one tool call. Carried by a gate result (`denied` or `error`) and safe
 *   to show a model: messages name what was wrong, never a secret.
 *
 * Families map their provider's failures onto these codes; a code not in this map is a type error.
 */
import type { ApprovalPreview } from "./manifest.js";

export const TOOL_ERROR_CODES = {
  // definition-time
  manifest_invalid: { kind: "definition", summary: "A tool manifest breaks a rule of defineTool." },
  family_invalid: { kind: "definition", summary: "A family is malformed or a tool requires a token the family does not declare." },
  registry_invalid: { kind: "definition", summary: "The registry cannot be built: duplicate ids or conflicting families." },
  profile_invalid: { kind: "definition", summary: "A profile is malformed." },
  config_invalid: { kind: "definition", summary: "A helper or the gate was configured wrongly." },

  // resolution and validation
  unknown_tool: { kind: "call", summary: "No tool with that id is registered." },
  invalid_input: { kind: "call", summary: "The input does not match the tool's input schema." },

  // policy
  permission_denied: { kind: "call", summary: "The profile lacks one or more permission tokens the tool requires." },
  risk_exceeded: { kind: "call", summary: "The tool's risk is above the profile's ceiling." },
  consent_required: { kind: "call", summary: "The profile has not been granted a consent the tool requires." },
  egress_denied: { kind: "call", summary: "The profile does not allow this data class to leave for the tool's provider." },

  // approval
  approval_invalid: { kind: "call", summary: "The grant does not match this call (tool, input, principal, tenant or preview)." },
  approval_expired: { kind: "call", summary: "The grant or request has expired." },
  approval_consumed: { kind: "call", summary: "The grant was already used." },
  approval_denied: { kind: "call", summary: "A human denied the request." },
  approval_unknown: { kind: "call", summary: "No such approval request or grant." },
  preview_invalid: { kind: "call", summary: "The tool could not build a valid preview for a human to approve." },
  provenance_refused: {
    kind: "call",
    summary:
      "An argument of the call came from untrusted data (or from nothing trusted) where the profile refuses it: a destination must come from trusted data.",
  },
  edit_refused: {
    kind: "call",
    summary: "An approver's edit is outside what the tool and profile allow to be edited, or the request cannot be edited.",
  },

  // the approval authority
  approver_invalid: { kind: "call", summary: "The decider is not an approver the authority made (a typed name, a look-alike, an ended session)." },
  approver_forbidden: { kind: "call", summary: "The approver's role, status or scope does not allow this decision or change." },
  operator_unknown: { kind: "call", summary: "No operator with that id or name." },
  operator_disabled: { kind: "call", summary: "The operator is disabled or removed." },
  tool_disabled: { kind: "call", summary: "An operator disabled this tool or its family with the kill switch." },

  // idempotency and the journal
  idempotency_conflict: { kind: "call", summary: "The idempotency key was already used for a different call." },
  idempotency_in_flight: { kind: "call", summary: "A call with this idempotency key is still running." },
  effect_state_unknown: { kind: "call", summary: "An earlier attempt may or may not have taken effect; an operator must resolve it." },
  journal_failed: { kind: "call", summary: "The journal could not record the call, so it was not run." },
  output_pruned: {
    kind: "call",
    summary: "The call already completed under this idempotency key, but its recorded output was pruned, so it cannot be replayed.",
  },
  journal_tampered: {
    kind: "call",
    summary: "A stored journal row fails its seal (edited, re-stated, copied or inserted outside the journal); it was not used.",
  },

  // execution
  cancelled: { kind: "call", summary: "The call was cancelled through its signal." },
  timeout: { kind: "call", summary: "The call ran past its deadline." },
  output_invalid: { kind: "call", summary: "The tool returned output that does not match its output schema." },
  handler_failed: { kind: "call", summary: "The tool failed for a reason it did not classify." },

  // boundaries (helpers in core)
  path_escape: { kind: "call", summary: "A path resolves outside its root." },
  command_denied: { kind: "call", summary: "A command or argument is not allowed by the operator's declaration." },
  limit_exceeded: { kind: "call", summary: "A size, count or byte limit was exceeded." },
  scope_missing: { kind: "call", summary: "The connection was not granted a scope the tool needs." },
  connector_reauth_required: { kind: "call", summary: "The connection must be authorized again by a human." },
  connector_unavailable: { kind: "call", summary: "No connection is configured for the tool's provider." },

  // providers
  not_found: { kind: "call", summary: "The provider has no such object, or it is not shared with this connection." },
  conflict: { kind: "call", summary: "The provider refused the change because of a conflicting state." },
  rate_limited: { kind: "call", summary: "A profile's limit was reached, or the provider asked us to slow down." },
  provider_rejected: { kind: "call", summary: "The provider refused the request." },
  provider_unavailable: { kind: "call", summary: "The provider did not answer or failed." },
  protocol_error: { kind: "call", summary: "A tool process broke the wire protocol." },
  tool_process_dead: { kind: "call", summary: "The tool process exited or stopped answering while the call was pending." },
} as const satisfies Record<string, { kind: "definition" | "call"; summary: string }>;

export type ToolErrorCode = keyof typeof TOOL_ERROR_CODES;

/**
 * Where a failed call stands relative to its side effect. An operator (and recovery) reads this
 * to know whether retrying is safe.
 */
export const EFFECT_BOUNDARIES = [
  "pre_effect_refusal",
  "effect_not_started",
  "effect_started",
  "effect_completed",
  "effect_failed",
  "effect_state_unknown",
] as const;

export type EffectBoundary = (typeof EFFECT_BOUNDARIES)[number];

export interface ToolErrorOptions {
  /** The underlying error; kept, never shown to a model. */
  readonly cause?: unknown;
  /** Structured, secret-free details (missing tokens, schema issues, …). */
  readonly details?: Readonly<Record<string, unknown>>;
  /** A handler may say where its failure stands; the gate decides otherwise. */
  readonly boundary?: EffectBoundary;
  /** Whether the same call may succeed if tried again later. */
  readonly retryable?: boolean;
  /** Seconds the provider asked us to wait, where it said. */
  readonly retryAfterSeconds?: number;
  /**
   * A body that finds, before its effect, that this very call needs a human (a tool process's
   * escalation) throws with the preview to ask with and boundary `effect_not_started`. The gate
   * then settles the attempt, records a request for this call (tool, input, principal, tenant, this
   * preview's hash) and returns `approval_required` instead of the error. The caller calls again
   * once a human granted it; the tool's approval rule and preview must then ask for the same
   * preview, so the retry takes the grant by binding and the body gets the preview's plan.
   */
  readonly askApproval?: ApprovalPreview;
}

/**
 * The brand every ToolError carries, under a registry symbol: an application that ends up with two
 * copies of core (a family built against another install) still recognises the other copy's errors.
 */
const TOOL_ERROR_BRAND = Symbol.for("@toolgate/core.ToolError");

/** The one error type of Toolgate. `code` is from a closed set; `cause` is always kept. */
export class ToolError extends Error {
  override readonly name = "ToolError";
  readonly code: ToolErrorCode;
  readonly details: Readonly<Record<string, unknown>> | undefined;
  readonly boundary: EffectBoundary | undefined;
  readonly retryable: boolean;
  readonly retryAfterSeconds: number | undefined;
  /** The approval a body asked for before its effect (see `ToolErrorOptions.askApproval`). */
  readonly askApproval: ApprovalPreview | undefined;

  constructor(code: ToolErrorCode, message: string, options: ToolErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.details = options.details;
    this.boundary = options.boundary;
    this.retryable = options.retryable ?? false;
    this.retryAfterSeconds = options.retryAfterSeconds;
    this.askApproval = options.askApproval;
  }

  /** True when `value` is a ToolError from any copy of core, optionally with one of `codes`. */
  static is(value: unknown, ...codes: ToolErrorCode[]): value is ToolError {
    if (!(value instanceof Error) || (value as unknown as Record<symbol, unknown>)[TOOL_ERROR_BRAND] !== true) return false;
    const { code, message, boundary } = value as { code?: unknown; message?: unknown; boundary?: unknown };
    if (typeof message !== "string" || !isToolErrorCode(code)) return false;
    if (boundary !== undefined && !(EFFECT_BOUNDARIES as readonly unknown[]).includes(boundary)) return false;
    return codes.length === 0 || codes.includes(code);
  }

  /** `instanceof ToolError` agrees with `ToolError.is` across copies of core; subclasses keep the usual rule. */
  static override [Symbol.hasInstance](this: unknown, value: unknown): boolean {
    return this === ToolError ? ToolError.is(value) : Function.prototype[Symbol.hasInstance].call(this, value);
  }
}
Object.defineProperty(ToolError.prototype, TOOL_ERROR_BRAND, { value: true });

export function isToolErrorCode(value: unknown): value is ToolErrorCode {
  return typeof value === "string" && Object.hasOwn(TOOL_ERROR_CODES, value);
}
