/** The profile recovery's replay runs under: it names no caller, so nothing in it may ask a human. */
import type { Profile } from "../profile.js";
import type { Frozen } from "./call-state.js";

export const RECOVERY_PROFILE = Object.freeze({
  name: "recovery",
  allow: Object.freeze([]),
  maxRisk: "critical",
  consents: Object.freeze([]),
  egress: Object.freeze([]),
  onInjection: "flag",
  limits: Object.freeze([]),
}) as Profile;

/** True for a call recovery replays (its own profile object, never a caller's look-alike named "recovery"). */
export const isRecovered = (c: Pick<Frozen, "call">): boolean => c.call.profile === RECOVERY_PROFILE;
