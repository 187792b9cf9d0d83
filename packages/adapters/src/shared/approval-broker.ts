import {
  isSideEffectful,
  ToolError,
  type ApprovalPreview,
  type ApprovalRequest,
  type ApprovalRequiredResult,
  type Approver,
  type CallOptions,
  type DeniedResult,
  type Gate,
  type InvokeResult,
  type Profile,
  type ProgressEvent,
  type ToolDescriptor,
} from "@toolgate/core";
import { bothListeners, MAX_PROGRESS_BUFFERED } from "./progress.js";

/** What a framework's approval UI can show beside its own prompt: the gate's concrete preview. */
export interface ApprovalRequestEvent {
  readonly toolId: string;
  /** The framework's id for the tool call (stored on the request as its `callRef`). */
  readonly callId: string;
  /** The gate's approval request; `gate.approvals.get(requestId)` has the rest. */
  readonly requestId: string;
  readonly reason: "call" | "output";
  readonly preview: ApprovalPreview;
  /**
   * JSON Pointers of the input an approver may change before approving (`""` = the whole input),
   * or `false`: the request cannot be edited. An app with its own edit UI goes through
   * `gate.approvals.previewEdit` and `grant({ by, edit, expect })`; the gate runs the edit.
   */
  readonly editable: false | readonly string[];
}

/**
 * What an approver may edit in a request, as the gate recorded it when the call asked: `false` for
 * held output, a request without its input or with a redacted one, or a tool that refuses edits.
 */
export function editableOf(request: ApprovalRequest | undefined): false | readonly string[] {
  if (request?.kind !== "call" || request.input === undefined || request.inputRedacted === true) return false;
  return Array.isArray(request.editable) ? request.editable : false;
}

/** Options shared by the framework adapters. */
export interface FrameworkApprovalOptions {
  /**
   * The host application's signed-in user, as the authority knows them
   * (`await gate.authority.actingAs(operatorId)`): a human's approval in the framework becomes the
   * gate's grant, decided by this approver and recorded under its id. There is no default: without
   * one, an approved call is not granted and comes back as `approval_required`, for an operator to
   * decide in the console or CLI; the retry then runs by its binding.
   */
  readonly approver?: Approver;
  /** Called when the gate asks for approval, so the app can show the gate's preview. */
  readonly onApprovalRequest?: (event: ApprovalRequestEvent) => void;
}

const MAX_REMEMBERED = 1024;
type Listener = (event: ProgressEvent) => void;
/** A call the approval check ran: the input it ran on (as JSON), its result and its progress. */
type Outcome = { readonly input: string | undefined; readonly result: InvokeResult; readonly progress: readonly ProgressEvent[] };
const inputText = (input: unknown): string | undefined => {
  try {
    return JSON.stringify(input);
  } catch {
    return undefined;
  }
};
/** How the broker calls the gate; `callId` is the framework's id for the call ("" when none). */
export type GateInvoke = (toolId: string, input: unknown, options: CallOptions, callId: string) => Promise<InvokeResult>;
/** The gate refuses a longer `callRef`; such a call is simply not findable again (nothing is granted for it). */
const MAX_CALL_REF = 256;

/**
 * Bridges a framework's approval step to the gate, without ever granting on its own.
 *
 * Ask (`needsApproval`, for a call the model just made): the gate is asked once, with the
 * framework's call id as `callRef`; a call that needs a human leaves a persisted request, the one
 * the framework then shows. Any other outcome is remembered for `execute`, so the body never runs
 * twice.
 *
 * Approved (`execute` after the framework reports a human's approval; the framework's state may
 * come from the client, so it proves nothing): the gate is asked again, without a `callRef` — a
 * request made now was shown to nobody and can never be granted here. Only when the gate's answer
 * is the one pending request that the ask step recorded for this call id (same binding: tool,
 * exact input, principal, tenant, preview) is it granted, by the app's approver through the
 * authority, and the call run with that grant. An edited input, a call the human was never shown,
 * or several requests under one call id are refused; without an approver the call waits for an
 * operator.
 *
 * Approve with edits: the framework's human saw the input as asked (version 0), so the grant
 * names that version and its preview hash (`expect`). A request an operator edited meanwhile is
 * not approved here (the journal refuses a stale `expect`): the call comes back as
 * `approval_required`, for an operator to decide the edited version. Once an operator edited and
 * granted it, the call the framework runs (with the model's original input) is answered by the
 * gate with the edited call's result, whose `content` tells the model what changed. The broker
 * never takes an edited input from the framework's state: a changed tool-call input is another call.
 */
