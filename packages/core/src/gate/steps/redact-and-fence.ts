/**
 * Step 12: every registered secret is redacted from the output; untrusted output is scanned for
 * instructions (it is fenced when the result is shaped). A profile that holds flagged output asks a
 * human to release it.
 */
import { canonicalJson, hashCanonical, sha256Hex } from "../../canonical-json.js";
import type { ApprovalPreview } from "../../manifest.js";
import { scanForInjection, type InjectionFinding } from "../../untrusted.js";
import type { Fenced, OutputChecked, Writable } from "../call-state.js";
import type { GateEnv } from "../env.js";
import { requestApproval } from "../grants.js";
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
  // The excerpts are the flagged text itself: the human sees them here; the model only inside the result's fenced `content`.
  const preview: ApprovalPreview = env.redactor.redact({
    summary: `Output of ${manifest.id} contains text that reads like instructions; release it to the model?`,
    details: { findings: findings.map((f) => ({ rule: f.rule, path: f.path, excerpt: f.excerpt })) },
  });
  // The result is still settled (a grant releases it from the outbox); the caller is told to ask a human.
  c.held = await requestApproval(env, c, "output", preview, hashCanonical(preview), findings);
  return c;
}
