import { hashCanonical } from "./canonical-json.js";
import { ToolError } from "./errors.js";
import { envOfGate, type AnyGate } from "./gate/gate.js";
import { checkRecorded, intentOf, replayIntent } from "./recovery-replay.js";
import type { Journal, JournalReceipt, OutboxEntry } from "./journal/types.js";
import { isSideEffectful } from "./manifest.js";

export interface RecoverOutboxOptions {
  /** Only entries untouched for this long are taken: younger ones may still be running. Default 5 minutes. */
  readonly olderThanMs?: number;
  /** Entries claimed per pass; default 100. */
  readonly batchSize?: number;
  /**
   * How long a claim holds: a claimed entry is stamped this far in the future, so no other worker
   * takes it while it is being replayed. Default: the longest tool deadline in the registry plus a
   * minute (a replay cannot outlive its deadline).
   */
  readonly leaseMs?: number;
  /** Who recovers (a worker id), recorded in the audit. Default `recovery`. */
  readonly claimant?: string;
  readonly signal?: AbortSignal;
  /** Milliseconds since the epoch; default the gate's clock or `Date.now`. */
  readonly clock?: () => number;
  /** Called after each entry is resolved, with the running count (for progress displays). */
  readonly onEntry?: (entry: RecoveredEntry, done: number) => void;
}

/** What recovery did with one entry. */
export interface RecoveredEntry {
  readonly key: string;
  readonly toolId: string;
  /**
   * `replayed`: an idempotent tool ran again with the same key; `unknown`: a side-effectful tool
   * that cannot be replayed safely, left for an operator; `failed`: a read, or a replay that failed;
   * `skipped`: needs a gate to replay (journal-only recovery); `tampered`: the stored entry fails its
   * seal, so it was not replayed (recorded as a `journal.tampered` event; see `verifyJournalRows`).
   */
  readonly action: "replayed" | "unknown" | "failed" | "skipped" | "tampered";
  readonly detail?: string;
}

export interface RecoveryReport {
  readonly claimed: number;
  readonly replayed: number;
  readonly unknown: number;
  readonly failed: number;
  readonly skipped: number;
  readonly tampered: number;
  readonly entries: readonly RecoveredEntry[];
}

/**
 * After a restart, resolve every intent that has no result. Idempotent side-effectful tools are
 * replayed with the **same** idempotency key (the provider deduplicates); side-effectful tools that
 * are not idempotent are never replayed: they become `effect_state_unknown` for an operator
 * (`resolveOutboxEntry`). Interrupted reads are marked failed. Claims are compare-and-set, so two
 * recovery workers never take the same entry.
 *
 * An idempotent write that ended `unknown` (its connection dropped, it timed out) is claimed like
 * a pending one and replayed with its key too, while its recorded input is whole and it has had
 * fewer than four attempts in all; one run retries it at most once (the cutoff is the run's start).
 * Other unknown entries are never claimed: they wait for an operator.
 *
 * The tool as registered now decides too: an entry whose tool is gone, is no longer idempotent or
 * has another effect, or whose recorded input its schema now refuses, is settled unknown for an
 * operator (never left claimed for every later run). A run stopped through `signal` replays no
 * more of its batch: the rest stay claimed until their lease ends.
 *
 * With a bare journal (no gate), nothing can be replayed: idempotent entries are left pending and
 * reported as `skipped`, and unknown entries are not claimed at all.
 */
