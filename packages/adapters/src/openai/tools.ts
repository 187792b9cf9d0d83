import { tool, type FunctionTool } from "@openai/agents";
import { ToolError, type AnyToolManifest, type CallOptions, type Gate, type InvokeResult, type ToolById, type ToolIdOf, type ToolInput } from "@toolgate/core";
import { createApprovalBroker, type FrameworkApprovalOptions } from "../shared/approval-broker.js";
import { approvalText, refusalText } from "../shared/describe-result.js";
import type { GateProgress } from "../shared/progress.js";
import { bareSchema, reachableTools, type ExposeOptions } from "../shared/reachable.js";
import { progressRecorder, tracedInvoke, type GateCallReport } from "./trace.js";

/** `gmail.send_message` → `gmail__send_message`: function names may not contain dots. */
export type OpenAIName<TId extends string> = TId extends `${infer Head}.${infer Rest}` ? `${Head}__${OpenAIName<Rest>}` : TId;

/** The tool id behind a mapped function name. */
export type ToolIdOfName<TTool, TName extends string> = {
  [K in ToolIdOf<TTool>]: OpenAIName<K> extends TName ? K : never;
}[ToolIdOf<TTool>];

/** A function definition for Chat Completions' `tools` parameter. */
export interface OpenAIFunctionDefinition {
  readonly type: "function";
  readonly function: { readonly name: string; readonly description: string; readonly parameters: Record<string, unknown>; readonly strict: false };
}

/** A gate call's progress event, with the Agents SDK's id for the tool call. */
export interface OpenAIToolProgress extends GateProgress {
  readonly callId: string;
}

export interface OpenAIToolsOptions extends ExposeOptions, FrameworkApprovalOptions {
  /**
   * Each progress event of a call made through `tools`, as it comes, with the SDK's call id (for a
   * UI while the run goes on). The same events reach the run on the call's `tool_output` item.
   */
  readonly onProgress?: (event: OpenAIToolProgress) => void;
}

/** Reports kept for the SDK to read onto each call's `tool_output` item. */
const MAX_REPORTS = 1024;

/** The gate's tools for the OpenAI Agents SDK and for plain function calling. */
export interface OpenAITools<TTool extends AnyToolManifest> {
  /** For `new Agent({ tools })`: each `execute` through the gate, `needsApproval` wired to it. */
  readonly tools: readonly FunctionTool[];
  /** For Chat Completions `tools` (plain function calling). */
  readonly definitions: readonly OpenAIFunctionDefinition[];
  /** The function name of a tool id. */
  nameOf<TId extends ToolIdOf<TTool>>(id: TId): OpenAIName<TId>;
  /** The tool id of a function name this adapter handed out; undefined for anything else. */
  toolIdOf(name: string): ToolIdOf<TTool> | undefined;
  /**
   * Run one function call from a model (plain function calling). `args` is the model's JSON text
   * or a parsed value. A name this adapter did not hand out is refused (`unknown_tool`) without
   * reaching any tool.
   */
  invoke<const TName extends string>(
    name: TName,
    args: TName extends OpenAIName<ToolIdOf<TTool>> ? ToolInput<ToolById<TTool, ToolIdOfName<TTool, TName>>> | string : unknown,
    options?: { signal?: AbortSignal },
  ): Promise<InvokeResult>;
}

/**
 * Hand the gate's tools to the OpenAI Agents SDK or to plain function calling. Names are mapped
 * (`.` → `__`) and mapped back only through the table built here. The model reads the gate's
 * `content` (fenced when untrusted) or the refusal's `code: message`.
 *
 * Approval: `needsApproval` asks the gate once (the SDK's call id becomes the request's `callRef`);
 * a call that needs a human interrupts the run (`result.interruptions`). After
 * `state.approve(item)` — in this process, or on a run state serialised and resumed with fresh
 * tools — `execute` asks the authority to grant exactly the request that was shown, as
 * `options.approver`, and only while the call's input is still the one it was made for. Without an
 * approver nothing is granted and the model is told the call waits for an operator.
 * `state.reject(item)` leaves the request to expire; nothing runs.
 *
 * Tracing and progress: each gate call is a custom span `toolgate.invoke` in the Agents SDK's trace
 * (see `tracedInvoke`). A call's progress reaches the run on its `tool_output` item, as
 * `item.customData.toolgate` (`GateCallReport`: status, code, the progress events), which the run's
 * stream exposes as the `tool_output` run item event and `result.newItems` keeps; the model never
 * sees it. `options.onProgress` gets each event as it comes; the host's `call.onProgress` still does.
 */
