import { hashCanonical } from "../canonical-json.js";
import { ToolError } from "../errors.js";

/**
 * A window limit's count, kept in the journal as a sealed record of kind {@link LIMIT_RECORD_KIND}:
 * a sliding window of `windowMs` as 60 buckets of width `w = ceil(windowMs / 60)`, bucket index
 * `floor(nowMs / w)`. A count covers the buckets with index `>= b - 60` (61 buckets), so it never
 * lets more than `max` calls into any real window of `windowMs` (it may refuse up to one bucket
 * early). Buckets with an index above `b` (another worker's clock ahead of ours) are counted too.
 *
 * A write drops no bucket for its age: workers' clocks may disagree, and a bucket old by one
 * worker's clock may be in another's window. A write keeps the newest 122 buckets (two windows'
 * worth when clocks agree) and merges the older ones into the oldest it keeps, so a call is never
 * counted for less time than it happened: a clock ahead erases nobody's calls, and a worker whose
 * clock runs more than a window behind counts every older call at once (it refuses early, and
 * its calls are never invisible to the others).
 */

export const LIMIT_RECORD_KIND = "limit";

/** The buckets a window keeps besides the current one. */
const SPAN = 60;

export type LimitPer = "principal" | "tenant" | "profile";

export interface WindowRecord {
  v: 1;
  profile: string;
  limit: string;
  per: LimitPer;
  tenant?: string;
  principal?: string;
  max: number;
  windowMs: number;
  /** `[index, count]`, ascending by index, count ≥ 1; at most 122 kept on write, the oldest merged into the next. */
  buckets: [index: number, count: number][];
}

/** One call charged to one window limit, in the same journal transaction as the call's intent. */
export interface LimitCharge {
  /** {@link limitRecordId} of the fields below. */
  readonly recordId: string;
  readonly profile: string;
  readonly limit: string;
  readonly per: LimitPer;
  readonly tenant?: string;
  readonly principal?: string;
  readonly max: number;
  readonly windowMs: number;
  /** Now, in epoch milliseconds (the gate's clock). */
  readonly nowMs: number;
}

/** Bounds a profile's window limit keeps (the profile parser refuses anything outside them). */
export const WINDOW_MAX = { min: 1, max: 1_000_000 } as const;
export const WINDOW_MS = { min: 1_000, max: 31_622_400_000 } as const;

const bucketWidth = (windowMs: number): number => Math.ceil(windowMs / SPAN);

/**
 * The record's buckets in the width of `windowMs`. A record written under another width (a named
 * limit whose window changed) puts each old bucket's calls at the last instant it covered, so they
 * are never counted as older than they were.
 */
function bucketsFor(rec: WindowRecord, windowMs: number): readonly (readonly [number, number])[] {
  if (rec.windowMs === windowMs) return rec.buckets;
  const from = bucketWidth(rec.windowMs);
  const to = bucketWidth(windowMs);
  const out: [number, number][] = [];
  for (const [index, count] of rec.buckets) {
    const at = Math.floor(((index + 1) * from - 1) / to);
    const last = out[out.length - 1];
    if (last && last[0] === at) last[1] += count;
    else out.push([at, count]);
  }
  return out;
}

/** Calls counted in the window ending at `nowMs`. */
export function windowCount(rec: WindowRecord | undefined, windowMs: number, nowMs: number): number {
  if (rec === undefined) return 0;
  const oldest = Math.floor(nowMs / bucketWidth(windowMs)) - SPAN;
  let count = 0;
  for (const [index, n] of bucketsFor(rec, windowMs)) if (index >= oldest) count += n;
  return count;
}

/** ms until one more call fits under `max` (0 when it fits now). */
export function retryAfterMs(rec: WindowRecord | undefined, windowMs: number, max: number, nowMs: number): number {
  let count = windowCount(rec, windowMs, nowMs);
  if (count + 1 <= max) return 0;
  const w = bucketWidth(windowMs);
  const oldest = Math.floor(nowMs / w) - SPAN;
  // Buckets leave the window oldest first: bucket i leaves when the current index reaches i + 61.
  for (const [index, n] of bucketsFor(rec!, windowMs)) {
    if (index < oldest) continue;
    count -= n;
    if (count + 1 <= max) return Math.max(1, (index + SPAN + 1) * w - nowMs);
  }
  return Math.max(1, (Math.floor(nowMs / w) + SPAN + 1) * w - nowMs);
}

/** The record after one more call at `nowMs`: +1 in the current bucket, the oldest buckets merged past 122, max and window refreshed. */
export function chargeWindow(rec: WindowRecord | undefined, charge: LimitCharge, nowMs: number): WindowRecord {
  const current = Math.floor(nowMs / bucketWidth(charge.windowMs));
  const buckets: [number, number][] = [];
  let added = false;
  for (const [index, n] of rec === undefined ? [] : bucketsFor(rec, charge.windowMs)) {
    if (!added && index >= current) {
      if (index === current) {
        buckets.push([index, n + 1]);
        added = true;
        continue;
      }
      buckets.push([current, 1]);
      added = true;
    }
    buckets.push([index, n]);
  }
  if (!added) buckets.push([current, 1]);
  // Past KEPT, the oldest are merged into the next (their calls counted as later: never fewer).
  if (buckets.length > KEPT) {
    const cut = buckets.length - KEPT;
    let merged = 0;
    for (let i = 0; i <= cut; i++) merged += buckets[i]![1];
    buckets.splice(0, cut);
    buckets[0] = [buckets[0]![0], merged];
  }
  const next: WindowRecord = { v: 1, profile: charge.profile, limit: charge.limit, per: charge.per, max: charge.max, windowMs: charge.windowMs, buckets };
  const scope = scopeOf(charge.per, charge.tenant, charge.principal);
  if (scope.tenant !== null) next.tenant = scope.tenant;
  if (scope.principal !== null) next.principal = scope.principal;
  return next;
}

