/**
 * Step 14: every registered secret is redacted from the output; untrusted output is scanned for
 * instructions (it is fenced when the result is shaped). A profile that holds flagged output asks a
 * human to release it.
 */
import { canonicalJson, hashCanonical, sha256Hex } from "../../canonical-json.js";
import type { ApprovalPreview } from "../../manifest.js";
import { scanForInjection, type InjectionFinding } from "../../untrusted.js";
import type { Fenced, OutputChecked, Writable } from "../call-state.js";
import type { GateEnv } from "../env.js";
import { approvalRequired, bindingCheckFor, recordRequest } from "../grants.js";
import { ToolError } from "../../errors.js";
import { describeOutput, errorText, settleFailure } from "../outcomes.js";
import type { Step } from "../pipeline.js";

const NO_FINDINGS: readonly InjectionFinding[] = Object.freeze([]);

export const redactAndFence: Step<OutputChecked, Fenced> = {
  name: "redact-and-fence",
  run(c, env) {
    const { manifest } = c.tool;
    const next = c as Writable<Fenced>;
    try {
      next.output = env.redactor.redact(c.output);
      next.outputJson = canonicalJson(next.output ?? null);
    } catch (cause) {
      // A schema may accept what JSON cannot carry (a bigint under z.any()): the effect happened, so it is settled, not thrown.
      return settleFailure(
        env,
        c,
        "effect_completed",
        new ToolError("output_invalid", `${manifest.id} returned output that is not plain JSON: ${errorText(cause)}`, { cause }),
      );
    }
    next.findings = manifest.untrustedOutput ? scanForInjection(next.output) : NO_FINDINGS;
    next.outputHash = sha256Hex(next.outputJson);
    next.described = describeOutput(manifest, next.output, env.redactor);
    if (next.findings.length === 0 || c.call.profile.onInjection !== "hold") return next;
    return hold(next, env);
  },
};

async function hold(c: Writable<Fenced>, env: GateEnv): Promise<Fenced> {
  const { manifest } = c.tool;
  const findings = c.findings;
  // The excerpts are the flagged text itself: the human sees them here; the model only inside the
  // result's fenced `content`. The output's hash binds a release to exactly this output.
  const preview: ApprovalPreview = env.redactor.redact({
    summary: `Output of ${manifest.id} contains text that reads like instructions; release it to the model?`,
    details: { findings: findings.map((f) => ({ rule: f.rule, path: f.path, excerpt: f.excerpt })), outputHash: c.outputHash },
  });
  const previewHash = hashCanonical(preview);
  const recorded = await recordRequest(env, c, "output", preview, previewHash);
  if ("status" in recorded) {
    c.held = recorded;
    return c;
  }
  // A human already released this very output for this call (a retry without a key reads again): it goes out, once.
  if (recorded.request.status === "granted" && recorded.request.kind === "output" && (await releasedNow(env, c, recorded.request.id, previewHash))) return c;
  // The result is still settled (a grant releases it from the outbox); the caller is told to ask a human.
  c.held = approvalRequired(c, "output", recorded.request, recorded.receipt, findings);
  return c;
}

async function releasedNow(env: GateEnv, c: Fenced, requestId: string, previewHash: string): Promise<boolean> {
  try {
    const outcome = await env.journal.consumeGrant(bindingCheckFor(env, c, requestId, previewHash), {
      type: "output.released",
      at: env.iso(),
      invocationId: c.invocationId,
      toolId: c.tool.manifest.id,
      principal: c.call.principal,
      tenant: c.call.tenant,
      data: { requestId, key: c.key },
    });
    return outcome.status === "consumed";
  } catch {
    return false; // not released: the output stays held under the request
  }
}