export function toOpenAITools<TTool extends AnyToolManifest>(gate: Gate<TTool>, call: CallOptions, options: OpenAIToolsOptions = {}): OpenAITools<TTool> {
  const g = gate as unknown as Gate;
  const invokeTraced = tracedInvoke(g);
  const broker = createApprovalBroker(g, call, options, invokeTraced);
  const reports = new Map<string, GateCallReport>();
  const byName = new Map<string, string>();
  const nameOf = (id: string) => id.replaceAll(".", "__");
  const descriptors = reachableTools(gate, call.profile, options);
  for (const d of descriptors) {
    const name = nameOf(d.id);
    if (byName.has(name)) throw new ToolError("config_invalid", `tools ${byName.get(name)} and ${d.id} map to the same function name ${name}`);
    if (name.length > 64) throw new ToolError("config_invalid", `function name ${name} is longer than 64 characters`);
    byName.set(name, d.id);
  }
  const modelText = (result: InvokeResult) =>
    result.status === "ok" ? result.content : result.status === "approval_required" ? approvalText(result) : refusalText(result);

  const tools = descriptors.map(
    (d) =>
      tool({
        name: nameOf(d.id),
        description: d.description,
        parameters: bareSchema(d.inputSchema) as never,
        strict: false,
        needsApproval: async (_context, input, callId) => broker.needsApproval(d, input, callId ?? ""),
        execute: async (input, context, details) => {
          const callId = details?.toolCall?.callId ?? "";
          // Approved in the run state: the app's `state.approve(item)`, or state resumed from elsewhere; the gate's records decide.
          const approved = callId !== "" && context?.isToolApproved({ toolName: nameOf(d.id), callId }) === true;
          const recorder = progressRecorder(d.id, (progress) => options.onProgress?.({ ...progress, callId }));
          const result = await broker.execute(d.id, input, callId, details?.signal, approved, recorder.listener);
          if (callId !== "") {
            reports.set(callId, recorder.report(result));
            if (reports.size > MAX_REPORTS) reports.delete(reports.keys().next().value as string);
          }
          return modelText(result);
        },
        // Read by the SDK right after `execute`, onto the call's tool_output item.
        customDataExtractor: ({ toolCall }) => {
          const report = reports.get(toolCall.callId);
          reports.delete(toolCall.callId);
          return report === undefined ? undefined : { toolgate: report };
        },
      }) as FunctionTool,
  );

  const invoke = async (name: string, args: unknown, opts: { signal?: AbortSignal } = {}): Promise<InvokeResult> => {
    const id = typeof name === "string" ? byName.get(name) : undefined;
    const refuse = (toolId: string, code: "unknown_tool" | "invalid_input", message: string): InvokeResult => ({
      status: "error",
      toolId,
      invocationId: "",
      receipt: null,
      code,
      message,
      boundary: "pre_effect_refusal",
      retryable: false,
    });
    if (id === undefined)
      return refuse(String(name).slice(0, 128), "unknown_tool", `no function named ${JSON.stringify(String(name).slice(0, 128))} was offered`);
    let input = args;
    if (typeof args === "string") {
      try {
        input = JSON.parse(args) as unknown;
      } catch {
        return refuse(id, "invalid_input", "the arguments are not valid JSON");
      }
    }
    return invokeTraced(id, input, { ...call, ...(opts.signal ? { signal: opts.signal } : {}) }, "");
  };

  return {
    tools,
    definitions: descriptors.map((d) => ({
      type: "function" as const,
      function: { name: nameOf(d.id), description: d.description, parameters: bareSchema(d.inputSchema), strict: false as const },
    })),
    nameOf: nameOf as OpenAITools<TTool>["nameOf"],
    toolIdOf: (name: string) => (byName.has(name) ? (byName.get(name) as ToolIdOf<TTool>) : undefined),
    invoke: invoke as OpenAITools<TTool>["invoke"],
  };
}
