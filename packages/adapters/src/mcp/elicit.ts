/**
 * In-band approval through MCP elicitation: only for a registered client an operator enabled it
 * for (its record says `elicitation`), which is then the recorded approver (`mcp:<clientId>`).
 * Any other client — one that merely declares the capability, or auto-accepts — is never asked.
 */
import type { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { ElicitResultSchema } from "@modelcontextprotocol/sdk/types.js";
import { ToolError, type ApprovalGrant, type ApprovalRequest, type ApprovalRequiredResult, type Approver, type Gate } from "@toolgate/core";
import type { McpClient } from "@toolgate/core/operator";
import { approvalText } from "../shared/describe-result.js";
import { confirmMessage, editedInput, notOffered, offeredFields, requestedSchema } from "./elicit-edit.js";

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

/**
 * Ask the human behind an operator-enabled client to approve `result`, and record the answer as that
 * client's decision. The form also offers the members of the input an approver may edit (see
 * `offeredFields`); changed values are checked by the desk (`previewEdit`), shown again in a second
 * question, and approved with the edit (`grant({ edit, expect })`). Every approval names what the
 * human saw (`expect`: version 0 and its preview hash), so an operator's edit made while the form was
 * open is never approved unseen. A request an operator already edited is not asked in band.
 */
export async function askThroughElicitation(context: ElicitContext, result: ApprovalRequiredResult, request?: ApprovalRequest): Promise<ElicitOutcome> {
  if (context.enabled === false || !supportsFormElicitation(context.server) || context.signal.aborted) return { kind: "pending" };
  // A held output's text is not shown in band (it reads like instructions): a human who cannot see it
  // is not asked to release it. It waits for an operator, whose console shows the excerpts.
  if (result.reason === "output") return { kind: "pending" };
  // An operator's edit: its version is decided where it was made (console or CLI), by someone who saw it.
  if (request?.edit !== undefined) return { kind: "pending" };
  const approver = await inBandApprover(context.gate, context.client);
  if (!approver) return { kind: "pending" };
  const fields = offeredFields(context.gate.registry.describe(result.toolId), request);
  const expect = { version: 0, previewHash: result.previewHash };
  const editNote =
    fields.length === 0 ? "" : "\n\nYou may change the fields below before approving: the changed call is checked and shown to you again before it runs.";
  const first = await ask(
    context,
    provenanceNote(result) + approvalText(result) + editNote,
    requestedSchema("Approve", `Run ${result.toolId} as shown above`, fields),
  );
  if (first.action === "pending") return { kind: "pending" };
  if (first.action === "deny") return deny(context, result, approver);
  const extra = notOffered(first.content, fields);
  if (extra.length > 0) return refusedExtra(result, extra);
  const input = editedInput(request?.input, fields, first.content);
  if (input === undefined) return decide(() => context.gate.approvals.grant(result.requestId, { by: approver, expect }));

  let checked;
  try {
    checked = await context.gate.approvals.previewEdit(result.requestId, { by: approver, input, expect });
  } catch (cause) {
    return refusal(cause);
  }
  const second = await ask(
    context,
    confirmMessage(result.toolId, result.requestId, checked),
    requestedSchema("Approve the changed call", `Run ${result.toolId} with your changes, as shown above`, []),
  );
  if (second.action === "pending") return { kind: "pending" };
  if (second.action === "deny") return deny(context, result, approver);
  const extraNow = notOffered(second.content, []);
  if (extraNow.length > 0) return refusedExtra(result, extraNow);
  const edit = { input: checked.input, previewHash: checked.previewHash };
  return decide(() => context.gate.approvals.grant(result.requestId, { by: approver, edit, expect }));
}

/** Where the arguments came from, first, as the console shows an operator: a violation's reasons, or each judged field. */
function provenanceNote(result: ApprovalRequiredResult): string {
  const p = result.preview.provenance;
  if (p === undefined) return "";
  const lines =
    p.violations.length > 0
      ? ["WARNING: an argument did not come from trusted data.", ...p.violations.map((v) => `- ${v}`)]
      : [`Where the arguments came from: ${p.verdict}.`, ...p.fields.map((f) => `- ${f.why}`)];
  return `${lines.join("\n")}\n\n`;
}

/** One form question: accepted with `approve: true` (and its content), declined or refused (deny), or no answer (pending). */
async function ask(
  context: ElicitContext,
  message: string,
  requestedSchema: Record<string, unknown>,
): Promise<{ readonly action: "approve" | "deny" | "pending"; readonly content?: Record<string, unknown> }> {
  let answer;
  try {
    answer = await context.sendRequest({ method: "elicitation/create", params: { mode: "form", message, requestedSchema } }, ElicitResultSchema, {
      signal: context.signal,
      timeout: context.timeoutMs,
    });
  } catch {
    // No answer (timeout, cancellation, a client that failed): the request stays pending.
    return { action: "pending" };
  }
  if (answer.action === "cancel") return { action: "pending" };
  if (answer.action === "accept" && answer.content?.["approve"] === true) return { action: "approve", content: answer.content };
  return { action: "deny" };
}

async function decide(grant: () => ReturnType<Gate["approvals"]["grant"]>): Promise<ElicitOutcome> {
  try {
    const decided = await grant();
    // A second, different approver is still needed (two-person rule): the request stays pending.
    return decided.status === "granted" ? { kind: "granted", grant: decided.grant } : { kind: "pending" };
  } catch (cause) {
    return refusal(cause);
  }
}

function refusal(cause: unknown): ElicitOutcome {
  return { kind: "refused", code: ToolError.is(cause) ? cause.code : "approval_unknown", message: (cause as Error).message };
}

/** An answer with properties the form never offered: nothing is decided, the request stays pending for an operator. */
function refusedExtra(result: ApprovalRequiredResult, names: readonly string[]): ElicitOutcome {
  return {
    kind: "refused",
    code: "edit_refused",
    message: `the answer for ${result.toolId} (request ${result.requestId}) held fields that were not offered: ${names.join(", ")}; nothing was approved`,
  };
}

async function deny(context: ElicitContext, result: ApprovalRequiredResult, approver: Approver): Promise<ElicitOutcome> {
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
