import { hashCanonical } from "../canonical-json.js";
import { ToolError } from "../errors.js";
import { sealLink, unsealAuditEvent, type AuditKey } from "./audit-chain.js";
import type { JournalDriver, JournalTransaction, StoredRow, TransactionReads } from "./driver.js";
import {
  claimedEntry,
  claimedEvent,
  consumedEvent,
  decidedEvent,
  expiredEvent,
  decidedRequest,
  editedEvent,
  editedRunEvent,
  intentEvent,
  joinsOpenRequest,
  requestedEvent,
  settledEntry,
  settledEvent,
  startedEntry,
} from "./events.js";
import { checkGrant } from "./grant-check.js";
import { listed, refuseDecision, refuseRequest } from "./decision-rules.js";
import { EDITED_RUN, editedRunId, editedRunOf, refuseEditedIntent, refuseUnreadable } from "./edit-rules.js";
import { badCharges, chargeReads, hasCharges, takeCharges, type CallFacts } from "./charges.js";
import { recordIndex, UNANSWERED } from "./record-index.js";
import { ownEntries, ownLinks } from "./own-seals.js";
import { isSideEffectful } from "../manifest.js";
import { JOURNAL_OPERATIONS, journalOperations } from "./operations.js";
import { claimableEntry, openEntry, openRecord, openRequest, sealEntry, sealRecord, sealRequest, subjectOf, tampered } from "./sealed-rows.js";
import {
  RECORD_KIND,
  type ApprovalRequest,
  type AuditEventInput,
  type BeginIntentResult,
  type GrantCheck,
  type GrantOutcome,
  type IntentInput,
  type Journal,
  type JournalReceipt,
  type LimitCharge,
  type OutboxEntry,
} from "./types.js";

export interface CreateJournalOptions {
  /** HMAC key for the audit chain and the rows' seals. Every handle on the same store must use the same one. */
  readonly auditKey: AuditKey;
  /**
   * Keep the output body of reads (effect `read` or `none`) in the outbox. Default false: a read
   * keeps its `outputHash` (and its findings), not its output, so mail bodies and file contents do
   * not pile up; a retry of a completed read runs it again. Side-effectful results, and held
   * output waiting for a human, always keep their body (a replay returns it).
   */
  readonly retainReadOutputs?: boolean;
}

/** A refusal whose transaction still commits (a request found expired is stored as expired). */
class CommittedRefusal {
  constructor(readonly error: ToolError) {}
}

/**
 * The journal over a driver: every rule lives here, once, so every store refuses what every other
 * refuses and writes the same chain, MAC for MAC. Each rule makes its checks before its first
 * write, so a refusal (a `ToolError` thrown inside a transaction) has written nothing.
 */
