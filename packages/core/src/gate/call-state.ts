/**
 * The call as it moves through the gate. Each step takes one stage and returns the next, narrower
 * one (or a finished result): a field exists from the step that sets it on, so no step reads a
 * value an earlier step has not established.
 */
import type { ApprovalPreview, AnyToolManifest } from "../manifest.js";
import type { ApprovalChange, GrantCheck, IntentInput, LimitCharge, OutboxEntry, OutboxState } from "../journal/types.js";
import type { RegisteredTool } from "../registry.js";
import type { InjectionFinding } from "../untrusted.js";
import type { CallProvenance } from "../provenance/types.js";
import type { CallOptions } from "./gate.js";
import type { ApprovalRequiredResult, DeniedResult, ErrorResult } from "./results.js";

/** What `invoke` was given, before anything is trusted. */
export interface CallStart {
  readonly invocationId: string;
  readonly requestedId: string;
  readonly input: unknown;
  readonly call: CallOptions;
  readonly startedAt: number;
  /** Set by the steps that establish them; read by refusals, which may come at any stage. */
  readonly tool?: RegisteredTool;
  readonly inputHash?: string;
  /** Concurrency slots the `limits` step took; given back when the call ends, whatever its result. */
  readonly slots?: readonly string[] | undefined;
}

/** The tool exists and the call options are well formed. */
export interface Resolved extends CallStart {
  readonly tool: RegisteredTool;
  readonly manifest: AnyToolManifest;
}

/** The input as canonical JSON, its hash, and the body's private copy. */
export interface Frozen extends Resolved {
  readonly inputHash: string;
  readonly inputJson: string;
  readonly parsed: unknown;
}

/** The input passed the tool's schema (`parsed` is the schema's output). */
export interface Validated extends Frozen {
  readonly validated: true;
}

/** The profile allows the tool. */
export interface Authorized extends Validated {
  readonly authorized: true;
}

/** Where the call's arguments came from, when it was made in a session (`undefined` outside one, or for a call nothing is checked on). */
export interface Judged extends Authorized {
  readonly provenance: CallProvenance | undefined;
  /** The manifest's approval rule asks a human for this input (decided once, by the provenance step). */
  readonly manifestAsks: boolean;
  /** In a session, a read whose output the manifest calls trusted: whether its input was trusted (else its output is not). */
  readonly inputTrusted?: boolean;
}

/** What a human approves, when the tool asks for one; `plan` is handed to the body. */
export interface BuiltPreview {
  readonly preview: ApprovalPreview;
  readonly previewHash: string;
  readonly plan: unknown;
}

export interface Previewed extends Judged {
  readonly approval: BuiltPreview | undefined;
  /** A call provenance let run without its approval: the plan of the preview nobody was asked about. */
  readonly waivedPlan?: unknown;
}

/** The idempotency key: the one the caller sees, and the journal's (scoped to tenant and principal). */
export interface Keyed extends Previewed {
  readonly visibleKey: string;
  readonly key: string;
  /** A key unique to this invocation: nothing earlier can exist under it. */
  readonly fresh: boolean;
  /** Side-effectful calls, calls with a caller's key, and held output go through the outbox. */
  readonly usesOutbox: boolean;
}

/** An earlier attempt under the same key that did not end the call: it may be retaken. */
export interface Checked extends Keyed {
  readonly existing: OutboxEntry | undefined;
  /** For a completed or pending entry, judged already: the states a retake may start from. */
  readonly retakeFrom: readonly OutboxState[] | undefined;
  /** The window limits this call counts against, charged by the journal when the call commits to run (record-intent). */
  readonly charges: readonly LimitCharge[] | undefined;
}

/** The grant checked (not yet consumed), when the call needed one. */
export interface Approved extends Checked {
  readonly grant: GrantCheck | undefined;
  /** The approver's edit this call now runs (its input, hash, parsed value and preview are the edit's). */
  readonly edited?: EditedCall | undefined;
}

/** An approver's edit this call runs instead of the input it was sent (set by the approve step). */
export interface EditedCall {
  readonly requestId: string;
  readonly version: number;
  /** The hash of the input the caller sent (what the request was asked with). */
  readonly askedInputHash: string;
  /** Redacted. */
  readonly changes: readonly ApprovalChange[];
}

/** The fields the body's run needs: from a live call, or from a recovered intent. */
export interface Runnable extends Frozen {
  readonly visibleKey: string;
  readonly key: string;
  /** Journaled before the effect; absent for pure calls, which are audited once they complete. */
  readonly intent: IntentInput | undefined;
  readonly plan: unknown;
  /** Set when the input is an approver's edit of the one sent: the result tells the caller. */
  readonly edited?: EditedCall | undefined;
}

/** The body returned; `raw` is unchecked. */
export interface Ran extends Runnable {
  readonly raw: unknown;
}

/** The output matched the tool's schema. */
export interface OutputChecked extends Runnable {
  readonly output: unknown;
}

/** Redacted, scanned (untrusted output), hashed; maybe held for a human. */
export interface Fenced extends Runnable {
  readonly output: unknown;
  readonly outputJson: string;
  readonly outputHash: string;
  readonly findings: readonly InjectionFinding[];
  readonly described: string | null;
  /** Flagged output held for a human: the request (or the refusal when it could not be recorded). */
  readonly held: ApprovalRequiredResult | DeniedResult | ErrorResult | undefined;
}

/** A stage's fields, writable: only a step that establishes them writes them, once. */
export type Writable<T> = { -readonly [K in keyof T]: T[K] };

/**
 * The one object a call is: every field exists from the start (undefined until its step sets it),
 * so the object keeps one shape through the pipeline and steps write fields instead of copying.
 */
export function startCall(invocationId: string, requestedId: string, input: unknown, call: CallOptions, startedAt: number): CallStart {
  return {
    invocationId,
    requestedId,
    input,
    call,
    startedAt,
    tool: undefined,
    manifest: undefined,
    inputHash: undefined,
    inputJson: undefined,
    parsed: undefined,
    validated: undefined,
    authorized: undefined,
    provenance: undefined,
    manifestAsks: undefined,
    inputTrusted: undefined,
    approval: undefined,
    visibleKey: undefined,
    key: undefined,
    fresh: undefined,
    usesOutbox: undefined,
    existing: undefined,
    retakeFrom: undefined,
    slots: undefined,
    charges: undefined,
    grant: undefined,
    edited: undefined,
    intent: undefined,
    plan: undefined,
    raw: undefined,
    output: undefined,
    outputJson: undefined,
    outputHash: undefined,
    findings: undefined,
    described: undefined,
    held: undefined,
  } as unknown as CallStart;
}
