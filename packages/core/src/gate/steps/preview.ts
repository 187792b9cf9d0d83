/**
 * Step 6: when the tool asks for a human, what they will approve. The connection is checked first
 * (no human is asked to approve a call that could not run); the preview runs under the tool's
 * deadline, is validated, redacted and hashed. Its `plan` reaches the body as `ctx.plan`.
 */
import { canonicalJson, hashCanonical } from "../../canonical-json.js";
import { ToolError } from "../../errors.js";
import type { PreviewContext } from "../../context.js";
import type { ApprovalPreview } from "../../manifest.js";
import type { BuiltPreview, Frozen, Judged, Previewed, Resolved, Writable } from "../call-state.js";
import type { InvokeResult } from "../results.js";
import { bounded, connectorRequest, lazyConnector } from "../connector-access.js";
import type { GateEnv } from "../env.js";
import { errorText, identity, refuse } from "../outcomes.js";
import type { Step } from "../pipeline.js";

const MAX_PREVIEW_BYTES = 256 * 1024;

export const preview: Step<Judged, Previewed> = {
  name: "preview",
  run(c, env) {
    const action = c.provenance?.action;
    // A human is asked when the manifest says so (unless provenance waived it) or provenance escalated the call.
    if (action === "waived" && c.manifest.preview) return planOnly(c, env);
    if (action === "waived" || (!c.manifestAsks && action !== "escalated")) return c as Previewed; // approval stays undefined
    return previewForApproval(c, env);
  },
};

async function previewForApproval(c: Judged, env: GateEnv): Promise<Previewed | InvokeResult<unknown>> {
  if (c.manifest.connector && env.connectors?.check) {
    const check = env.connectors.check.bind(env.connectors);
    try {
      await bounded(c, "checking the connection", (signal) => check(connectorRequest(env, c, signal)));
    } catch (cause) {
      return refuse(
        env,
        c,
        "error",
        ToolError.is(cause) ? cause : new ToolError("connector_unavailable", `could not check connector ${c.manifest.connector.provider}`, { cause }),
      );
    }
  }
  const built = c.manifest.preview ? await buildPreview(env, c) : escalationPreview(env, c);
  // What a preview throws may quote what it read (someone else's event, a draft): fenced for the model.
  if (ToolError.is(built)) return refusePreview(env, c, built);
  (c as Writable<Previewed>).approval = withProvenance(env, c, built);
  return c as Previewed;
}

/** A waived call asks nobody, but its body may need the plan its preview fixes (the exact bytes to send). */
async function planOnly(c: Judged, env: GateEnv): Promise<Previewed | InvokeResult<unknown>> {
  const built = await buildPreview(env, c);
  if (ToolError.is(built)) return refusePreview(env, c, built);
  (c as Writable<Previewed>).waivedPlan = built.plan;
  return c as Previewed;
}

// What a preview throws may quote what it read (someone else's event, a draft): fenced for the model.
const refusePreview = (env: GateEnv, c: Judged, built: ToolError) => refuse(env, c, "error", built, { foreign: thrownByPreview.has(built) });

/** A tool that never asks has no preview of its own: a call provenance escalated shows its input. */
function escalationPreview(env: GateEnv, c: Judged): BuiltPreview | ToolError {
  return checkPreview(env, c.manifest.id, { summary: `${c.manifest.title}: an argument did not come from trusted data`, details: { input: c.parsed } });
}

/**
 * The provenance is shown with the preview but kept out of its hash: the grant binds the call (its
 * input and what the tool showed), and a retry after more output was seen must still find its grant.
 */
function withProvenance(env: GateEnv, c: Judged, built: BuiltPreview): BuiltPreview {
  if (c.provenance === undefined) return built;
  return { ...built, preview: { ...built.preview, provenance: env.redactor.redact(c.provenance) } };
}

/**
 * The tool's preview of `c.parsed` under the tool's deadline, checked, redacted and hashed (or the
 * error it failed with). Also the edited call's re-preview at the retry and the desk's preview of an edit.
 */
export async function buildPreview(env: GateEnv, c: Resolved & Pick<Frozen, "parsed">): Promise<BuiltPreview | ToolError> {
  const { manifest } = c;
  try {
    const raw = await bounded(c, "the preview", (signal) => {
      const ctx: PreviewContext = {
        signal,
        effect: identity(c),
        connector: manifest.connector ? lazyConnector(env, c, signal) : undefined,
        workspace: env.workspace,
      };
      return manifest.preview!(c.parsed, ctx);
    });
    return checkPreview(env, manifest.id, raw);
  } catch (cause) {
    const error = ToolError.is(cause)
      ? cause
      : new ToolError("preview_invalid", `${manifest.id} could not build its preview: ${env.redactor.redactText(errorText(cause))}`, { cause });
    thrownByPreview.add(error);
    return error;
  }
}

/** A preview as the human will see it: checked, redacted and hashed; the grant binds that hash. Also for a body's mid-call ask. */
export function checkPreview(env: GateEnv, toolId: string, raw: unknown): BuiltPreview | ToolError {
  const problems = previewProblems(raw);
  if (problems) return new ToolError("preview_invalid", `${toolId} built an invalid preview: ${problems}`);
  const copy = JSON.parse(canonicalJson(raw)) as ApprovalPreview;
  const shown = env.redactor.redact(copy);
  // The grant binds what the human saw: a plan with a secret in it would differ from what was shown.
  if (copy.plan !== undefined && canonicalJson(shown.plan ?? null) !== canonicalJson(copy.plan)) {
    return new ToolError("preview_invalid", `${toolId} built a plan that carries a registered secret; a plan holds only what the human can see`);
  }
  return { preview: shown, previewHash: hashCanonical(shown), plan: copy.plan };
}

/** Errors a preview threw (or that carry its text), as opposed to the gate's verdicts on what it returned. */
const thrownByPreview = new WeakSet<ToolError>();

/** True for an error `buildPreview` returned from what the preview threw (its text may quote what it read: fence it). */
export const previewThrew = (error: ToolError): boolean => thrownByPreview.has(error);

function previewProblems(raw: unknown): string | undefined {
  if (raw === null || typeof raw !== "object") return "a preview must be an object { summary, details?, body?, plan? }";
  const p = raw as Partial<ApprovalPreview>;
  if (typeof p.summary !== "string" || p.summary.trim() === "") return "summary must be a non-empty string";
  if (p.body !== undefined && typeof p.body !== "string") return "body must be a string";
  if (p.details !== undefined && (p.details === null || typeof p.details !== "object" || Array.isArray(p.details))) return "details must be an object";
  let json: string;
  try {
    json = canonicalJson(raw);
  } catch (cause) {
    return `it is not plain JSON (${(cause as Error).message})`;
  }
  if (Buffer.byteLength(json) > MAX_PREVIEW_BYTES) return `it is larger than ${MAX_PREVIEW_BYTES} bytes`;
  return undefined;
}