export function createJournal(driver: JournalDriver, options: CreateJournalOptions): Journal {
  const { kind } = driver;
  const { auditKey } = options;
  const retainReadOutputs = options.retainReadOutputs === true;
  let closed = false;
  // What this process sealed, so its own read-backs skip the second check (see own-seals.ts).
  const ownLinked = ownLinks();
  const ownEntered = ownEntries();
  const records = recordIndex(driver, auditKey, ownLinked);

  const failure = (cause: unknown): ToolError =>
    ToolError.is(cause) ? cause : new ToolError("journal_failed", `${kind} journal: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
  const ensureOpen = (): void => {
    if (closed) throw new ToolError("journal_failed", `the ${kind} journal is closed`);
  };

  // Both call the driver before their first await, so calls reach it in the order they were made.
  async function write<T>(reads: TransactionReads, fn: (tx: JournalTransaction) => T | CommittedRefusal): Promise<T> {
    ensureOpen();
    let value: T | CommittedRefusal;
    try {
      value = await driver.transaction(reads, fn);
    } catch (cause) {
      throw failure(cause);
    }
    if (value instanceof CommittedRefusal) throw value.error;
    return value;
  }
  async function read<T>(fn: () => Promise<T>): Promise<T> {
    ensureOpen();
    try {
      return await fn();
    } catch (cause) {
      throw failure(cause);
    }
  }

  // The subject is the journal's own (a row it records), never a caller's.
  const append = (tx: JournalTransaction, event: AuditEventInput, subject?: string): JournalReceipt => {
    const sealed = sealLink(auditKey, tx.head(), event, subject);
    tx.appendAudit(sealed);
    ownLinked.remember(sealed);
    records.appended(sealed);
    return { journal: kind, seq: sealed.seq, mac: sealed.mac, at: event.at };
  };
  // A row version and the event that records it: the row is sealed to the event's seq and the
  // link before it, and the event names the row as its subject (so it becomes the row's latest).
  const putEntry = (tx: JournalTransaction, entry: OutboxEntry, event: AuditEventInput): JournalReceipt => {
    const keep = retainReadOutputs || isSideEffectful(entry.effect) || entry.result?.heldBy !== undefined;
    const head = tx.head();
    const at = { seq: head.seq + 1, prevMac: head.mac };
    const stored = sealEntry(auditKey, entry, at, keep);
    tx.putEntry(stored);
    ownEntered.remember(entry, stored.text, at);
    return append(tx, event, subjectOf("entry", entry.key));
  };
  const putRequest = (tx: JournalTransaction, request: ApprovalRequest, event: AuditEventInput): JournalReceipt => {
    const head = tx.head();
    tx.putRequest(sealRequest(auditKey, request, { seq: head.seq + 1, prevMac: head.mac }));
    return append(tx, event, subjectOf("request", request.id));
  };
  const putRecord = (tx: JournalTransaction, kind: string, id: string, value: unknown, event: AuditEventInput): JournalReceipt => {
    const head = tx.head();
    tx.putRecord(sealRecord(auditKey, kind, id, value, { seq: head.seq + 1, prevMac: head.mac }));
    return append(tx, event, subjectOf(kind, id));
  };
  // A record is used only as the version the verified chain last recorded (see record-index.ts).
  const recordOf = (tx: JournalTransaction, kind: string, id: string): unknown => {
    const row = tx.getRecord(kind, id);
    records.check(kind, id, row);
    return openRecord(auditKey, kind, row)?.value;
  };
  // Every way a call is charged to its limits (an intent, a consumed grant, a pure call) goes
  // through here: read and check all before the first write (a refusal throws), write after.
  const charging = (tx: JournalTransaction, charges: readonly LimitCharge[] | undefined, call: CallFacts) =>
    hasCharges(charges) ? takeCharges({ read: recordOf, put: putRecord }, tx, charges, call) : NO_CHARGE;
  // The reads a call's charges add, and the chain walk their records' checks need; refused first when malformed.
  const withCharges = <T>(charges: readonly LimitCharge[] | undefined, walk: boolean, then: (reads: TransactionReads) => Promise<T>): Promise<T> => {
    if (!hasCharges(charges)) return walk ? caughtUp(() => then(NO_READS)) : then(NO_READS);
    const bad = badCharges(charges);
    if (bad) return Promise.reject(bad);
    return caughtUp(() => then({ records: chargeReads(charges) }));
  };
  const opened = (row: StoredRow) => ownEntered.opened(row) ?? openEntry(auditKey, row);
  const entryOf = (tx: JournalTransaction, key: string) => opened(tx.getEntry(key));
  // A request is used only as the version the verified chain last recorded (see record-index.ts).
  const checkedRequest = (row: StoredRow): StoredRow => (records.check("request", row.id, row), row);
  const requestOf = (tx: JournalTransaction, id: string) => openRequest(auditKey, checkedRequest(tx.getRequest(id)));
  // Writes that decide on a request walk the chain first (each link once per process).
  const caughtUp = <T>(then: () => Promise<T>): Promise<T> => read(() => records.catchUp()).then(then);
  // Checked before any write: the request, when the check may consume its grant, else why not.
  const grantFor = (tx: JournalTransaction, check: GrantCheck): { readonly request: ApprovalRequest } | Refused => {
    const request = requestOf(tx, check.requestId);
    const verdict = checkGrant(request, check);
    return "ok" in verdict ? { request: request! } : verdict;
  };
  const consume = (tx: JournalTransaction, request: ApprovalRequest, check: GrantCheck): Extract<GrantOutcome, { status: "consumed" }> => {
    const consumed: ApprovalRequest = { ...request, status: "consumed", consumedAt: check.at, consumedBy: check.invocationId };
    return { status: "consumed", request: consumed, receipt: putRequest(tx, consumed, consumedEvent(consumed, check)) };
  };
  // An intent running an approver's edit also locks (and checks) its edited-run record.
  const runOf = (intent: IntentInput) =>
    intent.edited === undefined
      ? undefined
      : { kind: EDITED_RUN, id: editedRunId(intent.toolId, intent.edited.askedInputHash, intent.principal, intent.tenant) };
  const intentReads = (intent: IntentInput, grant: GrantCheck | undefined, charged: TransactionReads): TransactionReads => {
    const run = runOf(intent);
    return {
      ...charged,
      entries: [intent.key],
      ...(grant ? { requests: [grant.requestId] } : {}),
      ...(run ? { records: [...(charged.records ?? []), run] } : {}),
    };
  };

  const journal: Journal = {
    kind,

    // A caller's event never becomes a row's latest: append gives it no subject, whatever it carries.
    append: (event) => write({}, (tx) => append(tx, event)),
    readAudit: (opts = {}) =>
      read(async () => (await driver.readAudit({ afterSeq: whole(opts.afterSeq ?? 0), limit: limitOf(opts.limit) })).map(unsealAuditEvent)),
    head: () => read(() => driver.head()),

    beginIntent: (intent, opts = {}) =>
      withCharges(opts.charges, opts.grant !== undefined, (charged) =>
        write(intentReads(intent, opts.grant, charged), (tx): BeginIntentResult => {
          const existing = entryOf(tx, intent.key);
          const retake = opts.retake;
          if (existing && !(retake && retake.attempts === existing.attempts && retake.states.includes(existing.state))) {
            return { status: "existing", entry: existing };
          }
          const charge = charging(tx, opts.charges, intent);
          const granted = opts.grant && grantFor(tx, opts.grant);
          if (granted && !("request" in granted)) return { status: "grant_refused", outcome: granted };
          // A grant of an edited request runs only its edited input, and an intent naming an edit consumes exactly that grant.
          refuseEditedIntent(intent, granted?.request);
          const run = runOf(intent);
          if (run) recordOf(tx, run.kind, run.id);
          const grantId = granted ? consume(tx, granted.request, opts.grant!).request.id : undefined;
          charge();
          if (run) putRecord(tx, run.kind, run.id, { key: intent.key, requestId: grantId, at: intent.at }, editedRunEvent(intent));
          const entry = startedEntry(intent, (existing?.attempts ?? 0) + 1, grantId);
          return { status: "started", entry, receipt: putEntry(tx, entry, intentEvent(intent, entry.attempts, grantId)) };
        }),
      ),
    settleIntent: (key, s) =>
      write({ entries: [key] }, (tx) => {
        const entry = entryOf(tx, key);
        if (!entry) throw new ToolError("journal_failed", `no intent recorded under key ${key}`);
        if (entry.intentHash !== s.intentHash) throw new ToolError("journal_failed", `settlement for ${key} is bound to another intent`);
        if (s.result && hashCanonical(s.result.output ?? null) !== s.result.outputHash)
          throw new ToolError("journal_failed", `settlement for ${key} carries an output that does not match its outputHash`);
        return putEntry(tx, settledEntry(entry, s), settledEvent(entry, key, s));
      }),
    getIntent: (key) => read(async () => opened(await driver.getEntry(key))),
    listOutbox: (opts = {}) =>
      read(async () =>
        (await driver.listEntries({ states: opts.states, limit: limitOf(opts.limit) })).map((row) =>
          listed("entry", row.id, openEntry(auditKey, row)!, (e) => e.state, opts.states),
        ),
      ),
    claimOutbox: async (opts) => {
      const updatedBeforeMs = Date.parse(opts.updatedBefore);
      if (Number.isNaN(updatedBeforeMs)) throw new TypeError(`claimOutbox: updatedBefore is not a time: ${opts.updatedBefore}`);
      const claim = { states: opts.states, updatedBeforeMs, limit: whole(opts.limit) };
      const found: { key: string; problem: string }[] = [];
      const claimed = await write({ claim }, (tx) => {
        const out: OutboxEntry[] = [];
        for (const row of tx.claimable(claim)) {
          let entry: OutboxEntry | undefined;
          try {
            entry = claimableEntry(auditKey, row, claim);
          } catch (error) {
            if (!ToolError.is(error, "journal_tampered")) throw error;
            // Never replayed, never resealed: recorded, and moved out of every later claim's reach.
            found.push({ key: row.id, problem: error.message });
            append(tx, { type: "journal.tampered", at: opts.at, data: { kind: "entry", key: row.id, problem: error.message, claimant: opts.claimant } });
          }
          // Tampered, or unknown and not to be retried (the column was edited or written by older code): out of reach, the row as found.
          if (entry === undefined) {
            tx.putEntry({ key: row.id, state: "unknown", updatedMs: Number.MAX_VALUE, text: row.text! });
            continue;
          }
          const next = claimedEntry(entry, opts.leaseUntil ?? opts.at);
          putEntry(tx, next, claimedEvent(entry, opts.claimant, next.attempts, opts.at));
          out.push(next);
        }
        return out;
      });
      for (const { key, problem } of found) opts.onTampered?.(key, problem);
      return claimed;
    },

    requestApproval: (input) =>
      caughtUp(() =>
        write({ requests: [input.id], open: [input.inputHash] }, (tx) => {
          refuseRequest(input);
          for (const r of tx.openRequests(input.inputHash).map((row) => openRequest(auditKey, checkedRequest(row))!)) {
            if (joinsOpenRequest(r, input))
              return { request: r, created: false, receipt: append(tx, requestedEvent(r, input.invocationId, false, input.createdAt)) };
          }
          if (requestOf(tx, input.id) !== undefined) throw new ToolError("journal_failed", `an approval request with id ${input.id} already exists`);
          const request: ApprovalRequest = { ...input, status: "pending" };
          return { request, created: true, receipt: putRequest(tx, request, requestedEvent(request, input.invocationId, true, input.createdAt)) };
        }),
      ),
    getApproval: (id) => read(() => records.verifiedRead(async () => openRequest(auditKey, checkedRequest(await driver.getRequest(id))))),
    listApprovals: (opts = {}) =>
      read(() =>
        records.verifiedRead(async () =>
          (await driver.listRequests({ states: opts.status, limit: limitOf(opts.limit) })).map((row) =>
            listed("request", row.id, openRequest(auditKey, checkedRequest(row))!, (r) => r.status, opts.status),
          ),
        ),
      ),
    decideApproval: (id, decision) =>
      caughtUp(() =>
        write({ requests: [id] }, (tx) => {
          const request = requestOf(tx, id);
          if (!request) throw new ToolError("approval_unknown", `no approval request ${id}`);
          if (request.status !== "pending") throw new ToolError("approval_consumed", `approval request ${id} was already ${request.status}`);
          refuseDecision(id, request, decision);
          if (Date.parse(request.expiresAt) <= Date.parse(decision.at)) {
            putRequest(tx, { ...request, status: "expired" }, expiredEvent(request, decision.at));
            return new CommittedRefusal(new ToolError("approval_expired", `approval request ${id} expired at ${request.expiresAt}`));
          }
          const decided = decidedRequest(request, decision);
          if (decision.kind === "grant" && decision.edit !== undefined) {
            refuseUnreadable(decided);
            append(tx, editedEvent(request, decided, decision));
          }
          return { request: decided, receipt: putRequest(tx, decided, decidedEvent(request, decided, decision)) };
        }),
      ),
    consumeGrant: (check, event, opts = {}) =>
      withCharges(opts.charges, true, (charged) =>
        write({ requests: [check.requestId], ...charged }, (tx) => {
          const charge = charging(tx, opts.charges, event);
          const granted = grantFor(tx, check);
          if (!("request" in granted)) return granted;
          const outcome = consume(tx, granted.request, check);
          charge();
          append(tx, event);
          return outcome;
        }),
      ),
    chargeLimits: (charges, event) =>
      hasCharges(charges) ? withCharges(charges, true, (charged) => write(charged, (tx) => charging(tx, charges, event)())) : read(async () => null),

    // Read at every call (the kill switches): answered again while nothing changed (memory), else one async step per await.
    getRecord: (kind, id) => {
      const known = closed ? UNANSWERED : records.answer(kind, id);
      if (known !== UNANSWERED) return Promise.resolve(known);
      return read(() => {
        const bad = badRecordRef(kind, id);
        if (bad) throw bad;
        return records.readRecord(kind, id, (row) => openRecord(auditKey, kind, row)?.value);
      });
    },
    listRecords: (kind) =>
      read(async () => {
        const bad = badRecordRef(kind, "-");
        if (bad) throw bad;
        return records.verifiedRead(async () => {
          const rows = await driver.listRecords(kind);
          const listed = new Set(rows.map((row) => row.id));
          // A record the verified chain names whose row is gone, its subject column cleared too.
          const gone = records.ids(kind).filter((id) => !listed.has(id));
          if (gone.length > 0)
            throw tampered(`record:${kind}`, gone[0]!, "missing", "is missing, though the audit chain recorded it (deleted outside the journal)");
          return rows.map((row) => {
            records.check(kind, row.id, row);
            const { id, value } = openRecord(auditKey, kind, row)!;
            return { id, value };
          });
        });
      }),
    // Only the journal writes an edited-run record (inside the transaction that runs the edit).
    editedRun: (toolId, askedInputHash, principal, tenant) => {
      const id = editedRunId(toolId, askedInputHash, principal, tenant);
      return read(() => records.readRecord(EDITED_RUN, id, (row) => openRecord(auditKey, EDITED_RUN, row)?.value)).then((value) =>
        value === undefined ? undefined : editedRunOf(id, value),
      );
    },
    updateRecord: (kind, id, fn) => {
      const bad = kind === EDITED_RUN ? new ToolError("config_invalid", `only the journal writes ${EDITED_RUN} records`) : badRecordRef(kind, id);
      if (bad) return Promise.reject(bad);
      return read(() => records.catchUp()).then(() =>
        write({ records: [{ kind, id }] }, (tx) => {
          const { value, event, result } = fn(recordOf(tx, kind, id));
          if (JSON.stringify(value) === undefined) throw new ToolError("journal_failed", `the new value of ${kind} record ${id} is not JSON`);
          return { result, receipt: putRecord(tx, kind, id, value, event) };
        }),
      );
    },

    async close() {
      if (closed) return;
      closed = true;
      try {
        await driver.close();
      } catch (cause) {
        throw failure(cause);
      }
    },
  };
  // Operator work (verifying every row, pruning bodies) reaches the driver through this key; an
  // enumerable own property, so stores that spread the journal into their own object keep it.
  Object.defineProperty(journal, JOURNAL_OPERATIONS, {
    value: journalOperations({ driver, auditKey, write, read, append }),
    enumerable: true,
  });
  return journal;
}

type Refused = Exclude<GrantOutcome, { readonly status: "consumed" }>;
// A call without limits allocates nothing for them.
const NO_CHARGE = (): null => null;
const NO_READS: TransactionReads = Object.freeze({});

/** A record's kind and id as every store takes them; the journal's own kinds are not records. */
function badRecordRef(kind: string, id: string): ToolError | undefined {
  if (typeof kind !== "string" || !RECORD_KIND.test(kind) || kind === "entry" || kind === "request")
    return new ToolError("config_invalid", `a record kind is lowercase letters and dashes (1-32), not entry or request: ${String(kind).slice(0, 40)}`);
  if (typeof id !== "string" || id.length === 0 || id.length > 256) return new ToolError("config_invalid", `a ${kind} record's id is 1-256 characters`);
  return undefined;
}

/** A count or position as every driver takes it: a whole number from 0 to 2^53 - 1. */
const whole = (n: number): number => (Number.isNaN(n) ? 0 : Math.min(Number.MAX_SAFE_INTEGER, Math.max(0, Math.floor(n))));
const limitOf = (limit: number | undefined): number | undefined => (limit === undefined ? undefined : whole(limit));
