/**
 * Step 7: the idempotency key. The caller's own, or, for side-effectful calls without one, a key
 * derived from tool, input, principal, tenant and (for approval tools) the preview: the same call
 * seen the same way is a retry; a change in what a human would see makes it a new call. Scoped to
 * tenant and principal in the journal, so one tenant's keys never collide with another's.
 */
import { hashCanonical } from "../../canonical-json.js";
import { isSideEffectful } from "../../manifest.js";
import type { Authorized, Keyed, Previewed, Writable } from "../call-state.js";
import type { Step } from "../pipeline.js";

export const deriveKey: Step<Previewed, Keyed> = {
  name: "derive-key",
  run(c) {
    // A caller's key does not depend on the preview: replay-caller-key assigned it already.
    if (c.call.idempotencyKey !== undefined) return c as unknown as Keyed;
    return assignKeys(c, c.approval?.previewHash);
  },
};

/** The keys of a call: the caller's own (known before any preview), or derived (for approval tools, from the preview). */
export function assignKeys(c: Authorized, previewHash: string | undefined): Keyed {
  const { call, manifest } = c;
  let visibleKey: string;
  let fresh = false;
  if (call.idempotencyKey !== undefined) visibleKey = call.idempotencyKey;
  else if (isSideEffectful(manifest.effect)) {
    visibleKey = `auto-${hashCanonical([manifest.id, c.inputHash, call.principal, call.tenant, previewHash ?? null])}`;
  } else {
    visibleKey = `once-${c.invocationId}`;
    fresh = true;
  }
  // Pure tools need no outbox: nothing to recover. Held output needs one to be released from.
  const usesOutbox = manifest.effect !== "none" || call.idempotencyKey !== undefined || (manifest.untrustedOutput && call.profile.onInjection === "hold");
  // A fresh key is unique to this invocation already; only keys that can recur need scoping.
  const key = fresh ? visibleKey : hashCanonical([call.tenant, call.principal, visibleKey]);
  const next = c as unknown as Writable<Keyed>;
  next.visibleKey = visibleKey;
  next.key = key;
  next.fresh = fresh;
  next.usesOutbox = usesOutbox;
  return next;
}
