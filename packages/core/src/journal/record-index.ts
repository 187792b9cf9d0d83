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
}

const PAGE = 1000;
// Records and approval requests (a consumed grant put back as granted would run a call again).
const isTracked = (subject: string): boolean => !subject.startsWith("entry:");

export function recordIndex(driver: JournalDriver, auditKey: AuditKey, own?: OwnLinks): RecordIndex {
  let head = { seq: 0, mac: GENESIS_MAC };
  const latest = new Map<string, Map<string, RowEvent>>();
  let broken: ToolError | undefined;
  let walking: Promise<void> | undefined;

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

  // The MAC is checked over the payload as stored (it is the canonical text the MAC was made
  // over), which spares re-canonicalizing every event; its seq must be the link's.
  const walk = async (): Promise<void> => {
    for (;;) {
      const page = await driver.readAudit({ afterSeq: head.seq, limit: PAGE });
      if (page.length === 0) return;
      for (const link of page) {
        if (link.seq !== head.seq + 1 || link.prevMac !== head.mac) throw (broken = fail(link.seq, "a link is missing, inserted or moved"));
        // A link equal in every field to one this process sealed needs neither the MAC nor the parse.
        const mine = own?.take(link);
        const subject = mine !== undefined ? mine.subject : checked(link);
        head = { seq: link.seq, mac: link.mac };
        if (typeof subject !== "string" || !isTracked(subject)) continue;
        const colon = subject.indexOf(":");
        const kind = subject.slice(0, colon);
        let ids = latest.get(kind);
        if (!ids) latest.set(kind, (ids = new Map()));
        ids.set(subject.slice(colon + 1), { seq: link.seq, prevMac: link.prevMac });
      }
    }
  };

  // Callers at the same time share one walk.
  const catchUp = (): Promise<void> => (broken ? Promise.reject(broken) : (walking ??= walk().finally(() => (walking = undefined))));

  return {
    catchUp,
    async verifiedRead(read) {
      for (let tries = 1; ; tries++) {
        await catchUp();
        const at = head.seq;
        try {
          return await read();
        } catch (error) {
          if (!ToolError.is(error, "journal_tampered") || broken || head.seq === at || tries >= 5) throw error;
        }
      }
    },
    check(kind, id, row) {
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
    },
    ids: (kind) => [...(latest.get(kind)?.keys() ?? [])],
  };
}
