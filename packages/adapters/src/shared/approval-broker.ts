import { ToolError, type ApprovalPreview, type CallOptions, type Gate, type InvokeResult, type Profile, type ToolDescriptor } from "@toolgate/core";

/** What a framework's approval UI can show beside its own prompt: the gate's concrete preview. */
export interface ApprovalRequestEvent {
  readonly toolId: string;
  /** The framework's id for the tool call. */
  readonly callId: string;
  /** The gate's approval request; `gate.approvals.get(requestId)` has the rest. */
  readonly requestId: string;
  readonly reason: "call" | "output";
  readonly preview: ApprovalPreview;
}

/** Options shared by the framework adapters. */
export interface FrameworkApprovalOptions {
  /**
   * Recorded as the grant's approver when a human approves a call through the framework's own
   * approval step. Name the human (or the account they signed in with) where the app knows it.
   */
  readonly approver?: string;
  /** Called when the gate asks for approval, so the app can show the gate's preview. */
  readonly onApprovalRequest?: (event: ApprovalRequestEvent) => void;
}

type Outcome = { readonly kind: "pending"; readonly requestId: string } | { readonly kind: "done"; readonly result: InvokeResult };

const MAX_REMEMBERED = 1024;

/**
 * Bridges a framework's "needs approval?" question to the gate. The gate is asked once, from the
 * framework's approval check: a call that needs approval leaves a persisted request; any other
 * outcome is remembered and handed to the framework's `execute` for the same call id, so the body
 * never runs twice. After the framework reports a human's approval, `execute` obtains the grant for
 * exactly that request and calls again; the gate still checks tool, input, principal, tenant and
 * preview against it.
 */
export function createApprovalBroker(gate: Gate, call: CallOptions, options: FrameworkApprovalOptions, defaultApprover: string) {
  const outcomes = new Map<string, Outcome>();
  const approver = options.approver ?? defaultApprover;
  const remember = (key: string, outcome: Outcome) => {
    outcomes.set(key, outcome);
    if (outcomes.size > MAX_REMEMBERED) outcomes.delete(outcomes.keys().next().value as string);
  };
  const mayAsk = (d: ToolDescriptor, profile: Profile) => d.approval !== "never" || (d.untrustedOutput && profile.onInjection === "hold");

  return {
    /** The framework's approval check. True when a human must approve before `execute`. */
    async needsApproval(descriptor: ToolDescriptor, input: unknown, callId: string): Promise<boolean> {
      if (!mayAsk(descriptor, call.profile)) return false;
      const key = `${descriptor.id}\u0000${callId}`;
      const known = outcomes.get(key);
      if (known) return known.kind === "pending";
      const result = await gate.invoke(descriptor.id, input, call);
      if (result.status === "approval_required") {
        remember(key, { kind: "pending", requestId: result.requestId });
        options.onApprovalRequest?.({ toolId: descriptor.id, callId, requestId: result.requestId, reason: result.reason, preview: result.preview });
        return true;
      }
      remember(key, { kind: "done", result });
      return false;
    },

    /** The framework's execute: the remembered outcome, the approved call, or a fresh call. */
    async execute(toolId: string, input: unknown, callId: string | undefined, signal: AbortSignal | undefined): Promise<InvokeResult> {
      const key = `${toolId}\u0000${callId ?? ""}`;
      const known = callId === undefined ? undefined : outcomes.get(key);
      outcomes.delete(key);
      const withSignal: CallOptions = signal ? { ...call, signal } : call;
      if (known?.kind === "done") return known.result;
      if (known?.kind === "pending") {
        let grant;
        try {
          grant = await gate.approvals.grant(known.requestId, { approver });
        } catch (cause) {
          return {
            status: "denied",
            toolId,
            invocationId: "",
            receipt: null,
            code: ToolError.is(cause) ? cause.code : "approval_unknown",
            message: `the approval request ${known.requestId} could not be granted: ${(cause as Error).message}`,
            boundary: "pre_effect_refusal",
          };
        }
        return gate.invoke(toolId, input, { ...withSignal, approval: grant });
      }
      return gate.invoke(toolId, input, withSignal);
    },
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
