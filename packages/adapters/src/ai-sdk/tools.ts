import { jsonSchema, type ModelMessage, type Tool } from "ai";
import type { CallOptions, Gate, OkResult, ToolById, ToolIdOf, ToolInput, ToolOutput, AnyToolManifest } from "@toolgate/core";
import { createApprovalBroker, GateCallError, type FrameworkApprovalOptions } from "../shared/approval-broker.js";
import { approvalText, refusalText } from "../shared/describe-result.js";
import { streamProgress, type GateProgress } from "../shared/progress.js";
import { bareSchema, reachableTools, type ExposeOptions } from "../shared/reachable.js";

/**
 * The AI SDK tool for one gate tool: typed input; as output, the gate's progress as preliminary
 * results (`status: "progress"`), then the gate's `ok` result as the final one.
 */
export type AiSdkTool<TTool> = Tool<ToolInput<TTool>, OkResult<ToolOutput<TTool>> | GateProgress>;

/**
 * The `tools` record for `generateText` / `streamText`, keyed by tool id. Only the tools the
 * profile can reach are present, so every key is optional.
 */
export type AiSdkTools<TTool extends AnyToolManifest> = {
  [K in ToolIdOf<TTool>]?: AiSdkTool<ToolById<TTool, K>>;
};

type ExecutionOptions = { readonly toolCallId: string; readonly abortSignal?: AbortSignal; readonly messages?: readonly ModelMessage[] };

/**
 * Whether the SDK is running this call because the last message approves it (as the SDK itself
 * decides). The history comes from the client: this only routes the call to the approved path,
 * where the gate's own records decide.
 */
function approvedInHistory(messages: readonly ModelMessage[] | undefined, toolCallId: string): boolean {
  const last = messages?.at(-1);
  if (last?.role !== "tool") return false;
  const approvalIds = new Set<string>();
  for (const m of messages!) {
    if (m.role !== "assistant" || typeof m.content === "string") continue;
    for (const p of m.content) if (p.type === "tool-approval-request" && p.toolCallId === toolCallId) approvalIds.add(p.approvalId);
  }
  return last.content.some((p) => p.type === "tool-approval-response" && p.approved && approvalIds.has(p.approvalId));
}

export interface AiSdkToolsOptions extends ExposeOptions, FrameworkApprovalOptions {}

/**
 * Hand the gate's tools to the Vercel AI SDK. Each `execute` goes through `gate.invoke` with `call`
 * (the SDK's abort signal joins it). The model reads the gate's `content` — untrusted output stays
 * fenced — while the app gets the whole `ok` result.
 *
 * Progress: `execute` is an async iterable. Each progress event the tool reports (redacted by the
 * gate) is yielded as a preliminary tool result (`{ status: "progress", toolId, message, fraction? }`:
 * `streamText` streams it with `preliminary: true`, UI messages show it), and the `ok` result is
 * yielded last: the SDK's final result, the one `generateText`'s `toolResults` and the model get.
 * The host's own `call.onProgress` is still called. The gate's `toolgate.invoke` span starts inside
 * the SDK's `ai.toolCall` span, so it joins the SDK's telemetry trace when a context manager is
 * registered.
 *
 * Approval uses the SDK's own tool approval: `needsApproval` asks the gate once (the SDK's tool
 * call id becomes the request's `callRef`); when it requires a human, the SDK emits a
 * `tool-approval-request`. When the app answers with an approving `tool-approval-response` — in the
 * same tools or in a later request with fresh tools and the client's history — `execute` asks the
 * authority to grant exactly the request that was shown, as `options.approver`, and only when the
 * call's input is still the one that request was made for. Without an approver nothing is granted:
 * the call comes back as `approval_required` for an operator. A denial, refusal or error is thrown
 * as a `GateCallError`, which the SDK reports to the model as a tool error with the typed code.
 */
export function toAiSdkTools<TTool extends AnyToolManifest>(gate: Gate<TTool>, call: CallOptions, options: AiSdkToolsOptions = {}): AiSdkTools<TTool> {
  const broker = createApprovalBroker(gate as unknown as Gate, call, options);
  const tools: Record<string, Tool> = {};
  for (const d of reachableTools(gate, call.profile, options)) {
    tools[d.id] = {
      title: d.title,
      description: d.description,
      // The gate validates: a JSON Schema without a validator lets invalid input reach it, so the
      // refusal is journaled and the model gets the issues.
      inputSchema: jsonSchema(bareSchema(d.inputSchema) as Parameters<typeof jsonSchema>[0]),
      needsApproval: (input: unknown, { toolCallId, messages }: ExecutionOptions) =>
        broker.needsApproval(d, input, toolCallId, approvedInHistory(messages, toolCallId)),
      execute: async function* (input: unknown, { toolCallId, abortSignal, messages }: ExecutionOptions) {
        const approved = approvedInHistory(messages, toolCallId);
        const result = yield* streamProgress(d.id, (onProgress) => broker.execute(d.id, input, toolCallId, abortSignal, approved, onProgress));
        if (result.status === "ok") {
          yield result;
          return;
        }
        throw new GateCallError(result, result.status === "approval_required" ? approvalText(result) : refusalText(result));
      },
      // Only the final result reaches the model. A chat stopped while a call streamed keeps a
      // progress event as the call's output, and a client sends that history back: the model is told
      // the call has no result, never the progress text (an untrusted tool's quotes it, unfenced).
      toModelOutput: ({ output }: { output: OkResult<unknown> | GateProgress }) => ({
        type: "text",
        value: output.status === "ok" ? output.content : `${d.id}: no result: the call was cut off while it ran, so its outcome is not known here.`,
      }),
    } as Tool;
  }
  return tools as AiSdkTools<TTool>;
}
