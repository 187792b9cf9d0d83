import { getCurrentTrace, withCustomSpan, type CustomSpanData, type Span } from "@openai/agents";
import type { Gate, InvokeResult, ProgressEvent } from "@toolgate/core";
import type { GateInvoke } from "../shared/approval-broker.js";
import { bothListeners, MAX_PROGRESS_BUFFERED, toGateProgress, type GateProgress } from "../shared/progress.js";

/** The name of the custom span each gate call gets in the Agents SDK's trace. */
export const GATE_SPAN_NAME = "toolgate.invoke";

/** The spans `tracedInvoke` made, so the gate's own spans (through `agentsTracerProvider`) join them. */
const gateCallSpans = new WeakSet<object>();
export const isGateCallSpan = (span: object): boolean => gateCallSpans.has(span);

/**
 * Each gate call as a custom span `toolgate.invoke` in the Agents SDK's own trace: inside a run it
 * is a child of the SDK's function span for that tool call (or of the agent span, for the approval
 * check), with the tool id, the SDK's call id, and once the call ends its status, invocation id,
 * error code and effect boundary, whether it was replayed, an approval's request id and how many
 * progress events it reported. A call with status `error` marks the span failed with its code.
 * No input, output or message goes into the span. Outside a trace (plain function calling, a call
 * outside a run) the call is made as it is.
 */
export function tracedInvoke(gate: Gate): GateInvoke {
  return (toolId, input, options, callId) => {
    if (getCurrentTrace() === null) return gate.invoke(toolId, input, options);
    return withCustomSpan(
      async (span) => {
        gateCallSpans.add(span);
        let progress = 0;
        const count = () => void progress++;
        const result = await gate.invoke(toolId, input, { ...options, onProgress: bothListeners(options.onProgress, count)! });
        describeCall(span, result, progress);
        return result;
      },
      { data: { name: GATE_SPAN_NAME, data: { "toolgate.tool.id": toolId, ...(callId === "" ? {} : { "gen_ai.tool.call.id": callId }) } } },
    );
  };
}

function describeCall(span: Span<CustomSpanData>, result: InvokeResult, progress: number): void {
  const data = span.spanData.data;
  data["toolgate.status"] = result.status;
  data["toolgate.invocation.id"] = result.invocationId;
  if (result.status === "ok" && result.replayed) data["toolgate.replayed"] = true;
  if (result.status === "approval_required") data["toolgate.approval.request_id"] = result.requestId;
  if (result.status === "denied" || result.status === "error") {
    data["toolgate.error.code"] = result.code;
    data["toolgate.effect.boundary"] = result.boundary;
  }
  if (progress > 0) data["toolgate.progress.count"] = progress;
  if (result.status === "error") span.setError({ message: result.code, data: { "toolgate.error.code": result.code } });
}

/**
 * What a run's `tool_output` item carries for a gate call (its `customData.toolgate`, never sent to
 * the model): the outcome and the progress the call reported, as JSON.
 */
export interface GateCallReport {
  readonly toolId: string;
  readonly invocationId: string;
  readonly status: InvokeResult["status"];
  readonly code?: string;
  /** A call refused by a rate limit: when one more call fits. */
  readonly retryAfterMs?: number;
  readonly progress: readonly GateProgress[];
}

/** A call's progress as it comes, kept for its report (up to `MAX_PROGRESS_BUFFERED` events). */
export function progressRecorder(toolId: string, onEach: (progress: GateProgress) => void) {
  const kept: GateProgress[] = [];
  return {
    listener: (event: ProgressEvent) => {
      const progress = toGateProgress(toolId, event);
      if (kept.length < MAX_PROGRESS_BUFFERED) kept.push(progress);
      onEach(progress);
    },
    report: (result: InvokeResult): GateCallReport => ({
      toolId,
      invocationId: result.invocationId,
      status: result.status,
      ...(result.status === "denied" || result.status === "error" ? { code: result.code } : {}),
      ...(result.status === "denied" && result.retryAfterMs !== undefined ? { retryAfterMs: result.retryAfterMs } : {}),
      progress: kept,
    }),
  };
}
