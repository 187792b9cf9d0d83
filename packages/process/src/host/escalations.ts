import { canonicalJson, hashCanonical, type ApprovalPreview, type EffectIdentity } from "@toolgate/core";
import { z } from "zod";
import { toolClaim, type ToolClaim } from "./untrusted-text.js";

const MAX_REMEMBERED_ESCALATIONS = 1024;
const MAX_PREVIEW_INPUT_CHARS = 64 * 1024;
/** Characters of an escalation reason an approver is shown; a longer reason is withheld whole. */
export const MAX_ESCALATION_REASON_CHARS = 1000;

/** Who asks: an escalation is remembered for this principal, in this tenant, only. */
type Caller = Pick<EffectIdentity, "principal" | "tenant">;

interface Remembered {
  /** The reason as the approver sees it. */
  readonly claim: ToolClaim;
  /** SHA-256 of the reason as the tool sent it: what the plan binds, so a grant names this very escalation. */
  readonly digest: string;
}

const escalationPlan = z.object({ escalation: z.string() });

/**
 * Escalations a tool asked for, by tool, principal, tenant and input hash. A remembered one makes
 * the gate require approval for the same input from the same caller, with the reason in the
 * preview as the tool's claim and its digest in the plan; the body knows the escalation was
 * approved when the plan it is handed carries that digest. One tenant's escalation never makes
 * another tenant's (or another principal's) identical call ask a human, and never shows its
 * reason to their approver. Bounded: the oldest is forgotten.
 */
export class Escalations {
  private readonly remembered = new Map<string, Remembered>();

  constructor(private readonly processName: string) {}

  /** True when no escalation is remembered: then no key can match, and none need be computed. */
  get empty(): boolean {
    return this.remembered.size === 0;
  }

  key(toolId: string, input: unknown, caller: Caller | undefined): string {
    // One hash over the whole tuple: no separator a principal or tenant could forge.
    return hashCanonical([toolId, caller?.principal ?? null, caller?.tenant ?? null, input ?? null]);
  }

  remember(key: string, reason: string): ToolClaim {
    const entry = { claim: toolClaim(this.processName, reason, MAX_ESCALATION_REASON_CHARS), digest: hashCanonical(reason) };
    this.remembered.delete(key);
    this.remembered.set(key, entry);
    if (this.remembered.size > MAX_REMEMBERED_ESCALATIONS) this.remembered.delete(this.remembered.keys().next().value!);
    return entry.claim;
  }

  has(key: string): boolean {
    return this.remembered.has(key);
  }

  /** The approver's view of a remembered escalation: the host's own summary, the tool's reason as labelled data. */
  preview(key: string, toolId: string, input: unknown): ApprovalPreview | undefined {
    const entry = this.remembered.get(key);
    if (!entry) return undefined;
    return {
      summary: `${toolId} asks for a human's approval before it acts. Its reason is the tool's own claim, unverified: see details.escalation.`,
      details: { tool: toolId, escalation: entry.claim },
      body: previewBody(input),
      plan: { escalation: entry.digest },
    };
  }

  /** True when a human approved this very escalation (the plan of the approved preview names it); consumes it. */
  approvedBy(key: string, plan: unknown): boolean {
    const entry = this.remembered.get(key);
    const approved = entry !== undefined && escalationPlan.safeParse(plan).data?.escalation === entry.digest;
    if (approved) this.remembered.delete(key);
    return approved;
  }
}

/**
 * The input as the approver reads it: canonical JSON. Over the bound it is not shown at all (a cut
 * here, before the gate's redaction, could keep part of a secret); the grant binds the input's hash either way.
 */
function previewBody(input: unknown): string {
  const body = canonicalJson(input ?? null);
  if (body.length <= MAX_PREVIEW_INPUT_CHARS) return body;
  return `[the input is ${body.length} characters of JSON, over the ${MAX_PREVIEW_INPUT_CHARS} shown here; its SHA-256 is ${hashCanonical(input ?? null)}]`;
}

/** The preview of a call without an escalation, when the operator gave none. */
export function defaultPreview(toolId: string, input: unknown): ApprovalPreview {
  return { summary: `Run ${toolId} with the input below`, details: { tool: toolId }, body: previewBody(input) };
}
