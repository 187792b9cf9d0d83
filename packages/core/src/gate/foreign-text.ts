/**
 * Text from outside the gate as the model may see it: redacted before it is cut (a cut may split
 * `[REDACTED]`, never a secret), and fenced when someone else wrote it — an untrusted tool's
 * error, and every approval preview (a preview quotes what it read: an event, a draft, a file).
 */
import { canonicalJson } from "../canonical-json.js";
import type { ApprovalPreview } from "../manifest.js";
import type { Redactor } from "../redactor.js";
import { fenceUntrusted, scanForInjection, type InjectionFinding } from "../untrusted.js";

/** Redact, then cut to `max` characters. */
export function redactedPrefix(redactor: Redactor, text: string, max: number): string {
  return redactor.redactText(text).slice(0, max);
}

/** An error's (already redacted) text from a tool whose output is untrusted: scanned, then fenced. */
export function fencedError(
  toolId: string,
  message: string,
): { readonly message: string; readonly findings: readonly Pick<InjectionFinding, "rule" | "path">[] } {
  const findings = scanForInjection(message);
  return { message: fenceUntrusted(toolId, message, findings, "error").text, findings: findings.map((f) => ({ rule: f.rule, path: f.path })) };
}

/**
 * What to hand the model for an approval request. For a call: one line of the gate's own, then
 * what the human is shown (summary, details, body — never the plan), scanned and fenced. For held
 * output: the gate's line only — the preview's excerpts are the flagged text, for the human alone.
 */
export function approvalContent(
  toolId: string,
  kind: "call" | "output",
  request: { readonly requestId: string; readonly expiresAt: string; readonly preview: ApprovalPreview },
): { readonly content: string; readonly previewFindings: readonly InjectionFinding[] } {
  const where = `request ${request.requestId}, until ${request.expiresAt}`;
  if (kind === "output") {
    return {
      content: `The output of ${toolId} is held for a human (${where}): it contains text that reads like instructions. Nothing of it is shown here.`,
      previewFindings: [],
    };
  }
  const { summary, details, body } = request.preview;
  const shown = { summary, ...(details === undefined ? {} : { details }), ...(body === undefined ? {} : { body }) };
  const previewFindings = scanForInjection(shown);
  const fenced = fenceUntrusted(toolId, canonicalJson(shown), previewFindings, "preview").text;
  return { content: `${toolId} has not run: a human must approve it first (${where}). What the human is shown:\n${fenced}`, previewFindings };
}

/**
 * An untrusted error's details (already redacted) as the caller sees them: they are the tool's
 * words too, and an adapter may pass them on as the error's facts. Scanned; withheld whole when
 * they read like instructions (the findings name rule and path only).
 */
export function shownDetails(details: Readonly<Record<string, unknown>>): {
  readonly details: Readonly<Record<string, unknown>>;
  readonly findings: readonly Pick<InjectionFinding, "rule" | "path">[];
} {
  const findings = scanForInjection(details).map((f) => ({ rule: f.rule, path: f.path.replace(/^\$/, "details") }));
  if (findings.length === 0) return { details, findings };
  return { details: { withheld: true, reason: "the tool's error details read like instructions" }, findings };
}

/** Someone else's error: its text fenced, its details scanned (withheld when they read like instructions), every finding named. */
export function foreignError(
  toolId: string,
  message: string,
  details: Readonly<Record<string, unknown>> | undefined,
): {
  readonly message: string;
  readonly untrusted: true;
  readonly findings?: readonly Pick<InjectionFinding, "rule" | "path">[];
  readonly details?: Readonly<Record<string, unknown>>;
} {
  const fenced = fencedError(toolId, message);
  const shown = details === undefined ? undefined : shownDetails(details);
  const findings = [...fenced.findings, ...(shown?.findings ?? [])];
  return { message: fenced.message, untrusted: true, ...(findings.length > 0 ? { findings } : {}), ...(shown ? { details: shown.details } : {}) };
}
