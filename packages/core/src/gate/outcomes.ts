/** How a call ends: journaled refusals and failures, and the shapes of ok results. Everything written is redacted first. */
import { canonicalJson } from "../canonical-json.js";
import { ToolError, type EffectBoundary } from "../errors.js";
import type { JournalReceipt } from "../journal/types.js";
import type { AnyToolManifest } from "../manifest.js";
import { fenceUntrusted, type InjectionFinding } from "../untrusted.js";
import type { CallStart, EditedCall, Runnable } from "./call-state.js";
import { withEditNotice } from "./edit-notice.js";
import type { GateEnv } from "./env.js";
import { foreignError, redactedPrefix } from "./foreign-text.js";
import { createRedactor, type Redactor } from "../redactor.js";
import { sessionState, textOf } from "../provenance/session.js";
import type { CallProvenance } from "../provenance/types.js";
import type { DeniedResult, ErrorResult, OkResult } from "./results.js";

export type Refusal = DeniedResult | ErrorResult;

/** Failures that may pass if the same call is tried again; a definite answer (not_found…) never does. */
const TRANSIENT_CODES: ReadonlySet<string> = new Set([
  "timeout",
  "cancelled",
  "rate_limited",
  "provider_unavailable",
  "handler_failed",
  "journal_failed",
  "tool_process_dead",
]);

/** A tool id the model asked for may be anything, a secret too: redacted, then cut. */
export const toolIdOf = (env: GateEnv, c: CallStart): string => c.tool?.manifest.id ?? redactedPrefix(env.redactor, safeText(c.requestedId), 128);

/** Append one audit event for this call; null when the journal could not record it (a throw or a rejection). */
export function audit(env: GateEnv, c: CallStart, type: string, data: Record<string, unknown>): Promise<JournalReceipt | null> {
  try {
    const appended = env.journal.append({
      type,
      at: env.iso(),
      invocationId: c.invocationId,
      toolId: toolIdOf(env, c),
      principal: safeString(env, c.call?.principal),
      tenant: safeString(env, c.call?.tenant),
      data: env.redactor.redact(data),
    });
    return Promise.resolve(appended).then(undefined, notRecorded);
  } catch {
    return Promise.resolve(null);
  }
}

const notRecorded = (): null => null;

/** Refuse before any effect: journaled as `call.refused`. */
export async function refuse(
  env: GateEnv,
  c: CallStart,
  status: "denied" | "error",
  error: ToolError,
  extra: { issues?: ErrorResult["issues"]; inputSchema?: ErrorResult["inputSchema"]; foreign?: boolean } = {},
): Promise<Refusal> {
  // A journal read that found a tampered row says so, rather than "could not be read".
  if (error.code === "journal_failed" && ToolError.is(error.cause, "journal_tampered")) error = error.cause;
  const message = env.redactor.redactText(error.message);
  const redactedDetails = error.details === undefined ? undefined : env.redactor.redact(error.details);
  const shown = extra.foreign ? foreignError(toolIdOf(env, c), message, redactedDetails) : undefined;
  const details = shown ? shown.details : redactedDetails;
  const receipt = await audit(env, c, "call.refused", {
    code: error.code,
    message,
    boundary: "pre_effect_refusal",
    profile: c.call?.profile?.name ?? null,
    inputHash: c.inputHash ?? null,
    ...(extra.issues ? { issues: extra.issues } : {}),
  });
  const base = {
    toolId: toolIdOf(env, c),
    invocationId: c.invocationId,
    receipt,
    code: receipt === null ? ("journal_failed" as const) : error.code,
    message: `${shown?.message ?? message}${receipt === null ? " (and the journal could not record the refusal)" : ""}`,
    ...(shown ? { untrusted: true, ...(shown.findings ? { findings: shown.findings } : {}) } : {}),
    boundary: "pre_effect_refusal" as const,
    ...(details === undefined ? {} : { details }),
  };
  return status === "denied"
    ? { status: "denied", ...base }
    : {
        status: "error",
        ...base,
        // Nothing ran: trying again is safe when the journal says its failure was transient.
        retryable: error.code === "journal_failed" && ToolError.is(error.cause) && error.cause.retryable,
        ...(extra.issues ? { issues: extra.issues } : {}),
        ...(extra.inputSchema ? { inputSchema: extra.inputSchema } : {}),
      };
}

/** Record a failed call (in the outbox when it has an intent) and shape its result. */
export async function settleFailure(env: GateEnv, c: Runnable, boundary: EffectBoundary, error: ToolError): Promise<ErrorResult> {
  const { manifest } = c.tool;
  const message = env.redactor.redactText(error.message);
  let receipt: JournalReceipt | null;
  if (c.intent) {
    try {
      receipt = await env.journal.settleIntent(c.key, {
        state: boundary === "effect_state_unknown" ? "unknown" : "failed",
        boundary,
        intentHash: c.intent.intentHash,
        invocationId: c.invocationId,
        at: env.iso(),
        error: { code: error.code, message },
        audit: { durationMs: env.clock() - c.startedAt },
      });
    } catch {
      receipt = null;
    }
  } else {
    receipt = await audit(env, c, "call.failed", { code: error.code, message, boundary, inputHash: c.inputHash });
  }
  const details = error.details === undefined ? undefined : env.redactor.redact(error.details);
  // What an untrusted tool's error says reaches the model too (fenced): the session remembers it.
  if (manifest.untrustedOutput && c.call.session !== undefined) rememberOutput(c, { message, details }, null);
  return {
    status: "error",
    toolId: manifest.id,
    invocationId: c.invocationId,
    receipt,
    code: error.code,
    ...shownMessage(manifest, message, details),
    boundary,
    retryable: error.retryable || (boundary !== "effect_state_unknown" && manifest.retryable && TRANSIENT_CODES.has(error.code)),
  };
}

