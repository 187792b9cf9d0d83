/** Step 5: the profile allows the tool (tokens, risk, consents, egress), decided once per frozen profile. */
import { evaluatePolicy, refusalFor } from "../../policy.js";
import type { Authorized, Validated, Writable } from "../call-state.js";
import { refuse } from "../outcomes.js";
import type { Step } from "../pipeline.js";

export const policy: Step<Validated, Authorized> = {
  name: "policy",
  run(c, env) {
    const { profile } = c.call;
    let perProfile = env.decisions.get(profile);
    if (!perProfile) env.decisions.set(profile, (perProfile = new Map()));
    let decision = perProfile.get(c.manifest.id);
    if (!decision) perProfile.set(c.manifest.id, (decision = evaluatePolicy(c.manifest, profile)));
    const refusal = decision.kind === "allow" ? undefined : refusalFor(c.manifest.id, profile, decision);
    if (refusal) return refuse(env, c, "denied", refusal);
    (c as Writable<Authorized>).authorized = true;
    return c as Authorized;
  },
};
