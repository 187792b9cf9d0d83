/**
 * Step 9: a profile's limits (calls per window, shared by every worker on the journal; calls in
 * flight per worker) are checked before a human is asked and before any effect. A completed call
 * replayed under its key never reaches this step, so it is not counted twice. The window counts
 * read here are a first look: the journal counts again, atomically, when the call commits to run
 * (record-intent), so two workers never both take a window's last slot.
 */
import { ToolError } from "../../errors.js";
import type { LimitCharge } from "../../journal/types.js";
import { limitsFor } from "../../limits/match.js";
import { LIMIT_RECORD_KIND, decodeWindowRecord, limitRecordId, retryAfterMs, windowCount, windowLimitError } from "../../limits/window.js";
import type { ProfileLimit } from "../../profile.js";
import type { CallStart, Checked, Writable } from "../call-state.js";
import type { GateEnv } from "../env.js";
import { refuse, type Refusal } from "../outcomes.js";
import type { Step } from "../pipeline.js";

type WindowLimit = Extract<ProfileLimit, { kind: "window" }>;
type ConcurrentLimit = Extract<ProfileLimit, { kind: "concurrent" }>;

/** What a (profile, tool) pair's limits ask of each call, worked out once. */
interface Plan {
  readonly windows: readonly WindowLimit[];
  readonly concurrent: readonly ConcurrentLimit[];
  /** One `env.inFlight` key per concurrency limit: profile, limit and tool. */
  readonly slots: readonly string[];
}
const plans = new WeakMap<readonly ProfileLimit[], Plan>();
/** A concurrency refusal asks the caller to wait this long: a slot frees when any call in flight ends. */
const CONCURRENT_RETRY_MS = 1000;

export const limits: Step<Checked, Checked> = {
  name: "limits",
  run(c, env) {
    let found: readonly ProfileLimit[];
    try {
      found = limitsFor(c.call.profile, c.manifest.id);
    } catch (cause) {
      return refuse(env, c, "error", ToolError.is(cause) ? cause : new ToolError("config_invalid", "the profile's limits could not be read", { cause }));
    }
    if (found.length === 0) return c; // no limits: no read, nothing allocated
    const plan = planOf(found, c);
    return plan.windows.length === 0 ? takeSlots(c, env, plan) : checkWindows(c, env, plan);
  },
};

function planOf(found: readonly ProfileLimit[], c: Checked): Plan {
  let plan = plans.get(found);
  if (plan === undefined) {
    const concurrent = found.filter((l): l is ConcurrentLimit => l.kind === "concurrent");
    const slots = concurrent.map((l) => JSON.stringify([c.call.profile.name, l.id, c.manifest.id]));
    plan = { windows: found.filter((l): l is WindowLimit => l.kind === "window"), concurrent, slots };
    plans.set(found, plan);
  }
  return plan;
}

/** Read each window's count; refuse when one more call does not fit, naming the limit that frees last. */
async function checkWindows(c: Writable<Checked>, env: GateEnv, plan: Plan): Promise<Checked | Refusal> {
  const nowMs = Math.floor(env.clock()); // a charge's time is whole milliseconds, whatever the clock's precision
  const charges = plan.windows.map((limit) => chargeOf(c, limit, nowMs));
  let records;
  try {
    records = await Promise.all(charges.map(async (charge) => decodeWindowRecord(await env.journal.getRecord(LIMIT_RECORD_KIND, charge.recordId))));
  } catch (cause) {
    return refuse(env, c, "error", new ToolError("journal_failed", "the limits' counts could not be read, so the call was not run", { cause }));
  }
  let over: { charge: LimitCharge; wait: number } | undefined;
  charges.forEach((charge, i) => {
    if (windowCount(records[i], charge.windowMs, nowMs) + 1 <= charge.max) return;
    const wait = retryAfterMs(records[i], charge.windowMs, charge.max, nowMs);
    if (over === undefined || wait > over.wait) over = { charge, wait };
  });
  if (over !== undefined) return refuseLimited(env, c, windowLimitError(c.manifest.id, over.charge, over.wait));
  c.charges = charges;
  return takeSlots(c, env, plan);
}

/** A charge of this call to a window limit: the scope's tenant and principal only. */
function chargeOf(c: Checked, limit: WindowLimit, nowMs: number): LimitCharge {
  const profile = c.call.profile.name;
  const tenant = limit.per === "profile" ? undefined : c.call.tenant;
  const principal = limit.per === "principal" ? c.call.principal : undefined;
  return {
    recordId: limitRecordId(profile, limit.id, limit.per, tenant, principal),
    profile,
    limit: limit.id,
    per: limit.per,
    ...(tenant === undefined ? {} : { tenant }),
    ...(principal === undefined ? {} : { principal }),
    max: limit.max,
    windowMs: limit.windowMs,
    nowMs,
  };
}

/** Take a slot of each concurrency limit, or none: checked and taken with no await between. */
function takeSlots(c: Writable<Checked>, env: GateEnv, plan: Plan): Checked | Promise<Refusal> {
  if (plan.slots.length === 0) return c;
  for (const [i, limit] of plan.concurrent.entries()) {
    if ((env.inFlight.get(plan.slots[i]!) ?? 0) < limit.maxConcurrent) continue;
    const { id, maxConcurrent } = limit;
    const calls = maxConcurrent === 1 ? "1 call" : `${maxConcurrent} calls`;
    return refuseLimited(
      env,
      c,
      new ToolError("rate_limited", `${c.manifest.id}: the limit "${id}" allows ${calls} of this tool in flight at once; try again in 1 s.`, {
        retryable: true,
        retryAfterSeconds: CONCURRENT_RETRY_MS / 1000,
        details: { limit: id, maxConcurrent, retryAfterMs: CONCURRENT_RETRY_MS },
      }),
    );
  }
  for (const slot of plan.slots) env.inFlight.set(slot, (env.inFlight.get(slot) ?? 0) + 1);
  c.slots = plan.slots;
  return c;
}

/** Give back the concurrency slots a call took (runs once, when the call ends, whatever its result). */
export function releaseSlots(env: GateEnv, slots: readonly string[]): void {
  for (const slot of slots) {
    const n = (env.inFlight.get(slot) ?? 0) - 1;
    if (n > 0) env.inFlight.set(slot, n);
    else env.inFlight.delete(slot);
  }
}

/** A `rate_limited` refusal (denied, journaled), with the wait the limit named as `retryAfterMs`. */
export async function refuseLimited(env: GateEnv, c: CallStart, error: ToolError): Promise<Refusal> {
  const result = await refuse(env, c, "denied", error);
  const wait = error.details?.["retryAfterMs"];
  return result.status === "denied" && result.code === "rate_limited" && typeof wait === "number" ? { ...result, retryAfterMs: wait } : result;
}
