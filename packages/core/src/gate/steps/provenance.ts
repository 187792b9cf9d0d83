/**
 * Between policy (and replay-caller-key) and preview: in a session, where the call's arguments came
 * from. A side-effectful call (or one whose manifest or profile names destinations) is judged
 * against what the session has seen: a destination not from trusted data is a violation, asked of
 * a human with the provenance in the preview (or refused, per the profile); a call whose every
 * judged value was copied from trusted text may skip the manifest's approval when the profile says
 * so. A read of trusted output is judged only to know whether its output is trusted. Outside a
 * session nothing changes.
 */
import { ToolError } from "../../errors.js";
import type { EffectIdentity } from "../../context.js";
import { judge } from "../../provenance/judge.js";
import { isJudged, mayWaive, rulesUnder } from "../../provenance/under-profile.js";
import { sessionState, type SessionState } from "../../provenance/session.js";
import type { CallProvenance } from "../../provenance/types.js";
import type { Authorized, Judged, Writable } from "../call-state.js";
import type { GateEnv } from "../env.js";
import { audit, identity, refuse } from "../outcomes.js";
import type { Step } from "../pipeline.js";

export const provenance: Step<Authorized, Judged> = {
  name: "provenance",
  run(c, env) {
    const next = c as Writable<Judged>;
    next.manifestAsks = manifestAsks(c);
    const state = c.call.session === undefined ? undefined : sessionState(c.call.session);
    if (state === undefined) return next; // provenance stays undefined
    if (state.owner !== env) return refuse(env, c, "error", new ToolError("config_invalid", "call.session was opened by another gate"));
    const { rules } = rulesUnder(c.manifest, c.call.profile);
    if (!isJudged(c.manifest, rules)) return readJudged(next, state);
    const judged = judge(state, c.parsed, rules, manifestDeclares(c));
    const settings = c.call.profile.provenance;
    let action: CallProvenance["action"] = "none";
    if (judged.verdict === "violation") action = settings?.onViolation === "refuse" ? "refused" : next.manifestAsks ? "none" : "escalated";
    // Only what the user or operator said, copied, skips a human (and never where `mayWaive` says no).
    else if (judged.verdict === "trusted" && next.manifestAsks && settings?.trustedSkipsApproval === true && mayWaive(c.manifest, c.call.profile)) {
      action = "waived";
    }
    next.provenance = Object.freeze({ session: state.id, action, ...judged });
    if (action === "refused") {
      const message = `${c.manifest.id} refused under profile ${c.call.profile.name}: ${judged.violations.join("; ")}`;
      return refuse(env, c, "denied", new ToolError("provenance_refused", message, { details: { provenance: next.provenance } }));
    }
    if (action === "none" && (judged.verdict === "trusted" || judged.verdict === "new")) return next;
    return journaled(next, env);
  },
};

function manifestDeclares(c: Authorized): boolean {
  const own = c.manifest.provenance;
  return (own?.destinations?.length ?? 0) + (own?.content?.length ?? 0) > 0;
}

/**
 * A read whose output the manifest calls trusted is trusted only when its input is: a read that
 * echoes what it was asked (a free/busy query naming an address) must not launder the address.
 */
function readJudged(c: Writable<Judged>, state: SessionState): Judged {
  if (!c.manifest.untrustedOutput) c.inputTrusted = judge(state, c.parsed, {}, false).verdict === "trusted";
  return c;
}

/** Escalations, waivers and calls carrying untrusted data are journaled before anything is asked or run. */
async function journaled(c: Judged, env: GateEnv): Promise<Judged> {
  await audit(env, c, "provenance.checked", { provenance: forJournal(c.provenance!), inputHash: c.inputHash });
  return c;
}

/**
 * The journal keeps hashes of inputs, not what they carry: a code or an id found in someone else's
 * mail is kept as its length and last two characters (the preview shows it whole, to the human).
 */
function forJournal(p: CallProvenance): CallProvenance {
  const mask = (found: string) => (/^[\p{N}]{4,}$|^[\p{L}\p{N}_-]{16,}$/u.test(found) ? `…${found.slice(-2)} (${found.length} characters)` : found);
  return { ...p, fields: p.fields.map((f) => (f.found ? { ...f, found: f.found.map(mask) } : f)) };
}

function manifestAsks(c: Authorized): boolean {
  const rule: unknown = c.manifest.approval;
  if (rule === "never") return false;
  if (rule === "always") return true;
  try {
    return (rule as (input: unknown, call: EffectIdentity) => boolean)(c.parsed, identity(c)) !== false;
  } catch {
    return true; // a predicate that fails asks a human
  }
}
