import type { EffectBoundary, ToolErrorCode } from "../errors.js";
import type { ApprovalChange, JournalReceipt } from "../journal/types.js";
import type { ApprovalPreview } from "../manifest.js";
import type { InjectionFinding } from "../untrusted.js";

interface ResultBase {
  readonly toolId: string;
  readonly invocationId: string;
  /** Where the journal recorded this outcome; null only when the journal itself failed. */
  readonly receipt: JournalReceipt | null;
}

/** The call ran (or was replayed) and its output is valid, redacted and, if untrusted, fenced. */
export interface OkResult<TOutput> extends ResultBase {
  readonly status: "ok";
  /** Validated, redacted output for the application. */
  readonly output: TOutput;
  /** What to hand the model: the output as JSON, fenced in a random boundary when untrusted. */
  readonly content: string;
  readonly untrusted: boolean;
  /** Places in untrusted output that read like instructions. */
  readonly findings: readonly InjectionFinding[];
  /** True when this is the recorded result of an earlier call with the same idempotency key. */
  readonly replayed: boolean;
  readonly idempotencyKey: string;
  /**
   * Set when an approver edited the input before it ran: the call ran with the edited input, not
   * the one sent. `changes` are redacted; `content` tells the model the same, fenced as data.
   */
  readonly edited?: EditedResult;
}

/** What an approver changed in a call's input before it ran (on `OkResult.edited`). */
export interface EditedResult {
  readonly requestId: string;
  readonly version: number;
  readonly changes: readonly ApprovalChange[];
}

/**
 * A human must approve first (`gate.approvals.grant(requestId, { by })`, as an authenticated
 * approver). Then the same call, retried, runs once; or pass the grant back as `call.approval`.
 */
export interface ApprovalRequiredResult extends ResultBase {
  readonly status: "approval_required";
  /** `call`: approve running the call; `output`: release output held because it was flagged. */
  readonly reason: "call" | "output";
  readonly requestId: string;
  readonly preview: ApprovalPreview;
  readonly previewHash: string;
  readonly expiresAt: string;
  readonly idempotencyKey: string;
  /** For held output: which rules matched where. Excerpts are only in the preview, for the human. */
  readonly findings?: readonly Pick<InjectionFinding, "rule" | "path">[];
  /**
   * What to hand the model: a line of the gate's own, then what the human is shown, fenced as
   * untrusted — a preview quotes what it read (an event, a draft, a file), and held output's
   * excerpts are the very text that was flagged. Never hand the model `preview` itself.
   */
  readonly content: string;
  /** Places in the preview that read like instructions (where `path` is inside the preview). */
  readonly previewFindings?: readonly Pick<InjectionFinding, "rule" | "path">[];
}

/** Policy or approval refused the call before any effect. */
export interface DeniedResult extends ResultBase {
  readonly status: "denied";
  readonly code: ToolErrorCode;
  readonly message: string;
  readonly details?: Readonly<Record<string, unknown>>;
  readonly boundary: EffectBoundary;
  /** For `rate_limited` from a profile's limit: milliseconds until one more call fits (also in `details`). */
  readonly retryAfterMs?: number;
}

/** The call failed; `boundary` says whether its effect may have happened. */
export interface ErrorResult extends ResultBase {
  readonly status: "error";
  readonly code: ToolErrorCode;
  /**
   * Redacted. For a tool whose output is untrusted, and for a preview's own error, the text is
   * fenced in a random boundary (`untrusted: true`): the tool, or what it read, wrote it.
   */
  readonly message: string;
  /** True when `message` holds text someone else wrote, fenced. */
  readonly untrusted?: boolean;
  /** Places in a fenced `message` that read like instructions (no excerpts: the text is in the fence). */
  readonly findings?: readonly Pick<InjectionFinding, "rule" | "path">[];
  readonly details?: Readonly<Record<string, unknown>>;
  readonly boundary: EffectBoundary;
  readonly retryable: boolean;
  /** For `invalid_input`: the schema issues and the JSON Schema, so a model can retry. */
  readonly issues?: readonly { readonly path: string; readonly message: string; readonly code: string }[];
  readonly inputSchema?: Readonly<Record<string, unknown>>;
  readonly replayed?: boolean;
}

export type InvokeResult<TOutput = unknown> = OkResult<TOutput> | ApprovalRequiredResult | DeniedResult | ErrorResult;