/**
 * The message as the caller sees it: an untrusted tool's error text (what it threw, a process's
 * `ToolError`, anything quoting what it read) is fenced; the journal keeps it redacted, unfenced.
 */
export function shownMessage(
  manifest: AnyToolManifest,
  message: string,
  details?: Readonly<Record<string, unknown>>,
): Pick<ErrorResult, "message" | "untrusted" | "findings" | "details"> {
  if (!manifest.untrustedOutput) return { message, ...(details === undefined ? {} : { details }) };
  return foreignError(manifest.id, message, details);
}

/** An ok result; for a call that ran an approver's edit (`edited`, the call's own by default), `content` says so first. */
export function okResult(
  c: Pick<Runnable, "tool" | "invocationId" | "visibleKey" | "edited" | "call">,
  output: unknown,
  findings: readonly InjectionFinding[],
  replayed: boolean,
  receipt: JournalReceipt | null,
  canonicalOutput?: string,
  edited: EditedCall | undefined = c.edited,
): OkResult<unknown> {
  const { manifest } = c.tool;
  const json = canonicalOutput ?? canonicalJson(output ?? null);
  // In a session, what the model is about to read is remembered with where it came from.
  if (c.call.session !== undefined) rememberOutput(c, output, describeOutput(manifest, output, NO_SECRETS));
  const content = manifest.untrustedOutput ? fenceUntrusted(manifest.id, json, findings).text : json;
  const told = edited && { requestId: edited.requestId, version: edited.version, changes: edited.changes };
  return {
    status: "ok",
    toolId: manifest.id,
    invocationId: c.invocationId,
    receipt,
    output,
    content: told ? withEditNotice(manifest.id, told, content) : content,
    untrusted: manifest.untrustedOutput,
    findings,
    replayed,
    idempotencyKey: c.visibleKey,
    ...(told ? { edited: told } : {}),
  };
}

export { abortedError, thrownError } from "./thrown-error.js";

// Outputs reach `okResult` redacted already: describing one for the session needs no secrets of its own.
const NO_SECRETS = createRedactor([]);

/** The output (already redacted) in the call's session, labelled with its tool, family, trust and principal. */
function rememberOutput(c: Pick<Runnable, "tool" | "invocationId" | "call">, output: unknown, described: string | null): void {
  const state = sessionState(c.call.session);
  if (state === undefined) return;
  const { manifest } = c.tool;
  // A trusted output is one the manifest calls trusted from a call whose input was trusted: what a call made from
  // untrusted data returns is untrusted (a draft's id for a draft to someone else's address, a read echoing an
  // injected address); a call answered before it was judged (a replay under the caller's key) counts as untrusted.
  const judged = (c as { readonly provenance?: CallProvenance }).provenance;
  const inputTrusted = judged !== undefined ? judged.verdict === "trusted" : (c as { readonly inputTrusted?: boolean }).inputTrusted === true;
  state.add(textOf(output), {
    kind: "output",
    toolId: manifest.id,
    family: c.tool.family,
    invocationId: c.invocationId,
    principal: c.call.principal,
    untrusted: manifest.untrustedOutput || !inputTrusted,
    ...(described === null ? {} : { described }),
  });
}

/** The manifest's one-line description of a result, for the audit; null when it has none or fails. */
export function describeOutput(manifest: AnyToolManifest, output: unknown, redactor: Redactor): string | null {
  if (!manifest.describeResult) return null;
  try {
    return redactedPrefix(redactor, String(manifest.describeResult(output)), 256);
  } catch {
    return null;
  }
}

/** What the call acts on (the manifest's `target`), redacted and bounded. */
export function targetOf(env: GateEnv, c: Frozenish): string | undefined {
  const target = c.tool.manifest.target;
  if (!target) return undefined;
  try {
    return redactedPrefix(env.redactor, String(target(c.parsed)), 256);
  } catch {
    return undefined;
  }
}
type Frozenish = Pick<Runnable, "tool" | "parsed">;

export function identity(c: Pick<Runnable, "tool" | "invocationId" | "call">) {
  return { toolId: c.tool.manifest.id, invocationId: c.invocationId, principal: c.call.principal, tenant: c.call.tenant };
}

/** A thrown value as text, whatever it is (a message of another type, a getter that throws). */
export function errorText(cause: unknown): string {
  try {
    if (cause instanceof Error) return typeof cause.message === "string" ? cause.message : String(cause.message);
    return String(cause);
  } catch {
    return "unprintable error";
  }
}

function safeString(env: GateEnv, value: unknown): string | undefined {
  return typeof value === "string" ? redactedPrefix(env.redactor, value, 256) : undefined;
}

function safeText(value: unknown): string {
  try {
    return String(value);
  } catch {
    return "unprintable";
  }
}
