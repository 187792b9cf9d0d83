/**
 * What the profiles' window limits have used so far, read from the journal every worker shares:
 * one row per limit and scope (principal, tenant or the whole profile) that counts a call now.
 * The console's Budgets page and `toolgate budgets` show these rows.
 */
import { ToolError } from "../errors.js";
import type { Journal } from "../journal/types.js";
import { LIMIT_RECORD_KIND, decodeWindowRecord, limitRecordId, retryAfterMs, windowCount, type LimitPer, type WindowRecord } from "./window.js";

export interface LimitUsage {
  readonly profile: string;
  readonly limit: string;
  readonly per: LimitPer;
  /** The tenant counted (per `tenant` and `principal`). */
  readonly tenant?: string;
  /** The principal counted (per `principal`). */
  readonly principal?: string;
  /** Calls counted in the window ending now. */
  readonly used: number;
  readonly max: number;
  readonly windowMs: number;
  /** ms until one more call fits under `max`; 0 when a call fits now. */
  readonly retryAfterMs: number;
  /** ms until the window counts no call at all (the budget is whole again). */
  readonly resetInMs: number;
}

/** A profile as usage reads it: its name and its window limits as defined now. */
interface ProfileLimits {
  readonly name: string;
  readonly limits?: readonly { readonly kind: string; readonly id: string; readonly max?: number | undefined; readonly windowMs?: number | undefined }[];
}

export interface ReadLimitUsageOptions {
  /** Now, in epoch milliseconds (default `Date.now()`). */
  readonly nowMs?: number;
  /** Only this profile's limits. */
  readonly profile?: string;
  /**
   * The profiles as defined now: a limit still declared is measured against its current `max` and
   * `windowMs` (as the gate does), not the ones the last charge recorded.
   */
  readonly profiles?: readonly ProfileLimits[];
}

/**
 * Usage of every window limit the journal counts, sorted by profile, limit, tenant and principal;
 * rows that count no call now are left out. A limit record that does not decode, or whose id is
 * not the one its own fields give, is `journal_failed` (a tampered row is the journal's
 * `journal_tampered`, as on every read).
 */
export async function readLimitUsage(journal: Journal, options: ReadLimitUsageOptions = {}): Promise<readonly LimitUsage[]> {
  const nowMs = options.nowMs ?? Date.now();
  if (!Number.isSafeInteger(nowMs) || nowMs < 0) throw new ToolError("config_invalid", "readLimitUsage: nowMs must be a whole number of milliseconds");
  const current = currentLimits(options.profiles ?? []);
  const rows: LimitUsage[] = [];
  for (const { id, value } of await journal.listRecords(LIMIT_RECORD_KIND)) {
    const rec = decoded(id, value);
    if (options.profile !== undefined && rec.profile !== options.profile) continue;
    const now = current.get(`${rec.profile}\n${rec.limit}`);
    const max = now?.max ?? rec.max;
    const windowMs = now?.windowMs ?? rec.windowMs;
    const used = windowCount(rec, windowMs, nowMs);
    if (used === 0) continue;
    rows.push({
      profile: rec.profile,
      limit: rec.limit,
      per: rec.per,
      ...(rec.tenant === undefined ? {} : { tenant: rec.tenant }),
      ...(rec.principal === undefined ? {} : { principal: rec.principal }),
      used,
      max,
      windowMs,
      retryAfterMs: retryAfterMs(rec, windowMs, max, nowMs),
      // The window is empty exactly when one call fits under a budget of one.
      resetInMs: retryAfterMs(rec, windowMs, 1, nowMs),
    });
  }
  return rows.sort((a, b) => order(a).localeCompare(order(b)));
}

function decoded(id: string, value: unknown): WindowRecord {
  let rec: WindowRecord | undefined;
  try {
    rec = decodeWindowRecord(value);
  } catch (cause) {
    throw new ToolError("journal_failed", `limit record ${id} does not match its schema`, { cause });
  }
  if (rec === undefined || limitRecordId(rec.profile, rec.limit, rec.per, rec.tenant, rec.principal) !== id)
    throw new ToolError("journal_failed", `limit record ${id} is not the record of the limit and scope it names`);
  return rec;
}

function currentLimits(profiles: readonly ProfileLimits[]): Map<string, { readonly max: number; readonly windowMs: number }> {
  const out = new Map<string, { max: number; windowMs: number }>();
  for (const profile of profiles)
    for (const limit of profile.limits ?? [])
      if (limit.kind === "window" && limit.max !== undefined && limit.windowMs !== undefined)
        out.set(`${profile.name}\n${limit.id}`, { max: limit.max, windowMs: limit.windowMs });
  return out;
}

const order = (u: LimitUsage): string => [u.profile, u.limit, u.tenant ?? "", u.principal ?? ""].join("\u0000");
