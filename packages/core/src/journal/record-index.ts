import { ToolError } from "../errors.js";
import { equalHex, macText, type AuditKey, type SealedAuditEvent } from "./audit-chain.js";
import type { JournalDriver, RowEvent, StoredRow } from "./driver.js";
import type { OwnLinks } from "./own-seals.js";
import { tampered } from "./sealed-rows.js";
import { GENESIS_MAC } from "./types.js";

/**
 * Where each authority record's (and approval request's) latest version was recorded, learned from the MACed chain rather
 * than from the audit table's unsealed `subject` column. A store finds a row's latest event through
 * that column; someone who can write the database could put an older, validly sealed record back
 * (a spent login token, a removed client, a lifted kill switch) and clear the column on the later
 * events, and the older row would pass its seal. So before a record is read, this process walks
 * the chain from where it last stopped (from genesis the first time), checking every link's MAC and
 * reading each link's subject from its MACed payload. A record read then refuses a row whose event is
 * not the latest one the verified chain names for it, and a list refuses a record the verified
 * chain names whose row is gone. Each link is read and checked once per process.
 *
 * A chain that fails (an edited, deleted or reordered link) is
 * `journal_tampered` for every later record read of this process: authority state is not trusted
 * from a journal whose chain does not hold.
 */
export interface RecordIndex {
  /** Walk the chain to its current head. */
  catchUp(): Promise<void>;
  /** Refuse a record row (kind `request`: an approval request) whose latest event, as the store found it, is not the verified one. */
  check(kind: string, id: string, row: StoredRow): void;
  /** The ids of `kind` the verified chain names, for a list to refuse the ones whose row is gone. */
  ids(kind: string): readonly string[];
  /**
   * Catch up, then run `read` (rows read outside a write transaction, each checked). Another
   * caller's walk may move the index on while the rows are read, so a row read just before its
   * newer version was walked looks restated (or a record created meanwhile looks deleted): a
   * refusal while the index moved is read again (at most 5 times); one while it stood still is
   * tampering.
   */
  verifiedRead<T>(read: () => Promise<T>): Promise<T>;
  /** A link this process appended inside a transaction (read: the driver's `changes()` then, see below). */
  appended(link: SealedAuditEvent): void;
  /** The answer verified last for this record while nothing has changed since; `UNANSWERED` otherwise. */
  answer(kind: string, id: string): unknown;
  /** A record's row read, checked and opened through `verifiedRead`, its answer kept (frozen) for `answer` when nothing changed while it ran. */
  readRecord<T>(kind: string, id: string, open: (row: StoredRow) => T): Promise<T>;
}

/** `answer` has none: read. */
export const UNANSWERED: unique symbol = Symbol("unanswered");

/**
 * On a driver with `changes()` (the memory driver), a record read is answered again from what
 * the last one verified while the counter has not moved: no catch-up, no store read, no seal
 * check. The counter moves with every transaction and every edit behind the journal, so an
 * edited, replaced or rolled-back row or link always gets the full read. This process's own
 * commits move it too; they keep the answers (except those of the records they wrote) only when
 * each number since the last verified one is a transaction of this process that appended links,
 * so nothing but those links can have changed: a transaction takes its number when it starts and
 * a rolled-back one moves it again (a gap), and so does another handle's commit or a table edit.
 */
const MAX_PENDING = 1024;

const PAGE = 1000;
// Records and approval requests (a consumed grant put back as granted would run a call again).
const isTracked = (subject: string): boolean => !subject.startsWith("entry:");

