/**
 * In-band approval through MCP elicitation: only for a registered client an operator enabled it
 * for (its record says `elicitation`), which is then the recorded approver (`mcp:<clientId>`).
 * Any other client — one that merely declares the capability, or auto-accepts — is never asked.
 */
import type { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { ElicitResultSchema } from "@modelcontextprotocol/sdk/types.js";
import { ToolError, type ApprovalGrant, type ApprovalRequiredResult, type Approver, type Gate } from "@toolgate/core";
import type { McpClient } from "@toolgate/core/operator";
import { approvalText } from "../shared/describe-result.js";

/** What came of asking: nothing asked or no answer (the request stays pending), a grant, a refusal. */
export type ElicitOutcome =
  | { readonly kind: "pending" }
  | { readonly kind: "granted"; readonly grant: ApprovalGrant }
  | { readonly kind: "refused"; readonly code: string; readonly message: string };

export interface ElicitContext {
  readonly gate: Gate;
  readonly server: Server;
  readonly client: McpClient | undefined;
  /** `false`: never ask, whatever the record says. */
  readonly enabled: boolean | undefined;
  readonly timeoutMs: number;
  readonly signal: AbortSignal;
  readonly sendRequest: (
    request: { method: "elicitation/create"; params: Record<string, unknown> },
    schema: typeof ElicitResultSchema,
    options: { signal: AbortSignal; timeout: number },
  ) => Promise<{ action: string; content?: Record<string, unknown> | undefined }>;
}

/**
 * The in-band approver for this client, or undefined: the client's current record (an operator may
 * have removed it or turned elicitation off since the session began) must be active with
 * elicitation on; the authority makes the approver.
 */
export async function inBandApprover(gate: Gate, client: McpClient | undefined): Promise<Approver | undefined> {
  if (client?.elicitation !== true) return undefined;
  const current = (await gate.authority.clients.list()).find((c) => c.id === client.id);
  if (current?.status !== "active" || current.elicitation !== true) return undefined;
  try {
    return gate.authority.clients.approver(current);
  } catch {
    return undefined;
  }
}

/** Ask the human behind an operator-enabled client to approve `result`, and record the answer as that client's decision. */
export async function askThroughElicitation(context: ElicitContext, result: ApprovalRequiredResult): Promise<ElicitOutcome> {
  if (context.enabled === false || !supportsFormElicitation(context.server) || context.signal.aborted) return { kind: "pending" };
  // A held output's text is not shown in band (it reads like instructions): a human who cannot see it
  // is not asked to release it. It waits for an operator, whose console shows the excerpts.
  if (result.reason === "output") return { kind: "pending" };
  const approver = await inBandApprover(context.gate, context.client);
  if (!approver) return { kind: "pending" };
  let answer;
  try {
    answer = await context.sendRequest(
      {
        method: "elicitation/create",
        params: {
          mode: "form",
          message: approvalText(result),
          requestedSchema: {
            type: "object",
            properties: { approve: { type: "boolean", title: "Approve", description: `Run ${result.toolId} as shown above` } },
            required: ["approve"],
          },
        },
      },
      ElicitResultSchema,
      { signal: context.signal, timeout: context.timeoutMs },
    );
  } catch {
    // No answer (timeout, cancellation, a client that failed): the request stays pending.
    return { kind: "pending" };
  }
  if (answer.action === "cancel") return { kind: "pending" };
  if (answer.action === "accept" && answer.content?.["approve"] === true) {
    try {
      const decided = await context.gate.approvals.grant(result.requestId, { by: approver });
      // A second, different approver is still needed (two-person rule): the request stays pending.
      return decided.status === "granted" ? { kind: "granted", grant: decided.grant } : { kind: "pending" };
    } catch (cause) {
      return { kind: "refused", code: ToolError.is(cause) ? cause.code : "approval_unknown", message: (cause as Error).message };
    }
  }
  try {
    await context.gate.approvals.deny(result.requestId, { by: approver, reason: "declined through MCP elicitation" });
  } catch {
    // Already decided or expired: the refusal below stands either way.
  }
  return { kind: "refused", code: "approval_denied", message: `the human declined ${result.toolId} (request ${result.requestId})` };
}

function supportsFormElicitation(server: Server): boolean {
  const elicitation = server.getClientCapabilities()?.elicitation as Record<string, unknown> | undefined;
  // An empty capability object predates modes and means form.
  return elicitation !== undefined && (elicitation["form"] !== undefined || Object.keys(elicitation).length === 0);
}