/** Buckets a write keeps at most; a stored record may hold up to MAX_BUCKETS (written by another version). */
const KEPT = 2 * (SPAN + 1);
const KEYS = new Set(["v", "profile", "limit", "per", "tenant", "principal", "max", "windowMs", "buckets"]);
const MAX_BUCKETS = 4 * (SPAN + 1);
const whole = (n: unknown, min: number, max: number): n is number => typeof n === "number" && Number.isInteger(n) && n >= min && n <= max;

/** What is wrong with a stored window record (undefined when nothing is). Checked by hand: it runs on every charged call. */
function windowRecordProblem(value: unknown): string | undefined {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return "it is not an object";
  const r = value as Record<string, unknown>;
  for (const key of Object.keys(r)) if (!KEYS.has(key)) return `unknown key ${JSON.stringify(key.slice(0, 40))}`;
  if (r["v"] !== 1) return "v is not 1";
  if (typeof r["profile"] !== "string" || typeof r["limit"] !== "string") return "profile and limit are not text";
  if (r["per"] !== "principal" && r["per"] !== "tenant" && r["per"] !== "profile") return "per is not principal, tenant or profile";
  for (const key of ["tenant", "principal"]) if (key in r && typeof r[key] !== "string") return `${key} is not text`;
  if (!whole(r["max"], WINDOW_MAX.min, WINDOW_MAX.max)) return "max is out of range";
  if (!whole(r["windowMs"], WINDOW_MS.min, WINDOW_MS.max)) return "windowMs is out of range";
  const buckets = r["buckets"];
  if (!Array.isArray(buckets) || buckets.length > MAX_BUCKETS) return `buckets is not a list of at most ${MAX_BUCKETS}`;
  let last = -1;
  for (const bucket of buckets as unknown[]) {
    if (!Array.isArray(bucket) || bucket.length !== 2) return "a bucket is not [index, count]";
    const [index, count] = bucket as unknown[];
    if (!whole(index, 0, Number.MAX_SAFE_INTEGER) || !whole(count, 1, Number.MAX_SAFE_INTEGER)) return "a bucket's index or count is out of range";
    if (index <= last) return "buckets are not in ascending order, one per index";
    last = index;
  }
  return undefined;
}

/** A stored window record, schema-checked; a malformed value throws a plain `Error` (the journal reports it as `journal_failed`). */
export function decodeWindowRecord(value: unknown): WindowRecord | undefined {
  if (value === undefined) return undefined;
  const problem = windowRecordProblem(value);
  if (problem !== undefined) throw new Error(`a stored limit record does not match its schema: ${problem}`);
  return value as WindowRecord;
}

/** The scope a limit counts per: principal → tenant and principal; tenant → tenant; profile → neither. */
function scopeOf(per: LimitPer, tenant: string | undefined, principal: string | undefined): { tenant: string | null; principal: string | null } {
  return {
    tenant: per === "profile" ? null : (tenant ?? null),
    principal: per === "principal" ? (principal ?? null) : null,
  };
}

/** The id of a window's record: SHA-256 hex of `canonicalJson([profile, limitId, per, tenant|null, principal|null])` in its scope. */
export function limitRecordId(profile: string, limitId: string, per: LimitPer, tenant: string | undefined, principal: string | undefined): string {
  const scope = scopeOf(per, tenant, principal);
  return hashCanonical([profile, limitId, per, scope.tenant, scope.principal]);
}

/**
 * "24 h", "1 min", "90 s", "2.5 min", "3 d": a span of time as a refusal shows it. A unit is used
 * from two of it up, or from one when the span is a whole number of it; days from two days up.
 */
export function durationText(ms: number): string {
  const units: [number, string][] = [
    [86_400_000, "d"],
    [3_600_000, "h"],
    [60_000, "min"],
  ];
  for (const [size, unit] of units) {
    if (ms >= 2 * size || (unit !== "d" && ms >= size && ms % size === 0)) return `${Math.ceil((ms / size) * 10) / 10} ${unit}`;
  }
  return ms >= 1_000 ? `${Math.ceil(ms / 100) / 10} s` : `${Math.max(0, Math.ceil(ms))} ms`;
}

/** What a window refusal names. */
export interface WindowLimitFacts {
  readonly limit: string;
  readonly per: LimitPer;
  readonly max: number;
  readonly windowMs: number;
}

/** The `rate_limited` refusal for a window limit, the same from the gate's step and from the journal. */
export function windowLimitError(toolId: string, facts: WindowLimitFacts, retryAfter: number): ToolError {
  const { limit, per, max, windowMs } = facts;
  return new ToolError(
    "rate_limited",
    `${toolId}: the limit "${limit}" allows ${max} calls per ${per} every ${durationText(windowMs)}; the next call fits in ${durationText(retryAfter)}.`,
    { retryable: true, retryAfterSeconds: Math.ceil(retryAfter / 1000), details: { limit, per, max, windowMs, retryAfterMs: retryAfter } },
  );
}