export async function recoverOutbox(target: AnyGate | Journal, options: RecoverOutboxOptions = {}): Promise<RecoveryReport> {
  const gate = "invoke" in target ? target : undefined;
  const journal: Journal = gate ? gate.journal : (target as Journal);
  const env = gate ? envOfGate(gate) : undefined;
  if (gate && !env) throw new ToolError("config_invalid", "recoverOutbox needs a gate from createGate");
  const clock = options.clock ?? env?.clock ?? Date.now;
  const olderThanMs = options.olderThanMs ?? 5 * 60_000;
  const batchSize = options.batchSize ?? 100;
  const claimant = options.claimant ?? "recovery";
  const leaseMs = options.leaseMs ?? (gate ? Math.max(0, ...gate.registry.ids().map((id) => gate.registry.describe(id)?.timeoutMs ?? 0)) + 60_000 : 0);
  const entries: RecoveredEntry[] = [];
  let claimed = 0;
  const skippedKeys = new Set<string>();
  const tamperedKeys = new Set<string>();

  // Fixed at the start: an entry this run settled is not taken again by it.
  const updatedBefore = new Date(clock() - olderThanMs).toISOString();
  for (;;) {
    if (options.signal?.aborted) break;
    const now = clock();
    const tampered: RecoveredEntry[] = [];
    const batch = (
      await journal.claimOutbox({
        // A bare journal replays nothing: an unknown entry it claimed would only lose its state.
        states: gate ? ["pending", "unknown"] : ["pending"],
        updatedBefore,
        limit: batchSize,
        claimant,
        at: new Date(now).toISOString(),
        leaseUntil: new Date(now + leaseMs).toISOString(),
        // Never replayed: the claim records it and moves it out of every later claim's reach.
        onTampered: (key, problem) => tampered.push({ key, toolId: "", action: "tampered", detail: problem }),
      })
    ).filter((e) => !skippedKeys.has(e.key));
    const fresh = tampered.filter((t) => !tamperedKeys.has(t.key));
    for (const outcome of fresh) {
      tamperedKeys.add(outcome.key);
      entries.push(outcome);
      options.onEntry?.(outcome, entries.length);
    }
    // A pass that only found tampered entries goes on while it finds new ones (the claim moves
    // them out of reach; this bounds the loop even where it could not).
    if (batch.length === 0 && fresh.length > 0) continue;
    if (batch.length === 0) break;
    claimed += batch.length;
    for (const entry of batch) {
      // Stopped: the rest stay claimed (pending under the lease) for a later run. Replayed with an
      // aborted signal, each would be settled as cancelled before its effect started: out of every
      // claim's reach, and no longer saying that the attempt it stands for may have taken effect.
      if (options.signal?.aborted) break;
      const outcome = await recoverOne(entry);
      if (outcome.action === "skipped") skippedKeys.add(entry.key);
      entries.push(outcome);
      options.onEntry?.(outcome, entries.length);
    }
    // Skipped entries were touched by the claim, so the next pass (same cutoff) will not see them
    // again until they age; a pass that only skipped is done.
    if (batch.every((e) => skippedKeys.has(e.key))) break;
  }

  async function recoverOne(entry: OutboxEntry): Promise<RecoveredEntry> {
    const base = { key: entry.key, toolId: entry.toolId };
    const at = new Date(clock()).toISOString();
    const settle = (state: "failed" | "unknown", boundary: "effect_failed" | "effect_state_unknown", message: string): Promise<JournalReceipt> =>
      journal.settleIntent(entry.key, {
        state,
        boundary,
        intentHash: entry.intentHash,
        invocationId: entry.invocationId,
        at,
        error: { code: state === "unknown" ? "effect_state_unknown" : "handler_failed", message },
        audit: { recoveredBy: claimant, attempt: entry.attempts },
        eventType: "outbox.recovered",
      });

    if (!isSideEffectful(entry.effect)) {
      await settle("failed", "effect_failed", "interrupted by a restart; reads are not replayed, the caller asks again");
      return { ...base, action: "failed", detail: "read interrupted" };
    }
    if (!entry.idempotent) {
      await settle("unknown", "effect_state_unknown", "interrupted by a restart; not idempotent, so never replayed: an operator must resolve it");
      return { ...base, action: "unknown" };
    }
    if (entry.inputRedacted) {
      await settle("unknown", "effect_state_unknown", "interrupted by a restart; its recorded input had secrets redacted, so it cannot be replayed faithfully");
      return { ...base, action: "unknown", detail: "input redacted" };
    }
    if (!env) return { ...base, action: "skipped", detail: "needs a gate to replay" };
    // Refused before its body would run (the tool is gone or changed, the schema refuses the input):
    // settled for an operator, not left claimed to be taken again on every later run.
    const refused = checkRecorded(env, entry);
    if (ToolError.is(refused)) {
      await settle("unknown", "effect_state_unknown", `recovery cannot replay it: ${env.redactor.redactText(refused.message)}`);
      return { ...base, action: "unknown", detail: refused.code };
    }
    try {
      const result = await replayIntent(env, entry, options.signal);
      if (result.status === "ok") return { ...base, action: "replayed" };
      return {
        ...base,
        action: result.status === "error" && result.boundary === "effect_state_unknown" ? "unknown" : "failed",
        detail: "code" in result ? result.code : result.status,
      };
    } catch (cause) {
      const message = cause instanceof Error ? env.redactor.redactText(cause.message) : "replay failed";
      await settle("unknown", "effect_state_unknown", `recovery could not replay it: ${message}`);
      return { ...base, action: "unknown", detail: message };
    }
  }

  const count = (action: RecoveredEntry["action"]) => entries.filter((e) => e.action === action).length;
  return {
    claimed,
    replayed: count("replayed"),
    unknown: count("unknown"),
    failed: count("failed"),
    skipped: count("skipped"),
    tampered: count("tampered"),
    entries,
  };
}

export interface ResolveOutboxOptions {
  /** Who decided; recorded in the audit. */
  readonly operator: string;
  readonly note?: string;
  /** For `applied`: the output a retry with the same key should replay. */
  readonly output?: unknown;
  readonly clock?: () => number;
}

/**
 * An operator's decision about an entry whose outcome is unknown (or still pending after a crash):
 * `applied` — the effect did happen (a retry with the same key replays `output`); `not_applied` —
 * it did not (a retry may run it again). Journaled with the operator's name.
 */
export async function resolveOutboxEntry(
  target: AnyGate | Journal,
  key: string,
  outcome: "applied" | "not_applied",
  options: ResolveOutboxOptions,
): Promise<JournalReceipt> {
  const journal: Journal = "invoke" in target ? target.journal : target;
  if (typeof options?.operator !== "string" || options.operator.trim() === "") {
    throw new ToolError("config_invalid", "resolveOutboxEntry needs the operator's name");
  }
  const entry = await journal.getIntent(key);
  if (!entry) throw new ToolError("not_found", `no outbox entry ${key}`);
  if (entry.state !== "unknown" && entry.state !== "pending") {
    throw new ToolError("conflict", `outbox entry ${key} is ${entry.state}; only unknown or pending entries are resolved by an operator`);
  }
  const at = new Date((options.clock ?? Date.now)()).toISOString();
  const intent = intentOf(entry);
  const audit = { operator: options.operator, outcome, ...(options.note ? { note: options.note } : {}) };
  if (outcome === "applied") {
    const output = options.output ?? null;
    return journal.settleIntent(key, {
      state: "completed",
      boundary: "effect_completed",
      intentHash: intent.intentHash,
      invocationId: entry.invocationId,
      at,
      result: { output, outputHash: hashCanonical(output), untrusted: false, findings: [] },
      audit,
      eventType: "outbox.resolved",
    });
  }
  return journal.settleIntent(key, {
    state: "failed",
    boundary: "effect_not_started",
    intentHash: intent.intentHash,
    invocationId: entry.invocationId,
    at,
    error: { code: "effect_state_unknown", message: `resolved by ${options.operator}: the effect did not happen` },
    audit,
    eventType: "outbox.resolved",
  });
}
