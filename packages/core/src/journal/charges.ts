import { ToolError } from "../errors.js";
import {
  LIMIT_RECORD_KIND,
  WINDOW_MAX,
  WINDOW_MS,
  chargeWindow,
  decodeWindowRecord,
  limitRecordId,
  retryAfterMs,
  windowCount,
  windowLimitError,
  type LimitCharge,
} from "../limits/window.js";
import type { JournalTransaction, RecordRef } from "./driver.js";
import type { AuditEventInput, JournalReceipt } from "./types.js";

/**
 * A call's charges to its window limits, applied by the journal inside the transaction that
 * commits the call (its intent, its grant's consumption, or a pure call's charge alone): every
 * record is read and checked before the first write, so a refusal writes nothing, and a store
 * shared by several writers holds the records it read until commit, so two workers never both
 * take a window's last slot.
 */

/** The facts of the call a charge's event copies. */
export type CallFacts = Pick<AuditEventInput, "at" | "invocationId" | "toolId" | "principal" | "tenant">;

/** How the journal reads and writes one sealed record inside a transaction. */
export interface RecordAccess {
  /** The record's opened value (undefined when none), its row checked against the verified chain. */
  read(tx: JournalTransaction, kind: string, id: string): unknown;
  /** Seal and store the record's new value with its audit event (whose subject the journal sets). */
  put(tx: JournalTransaction, kind: string, id: string, value: unknown, event: AuditEventInput): JournalReceipt;
}

/** The limit records `charges` read, for the transaction's declared reads. */
export const chargeReads = (charges: readonly LimitCharge[]): readonly RecordRef[] => charges.map((c) => ({ kind: LIMIT_RECORD_KIND, id: c.recordId }));

/** True when there is something to charge (the journal's fast path skips everything else). */
export const hasCharges = (charges: readonly LimitCharge[] | undefined): charges is readonly LimitCharge[] =>
  charges !== undefined && (!Array.isArray(charges) || charges.length > 0);

const whole = (n: unknown, min: number, max: number): boolean => typeof n === "number" && Number.isInteger(n) && n >= min && n <= max;
const text = (s: unknown): boolean => typeof s === "string" && s.length > 0;

/**
 * A charge the journal could not count faithfully is refused before its transaction
 * (`config_invalid`): a record id that is not the hash of the limit and its scope (a count kept
 * under another scope's record), a scope missing the tenant or principal it counts per, a bound
 * outside the profile's, a time that is not one, or the same record charged twice in one call.
 */
export function badCharges(charges: unknown): ToolError | undefined {
  const bad = (why: string) => new ToolError("config_invalid", `a limit charge ${why}`);
  if (!Array.isArray(charges)) return bad("list is an array");
  const seen = new Set<string>();
  for (const c of charges as readonly Partial<LimitCharge>[]) {
    if (typeof c !== "object" || c === null) return bad("is an object");
    if (!text(c.profile) || !text(c.limit)) return bad("names its profile and limit");
    if (c.per !== "principal" && c.per !== "tenant" && c.per !== "profile") return bad(`counts per principal, tenant or profile, not ${String(c.per)}`);
    if (c.per !== "profile" && !text(c.tenant)) return bad(`per ${c.per} names its tenant`);
    if (c.per === "principal" && !text(c.principal)) return bad("per principal names its principal");
    if ((c.tenant !== undefined && typeof c.tenant !== "string") || (c.principal !== undefined && typeof c.principal !== "string"))
      return bad("has a text tenant and principal");
    if (!whole(c.max, WINDOW_MAX.min, WINDOW_MAX.max)) return bad(`max is a whole number from ${WINDOW_MAX.min} to ${WINDOW_MAX.max}`);
    if (!whole(c.windowMs, WINDOW_MS.min, WINDOW_MS.max)) return bad(`windowMs is a whole number from ${WINDOW_MS.min} to ${WINDOW_MS.max}`);
    if (!whole(c.nowMs, 0, Number.MAX_SAFE_INTEGER)) return bad("time (nowMs) is whole epoch milliseconds");
    if (c.recordId !== limitRecordId(c.profile!, c.limit!, c.per, c.tenant, c.principal))
      return bad(`record id is not the one of limit ${c.limit} in its scope`);
    if (seen.has(c.recordId)) return bad(`record is charged twice in one call (${c.limit})`);
    seen.add(c.recordId);
  }
  return undefined;
}

/**
 * Read and check every charge's record inside `tx`, and throw the `rate_limited` refusal when one
 * more call would take any window over its `max`; nothing is written here. Returns the write: each
 * record charged, with its own `limit.charged` event, resolving to the last event's receipt.
 */
export function takeCharges(io: RecordAccess, tx: JournalTransaction, charges: readonly LimitCharge[], call: CallFacts): () => JournalReceipt | null {
  const current = charges.map((charge) => {
    const rec = decodeWindowRecord(io.read(tx, LIMIT_RECORD_KIND, charge.recordId));
    if (
      rec &&
      (rec.profile !== charge.profile ||
        rec.limit !== charge.limit ||
        rec.per !== charge.per ||
        rec.tenant !== scoped(charge).tenant ||
        rec.principal !== scoped(charge).principal)
    )
      throw new Error(`limit record ${charge.recordId} counts another limit or scope than ${charge.limit}`);
    if (windowCount(rec, charge.windowMs, charge.nowMs) + 1 > charge.max)
      throw windowLimitError(call.toolId ?? "this call", charge, retryAfterMs(rec, charge.windowMs, charge.max, charge.nowMs));
    return rec;
  });
  return () => {
    let receipt: JournalReceipt | null = null;
    charges.forEach((charge, i) => {
      const next = chargeWindow(current[i], charge, charge.nowMs);
      const { profile, limit, per, max, windowMs } = charge;
      receipt = io.put(tx, LIMIT_RECORD_KIND, charge.recordId, next, {
        type: "limit.charged",
        at: call.at,
        invocationId: call.invocationId,
        toolId: call.toolId,
        principal: call.principal,
        tenant: call.tenant,
        data: { profile, limit, per, count: windowCount(next, windowMs, charge.nowMs), max, windowMs },
      });
    });
    return receipt;
  };
}

/** The tenant and principal a charge's record keeps (only those of its scope). */
const scoped = (c: LimitCharge): { tenant: string | undefined; principal: string | undefined } => ({
  tenant: c.per === "profile" ? undefined : c.tenant,
  principal: c.per === "principal" ? c.principal : undefined,
});
