import type { ApprovalPreview, ApprovalRequiredResult, DeniedResult, ErrorResult } from "@toolgate/core";

/** One readable block for a human or a model: what needs approval, and the request id. */
export function approvalText(result: ApprovalRequiredResult): string {
  const lines = [
    result.reason === "call"
      ? `Approval required before ${result.toolId} runs: ${result.preview.summary}`
      : `Approval required to release the output of ${result.toolId}: ${result.preview.summary}`,
    `Request id: ${result.requestId} (expires ${result.expiresAt})`,
  ];
  lines.push(...previewLines(result.preview));
  return lines.join("\n");
}

export function previewLines(preview: ApprovalPreview): string[] {
  const lines: string[] = [];
  if (preview.details) lines.push(`Details: ${JSON.stringify(preview.details)}`);
  if (preview.body !== undefined) lines.push("Body:", preview.body);
  return lines;
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
    ...(result.details === undefined ? {} : { details: result.details }),
  };
}

export function approvalFacts(result: ApprovalRequiredResult): Record<string, unknown> {
  return {
    status: result.status,
    toolId: result.toolId,
    invocationId: result.invocationId,
    reason: result.reason,
    requestId: result.requestId,
    preview: result.preview,
    previewHash: result.previewHash,
    expiresAt: result.expiresAt,
  };
}