export function recordIndex(driver: JournalDriver, auditKey: AuditKey, own?: OwnLinks): RecordIndex {
  let head = { seq: 0, mac: GENESIS_MAC };
  const latest = new Map<string, Map<string, RowEvent>>();
  let broken: ToolError | undefined;
  let walking: Promise<void> | undefined;
  const changes = driver.changes?.bind(driver);
  // The counter at which the index last covered the whole chain, the answers verified at it, and
  // the links this process appended since (with the counter their transaction took).
  let at = -1;
  const answers = new Map<string, Map<string, unknown>>();
  let pending: { readonly at: number; readonly link: SealedAuditEvent }[] = [];

  const fail = (seq: number, reason: string): ToolError =>
    new ToolError("journal_tampered", `the audit chain fails at event ${seq} (${reason}); authority records are not trusted`, {
      boundary: "pre_effect_refusal",
      details: { kind: "audit", id: String(seq), problem: "index" },
    });

  // A link's subject, from its payload once its MAC and seq are checked.
  const checked = (link: SealedAuditEvent): unknown => {
    if (!equalHex(macText(auditKey, `${link.prevMac}\n${link.payload}`), link.mac)) throw (broken = fail(link.seq, "MAC mismatch"));
    let payload: { readonly seq?: unknown; readonly subject?: unknown };
    try {
      payload = JSON.parse(link.payload) as typeof payload;
    } catch {
      throw (broken = fail(link.seq, "its payload is not JSON"));
    }
    if (payload.seq !== link.seq) throw (broken = fail(link.seq, "its payload names another seq"));
    return payload.subject;
  };

  // A verified link moves the head, and becomes the latest event of the record it names.
  const learn = (link: SealedAuditEvent, subject: unknown): void => {
    head = { seq: link.seq, mac: link.mac };
    if (typeof subject !== "string" || !isTracked(subject)) return;
    const colon = subject.indexOf(":");
    const kind = subject.slice(0, colon);
    const id = subject.slice(colon + 1);
    let ids = latest.get(kind);
    if (!ids) latest.set(kind, (ids = new Map()));
    ids.set(id, { seq: link.seq, prevMac: link.prevMac });
    answers.get(kind)?.delete(id);
  };

  // The MAC is checked over the payload as stored (it is the canonical text the MAC was made
  // over), which spares re-canonicalizing every event; its seq must be the link's.
  const walk = async (): Promise<void> => {
    for (;;) {
      const now = changes?.();
      const page = await driver.readAudit({ afterSeq: head.seq, limit: PAGE });
      if (page.length === 0) return walkedTo(now);
      for (const link of page) {
        if (link.seq !== head.seq + 1 || link.prevMac !== head.mac) throw (broken = fail(link.seq, "a link is missing, inserted or moved"));
        // A link equal in every field to one this process sealed needs neither the MAC nor the parse.
        const mine = own?.take(link);
        const subject = mine !== undefined ? mine.subject : checked(link);
        learn(link, subject);
      }
    }
  };
  const walkedTo = (now: number | undefined): void => {
    if (now === undefined || now === at) return;
    at = now;
    answers.clear();
  };

  // Own links committed since `at` are taken in as the walk would take them, when they alone can
  // have changed the store: true when the answers hold at the current counter.
  const current = (): boolean => {
    if (changes === undefined || broken !== undefined || walking !== undefined) return false;
    const now = changes();
    if (now === at) return true;
    let from = 0;
    while (from < pending.length && pending[from]!.at <= at) from++;
    let next = at;
    let seq = head.seq;
    let mac = head.mac;
    for (let i = from; i < pending.length; i++) {
      const { at: tx, link } = pending[i]!;
      if ((tx !== next && tx !== next + 1) || link.seq !== seq + 1 || link.prevMac !== mac) break;
      next = tx;
      seq = link.seq;
      mac = link.mac;
    }
    if (next !== now) return ((pending = []), false);
    for (let i = from; i < pending.length && pending[i]!.link.seq <= seq; i++) {
      const link = pending[i]!.link;
      own?.take(link);
      learn(link, link.subject);
    }
    pending = [];
    at = now;
    return true;
  };

  // Callers at the same time share one walk.
  const catchUp = (): Promise<void> => (broken ? Promise.reject(broken) : (walking ??= walk().finally(() => (walking = undefined))));

  function check(kind: string, id: string, row: StoredRow): void {
    if (broken) throw broken;
    const known = latest.get(kind)?.get(id);
    const found = row.latest;
    // A link after the verified head was written since: the next walk checks it.
    if (found !== undefined && found.seq > head.seq) return;
    if (found?.seq === known?.seq && found?.prevMac === known?.prevMac) return;
    throw tampered(
      kind === "request" ? "request" : `record:${kind}`,
      id,
      row.text === undefined ? "missing" : known !== undefined && (found === undefined || found.seq < known.seq) ? "restated" : "index",
      `is not the version the audit chain last recorded (event ${known?.seq ?? "none"}; the audit table's subject column names ${found?.seq ?? "none"})`,
    );
  }

  async function verifiedRead<T>(read: () => Promise<T>): Promise<T> {
    for (let tries = 1; ; tries++) {
      await catchUp();
      const from = head.seq;
      try {
        return await read();
      } catch (error) {
        if (!ToolError.is(error, "journal_tampered") || broken || head.seq === from || tries >= 5) throw error;
      }
    }
  }

  return {
    catchUp,
    verifiedRead,
    appended(link) {
      if (changes === undefined) return;
      if (pending.length >= MAX_PENDING) pending = [];
      pending.push({ at: changes(), link });
    },
    answer(kind, id) {
      if (!current()) return UNANSWERED;
      const ids = answers.get(kind);
      return ids !== undefined && ids.has(id) ? ids.get(id) : UNANSWERED;
    },
    async readRecord(kind, id, open) {
      const now = changes?.();
      const value = await verifiedRead(() => driver.getRecord(kind, id).then((row) => (check(kind, id, row), open(row))));
      // Kept only when the walk covered the chain and the row was read with nothing changed meanwhile.
      if (now === undefined || now !== at || changes!() !== now || broken !== undefined) return value;
      let ids = answers.get(kind);
      if (!ids) answers.set(kind, (ids = new Map()));
      ids.set(id, deepFreeze(value));
      return value;
    },
    check,
    ids: (kind) => [...(latest.get(kind)?.keys() ?? [])],
  };
}

function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null && !Object.isFrozen(value)) {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}
