/** What an earlier attempt under the same idempotency key means for this call: replay it, retake it, or refuse. */
import { ToolError } from "../errors.js";
import type { OutboxEntry, OutboxState } from "../journal/types.js";
import { isSideEffectful } from "../manifest.js";
import type { EditedCall, Keyed } from "./call-state.js";
import type { GateEnv } from "./env.js";
import { approvalRequired, bindingCheckFor, grantCheckFor, grantRefusal, grantSpent } from "./grants.js";
import { audit, okResult, refuse, shownMessage } from "./outcomes.js";
import type { ErrorResult, InvokeResult } from "./results.js";

export type ExistingVerdict = InvokeResult<unknown> | { readonly retake: readonly OutboxState[] };

/**
 * The same call: the entry ran this input, or an approver's edit of it (the caller retries with the
 * input as asked), or this call is itself the edit the entry ran.
 */
function sameInput(c: Keyed & { readonly edited?: EditedCall | undefined }, entry: OutboxEntry): boolean {
  const sent = c.edited?.askedInputHash ?? c.inputHash;
  return entry.inputHash === c.inputHash || entry.inputHash === sent || entry.edited?.askedInputHash === sent;
}

export async function judgeExisting(env: GateEnv, c: Keyed, entry: OutboxEntry): Promise<ExistingVerdict> {
  const { manifest } = c;
  if (entry.toolId !== manifest.id || !sameInput(c, entry) || entry.principal !== c.call.principal || entry.tenant !== c.call.tenant) {
    return refuse(env, c, "denied", new ToolError("idempotency_conflict", "this idempotency key was already used for a different call"));
  }
  switch (entry.state) {
    case "pending":
      return refuse(
        env,
        c,
        "denied",
        new ToolError("idempotency_in_flight", "a call with this idempotency key is still running (or was interrupted; run outbox recovery)"),
      );
    case "completed":
      // A derived key stands for "the same call, retried": after the retry window, an identical
      // call is a new one (pass an idempotency key to deduplicate for longer).
      if (c.call.idempotencyKey === undefined && Date.parse(entry.updatedAt) < env.clock() - env.derivedKeyWindowMs) return { retake: ["completed"] };
      // A body the journal did not keep (reads, by default; pruned results): a read runs again, an effect is never re-run.
      if (entry.result?.outputPruned) {
        if (!isSideEffectful(entry.effect)) return { retake: ["completed"] };
        const pruned = new ToolError(
          "output_pruned",
          `${manifest.id} already completed under this key, but its recorded output was pruned; it is not run again`,
        );
        return refuse(env, c, "denied", pruned);
      }
      return replay(env, c, entry);
    case "failed": {
      const retakeable =
        entry.boundary === "pre_effect_refusal" || entry.boundary === "effect_not_started" || (entry.boundary === "effect_failed" && manifest.retryable);
      if (retakeable) return { retake: ["failed"] };
      return replayedError(env, c, entry);
    }
    case "unknown":
      if (manifest.idempotent) return { retake: ["unknown"] };
      return refuse(
        env,
        c,
        "denied",
        new ToolError(
          "effect_state_unknown",
          `an earlier attempt of ${manifest.id} with this key may have taken effect; an operator must resolve it before it can run again`,
        ),
      );
  }
}

async function replay(env: GateEnv, c: Keyed, entry: OutboxEntry): Promise<InvokeResult<unknown>> {
  const result = entry.result!;
  if (result.heldBy !== undefined) {
    const released = await releaseHeld(env, c, entry, result.heldBy);
    if (released !== true) return released;
  }
  const edited = await editedOf(env, c, entry);
  if (edited && "status" in edited) return edited;
  const receipt = await audit(env, c, "call.replayed", {
    key: c.key,
    intentHash: entry.intentHash,
    outputHash: result.outputHash,
    originalInvocationId: entry.invocationId,
  });
  return okResult(c, result.output, result.findings, true, receipt, undefined, edited);
}

/** A replay of an approver's edit tells the caller again; the version is the request's (the entry names the request). */
async function editedOf(env: GateEnv, c: Keyed, entry: OutboxEntry): Promise<EditedCall | InvokeResult<unknown> | undefined> {
  if (!entry.edited) return undefined;
  const { requestId, askedInputHash, changes } = entry.edited;
  let request;
  try {
    request = await env.journal.getApproval(requestId);
  } catch (cause) {
    return refuse(env, c, "error", new ToolError("journal_failed", "the journal could not be read", { cause }));
  }
  return { requestId, askedInputHash, changes: env.redactor.redact(changes), version: request?.edit?.version ?? 0 };
}

async function replayedError(env: GateEnv, c: Keyed, entry: OutboxEntry): Promise<ErrorResult> {
  const receipt = await audit(env, c, "call.replayed", { key: entry.key, intentHash: entry.intentHash, code: entry.error?.code ?? null });
  return {
    status: "error",
    toolId: c.manifest.id,
    invocationId: c.invocationId,
    receipt,
    code: entry.error?.code ?? "handler_failed",
    ...shownMessage(c.manifest, entry.error?.message ?? "an earlier attempt with this key failed"),
    boundary: entry.boundary,
    retryable: false,
    replayed: true,
  };
}

/** Output held for a human: released only by a grant for the held request. */
async function releaseHeld(env: GateEnv, c: Keyed, entry: OutboxEntry, requestId: string): Promise<true | InvokeResult<unknown>> {
  let request;
  try {
    request = await env.journal.getApproval(requestId);
  } catch (cause) {
    return refuse(env, c, "error", new ToolError("journal_failed", "the journal could not be read", { cause }));
  }
  const grant = c.call.approval;
  if (!request) return refuse(env, c, "error", new ToolError("approval_unknown", `held output's request ${requestId} is missing`));
  const presented = grant?.requestId === requestId ? grant : undefined;
  if (!presented) {
    if (request.status === "consumed") return true;
    // Granted by a human, and this retry is the held call itself: released by binding, without a token.
    if (request.status !== "granted") return approvalRequired(c, "output", request, null, entry.result!.findings);
  }
  // The held request binds the input that ran: for an approver's edit, the edit (the entry's), not the input as asked.
  const ran = { ...c, inputHash: entry.inputHash };
  const check = presented ? grantCheckFor(env, ran, presented, request.previewHash) : bindingCheckFor(env, ran, requestId, request.previewHash);
  let outcome;
  try {
    outcome = await env.journal.consumeGrant(check, {
      type: "output.released",
      at: env.iso(),
      invocationId: c.invocationId,
      toolId: entry.toolId,
      principal: entry.principal,
      tenant: entry.tenant,
      data: { requestId, key: entry.key },
    });
  } catch (cause) {
    return refuse(env, c, "error", new ToolError("journal_failed", "the held output's release could not be recorded", { cause }));
  }
  if (outcome.status === "consumed" || outcome.status === "already_consumed") {
    grantSpent(env, c);
    return true;
  }
  return refuse(env, c, "denied", grantRefusal(outcome, requestId));
}