export function createApprovalBroker(
  gate: Gate,
  call: CallOptions,
  options: FrameworkApprovalOptions,
  invoke: GateInvoke = (toolId, input, callOptions) => gate.invoke(toolId, input, callOptions),
) {
  // Only the app's approver decides; there is no fallback to anyone (least of all this adapter).
  const approver: Approver | undefined = options.approver;
  /**
   * What the approval check got for each call, with the input it ran on and the progress its run
   * reported (replayed to `execute`). A model may repeat a call id: every run is kept, and
   * `execute` takes the one made for its own input (never another call's result, never a second run).
   */
  const outcomes = new Map<string, Outcome[]>();
  const remember = (key: string, outcome: Outcome) => {
    const kept = outcomes.get(key);
    if (kept) kept.push(outcome);
    else outcomes.set(key, [outcome]);
    if (outcomes.size > MAX_REMEMBERED) outcomes.delete(outcomes.keys().next().value as string);
  };
  const recall = (key: string, input: unknown): Outcome | undefined => {
    const kept = outcomes.get(key);
    const text = inputText(input);
    const at = kept?.findIndex((o) => o.input === text) ?? -1;
    if (at < 0) return undefined;
    const [found] = kept!.splice(at, 1);
    if (kept!.length === 0) outcomes.delete(key);
    return found;
  };
  // In a session the gate may ask about any side-effectful call (a destination not from trusted
  // data is escalated), so the framework's approval check asks the gate about each of them.
  const mayAsk = (d: ToolDescriptor, profile: Profile) =>
    d.approval !== "never" || (d.untrustedOutput && profile.onInjection === "hold") || (call.session !== undefined && isSideEffectful(d.effect));
  /** The host's call, with the framework's signal and progress listener joined to the host's own. */
  const callWith = (signal: AbortSignal | undefined, onProgress: Listener | undefined): CallOptions => {
    const listener = bothListeners(call.onProgress, onProgress);
    return { ...call, ...(signal ? { signal } : {}), ...(listener ? { onProgress: listener } : {}) };
  };

  const editedSince = async (requestId: string) => {
    try {
      return (await gate.approvals.get(requestId))?.edit !== undefined;
    } catch {
      return false;
    }
  };
  const editableNow = async (requestId: string) => {
    try {
      return editableOf(await gate.approvals.get(requestId));
    } catch {
      return false;
    }
  };

  /** The grant for exactly the request the human was shown, or why there is none. */
  async function runApproved(toolId: string, input: unknown, callId: string, through: CallOptions): Promise<InvokeResult> {
    const asked = await invoke(toolId, input, through, callId);
    // Ran on an operator's grant (by binding), replayed, or refused: nothing for this step to do.
    if (asked.status !== "approval_required") return asked;
    // Held output: the framework's prompt showed the call, never the flagged text, so its approval
    // cannot release that text; the release waits for an operator who sees the excerpts.
    if (asked.reason === "output") return asked;
    const shown = (await gate.approvals.list({ status: ["pending"] })).filter(
      (r) => r.callRef === callId && r.toolId === toolId && r.principal === call.principal && r.tenant === call.tenant,
    );
    // The human was shown no request for this call: it waits for an operator like any other.
    if (shown.length === 0) return asked;
    if (shown.length > 1) return refused(asked, "several requests were asked under this call id; an operator decides them in the console");
    if (shown[0]!.id !== asked.requestId)
      return refused(asked, `this call is not the one the human approved (request ${shown[0]!.id}): its input or preview changed`);
    if (approver === undefined) return asked;
    // An operator edited the request: the human here saw another call. The edited version waits for an operator.
    if (shown[0]!.edit !== undefined) return asked;
    let decision;
    try {
      decision = await gate.approvals.grant(asked.requestId, { by: approver, expect: { version: 0, previewHash: asked.previewHash } });
    } catch (cause) {
      // Edited between the read above and the grant: the journal refused the stale view; nothing ran.
      if (await editedSince(asked.requestId)) return asked;
      // The authority's reason (it may name the operator) goes to the app in `details`, not to the model.
      const code = ToolError.is(cause) ? cause.code : "approval_unknown";
      return refused(asked, `the app's approver could not grant request ${asked.requestId}`, code, {
        reason: cause instanceof Error ? cause.message : String(cause),
      });
    }
    // The two-person rule: this approval counted; the call waits for a second approver.
    if (decision.status !== "granted") return asked;
    return invoke(toolId, input, { ...through, approval: decision.grant }, callId);
  }

  return {
    /**
     * The framework's approval check. True when a human must approve. A call the framework already
     * reports approved (`approved`) goes on to `execute`, where the gate's records decide.
     */
    async needsApproval(descriptor: ToolDescriptor, input: unknown, callId: string, approved = false): Promise<boolean> {
      if (!mayAsk(descriptor, call.profile)) return false;
      if (approved) return true;
      // Without an id the outcome could not be found again by `execute`, which would run the call a
      // second time (and count it twice): `execute` runs it once, and the gate's approval_required
      // comes back as its answer, for an operator.
      if (callId === "") return false;
      const callRef = callId.length > 0 && callId.length <= MAX_CALL_REF ? { callRef: callId } : {};
      // A call that needs no human runs here: its progress is kept for `execute` to hand on.
      const progress: ProgressEvent[] = [];
      const keep = (event: ProgressEvent) => void (progress.length < MAX_PROGRESS_BUFFERED && progress.push(event));
      const result = await invoke(descriptor.id, input, { ...callWith(undefined, keep), ...callRef }, callId);
      if (result.status === "approval_required") {
        if (options.onApprovalRequest) {
          const editable = result.reason === "call" ? await editableNow(result.requestId) : false;
          const { requestId, reason, preview } = result;
          options.onApprovalRequest({ toolId: descriptor.id, callId, requestId, reason, preview, editable });
        }
        return true;
      }
      remember(`${descriptor.id}\u0000${callId}`, { input: inputText(input), result, progress });
      return false;
    },

    /**
     * The framework's execute: the outcome the approval check already got, the approved call
     * (`approved`: the framework says a human approved this call id), or a plain call. `onProgress`
     * gets the call's progress (the host's own `call.onProgress` still does too).
     */
    async execute(
      toolId: string,
      input: unknown,
      callId: string,
      signal: AbortSignal | undefined,
      approved: boolean,
      onProgress?: Listener,
    ): Promise<InvokeResult> {
      const key = `${toolId}\u0000${callId}`;
      const known = callId === "" ? undefined : recall(key, input);
      if (known) {
        for (const event of known.progress) {
          try {
            onProgress?.(event);
          } catch {
            // a listener's failure is not the call's
          }
        }
        return known.result;
      }
      const through = callWith(signal, onProgress);
      if (approved && callId !== "") return runApproved(toolId, input, callId, through);
      return invoke(toolId, input, through, callId);
    },
  };
}

function refused(
  asked: ApprovalRequiredResult,
  message: string,
  code: DeniedResult["code"] = "approval_invalid",
  details?: Record<string, unknown>,
): DeniedResult {
  return {
    status: "denied",
    toolId: asked.toolId,
    invocationId: asked.invocationId,
    receipt: asked.receipt,
    code,
    message,
    ...(details ? { details } : {}),
    boundary: "pre_effect_refusal",
  };
}

/** A gate outcome other than `ok`, thrown where a framework expects an exception. */
export class GateCallError extends Error {
  override readonly name = "GateCallError";
  readonly result: Exclude<InvokeResult, { status: "ok" }>;
  constructor(result: Exclude<InvokeResult, { status: "ok" }>, message: string) {
    super(message);
    this.result = result;
  }
}
