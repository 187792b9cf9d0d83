/**
 * The approval desk's preview of an edited input: built as a call's is (`buildPreview`: the tool's
 * deadline, its connector opened lazily, checked, redacted, hashed), as the request's principal and
 * tenant. It reads no profile, and the connector secrets it holds leave the redactor when it ends.
 */
import { randomUUID } from "node:crypto";
import { ToolError } from "../errors.js";
import type { ApprovalRequest } from "../journal/types.js";
import type { Profile } from "../profile.js";
import type { RegisteredTool } from "../registry.js";
import type { BuiltPreview, Resolved } from "./call-state.js";
import type { GateEnv } from "./env.js";
import { buildPreview } from "./steps/preview.js";

/** A preview of an edit is the principal's view of the provider, asked by an approver: it has no profile to read. */
const NO_PROFILE = new Proxy(Object.freeze({}), {
  get() {
    throw new ToolError("config_invalid", "the desk's preview of an edit has no profile to read");
  },
}) as Profile;

/**
 * The preview of `parsed` (the edited input, as the tool's schema gave it) for `request`, or the
 * error it failed with, its text redacted (a preview's error may quote what it read: it goes to the
 * approver who asked, never to a model).
 */
export async function previewEdited(
  env: GateEnv,
  request: Pick<ApprovalRequest, "principal" | "tenant">,
  tool: RegisteredTool,
  parsed: unknown,
): Promise<BuiltPreview | ToolError> {
  const invocationId = `edit_${randomUUID()}`;
  const c: Resolved = {
    invocationId,
    requestedId: tool.manifest.id,
    input: parsed,
    call: { principal: request.principal, tenant: request.tenant, profile: NO_PROFILE },
    startedAt: env.clock(),
    tool,
    manifest: tool.manifest,
  };
  try {
    const built = await buildPreview(env, { ...c, parsed });
    if (!ToolError.is(built)) return built;
    const message = env.redactor.redactText(built.message);
    return message === built.message ? built : new ToolError(built.code, message);
  } finally {
    env.endCall(invocationId);
  }
}
