import type { ApprovalRequiredResult, DeniedResult, ErrorResult, OkResult } from "@toolgate/core";

/**
 * What a model (or an approver's client) is told about a pending approval: the gate's own
 * `content` — its line, the request id and expiry, then the preview fenced as untrusted (a preview
 * quotes what it read: an event, a draft, a file). Never the raw preview.
 */
export function approvalText(result: ApprovalRequiredResult): string {
  return result.content;
}

/** `code: message`, then schema issues, so a model can correct its input. */
export function refusalText(result: DeniedResult | ErrorResult): string {
  const lines = [`${result.code}: ${result.message}`];
  if (result.status === "error" && result.issues) {
    for (const issue of result.issues) lines.push(`- ${issue.path || "(input)"}: ${issue.message}`);
  }
  return lines.join("\n");
}

/** The structured, secret-free facts of a refusal, for `_meta` or an error's details. */
export function refusalFacts(result: DeniedResult | ErrorResult): Record<string, unknown> {
  return {
    status: result.status,
    toolId: result.toolId,
    invocationId: result.invocationId,
    code: result.code,
    message: result.message,
    boundary: result.boundary,
    ...(result.status === "error" ? { retryable: result.retryable } : {}),
    ...(result.status === "error" && result.issues ? { issues: result.issues } : {}),
    ...(result.details === undefined ? {} : { details: withoutSession(result.details) }),
  };
}

/** The session is the server's: a client is told where arguments came from, never which session judged them. */
function withoutSession<T extends { readonly provenance?: unknown }>(facts: T): T {
  const p = facts.provenance as { readonly session?: unknown } | undefined;
  if (p === null || typeof p !== "object" || !("session" in p)) return facts;
  const { session: _session, ...rest } = p;
  return { ...facts, provenance: rest };
}

/**
 * The structured facts of a pending approval, for `_meta`. A held output's preview quotes the held
 * text (its excerpts are for the human who releases it): only its summary goes out, like the model's text.
 * `editable`: what an approver may change before approving (JSON Pointers, `""` the whole input), or `false`.
 */
export function approvalFacts(result: ApprovalRequiredResult, editable: false | readonly string[] = false): Record<string, unknown> {
  return {
    status: result.status,
    toolId: result.toolId,
    invocationId: result.invocationId,
    reason: result.reason,
    requestId: result.requestId,
    preview: result.reason === "output" ? { summary: result.preview.summary } : withoutSession(result.preview),
    previewHash: result.previewHash,
    expiresAt: result.expiresAt,
    editable: result.reason === "output" ? false : editable,
  };
}

/**
 * The facts of an approver's edit, for `_meta` (a client that shows its model only
 * `structuredContent` misses the notice in the text; these let it show that the call ran changed):
 * the request, the version that ran and the changed members' JSON Pointers, never their values.
 * Undefined for a call that ran as sent.
 */
export function editedFacts(
  result: OkResult<unknown>,
): { readonly requestId: string; readonly version: number; readonly paths: readonly string[] } | undefined {
  const edited = result.edited;
  if (edited === undefined) return undefined;
  return { requestId: edited.requestId, version: edited.version, paths: edited.changes.map((c) => c.path) };
}
