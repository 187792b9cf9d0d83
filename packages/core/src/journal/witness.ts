import { createHmac, timingSafeEqual } from "node:crypto";
import { open, readFile, type FileHandle } from "node:fs/promises";
import { ToolError } from "../errors.js";
import type { AuditKey } from "./audit-chain.js";
import { GENESIS_MAC, type Journal, type JournalReceipt } from "./types.js";

/** One event of a chain named by its sequence number and MAC: a head an operator recorded. */
export interface PinnedHead {
  readonly seq: number;
  readonly mac: string;
}

/** A line of a witness file: an event of the chain, when it was seen, signed with the audit key. */
export interface WitnessCheckpoint extends PinnedHead {
  readonly at: string;
  readonly sig: string;
}

export interface WitnessOptions {
  /** The witness file: append-only, placed where whoever can edit the journal cannot. */
  readonly file: string;
  /** The journal's audit key; checkpoints are signed with a key derived from it. */
  readonly key: AuditKey;
  /** Write a checkpoint once this many new events were seen; default 100. */
  readonly everyEvents?: number;
  /** …or at the first new event this long after the last checkpoint; default 60 000 ms. */
  readonly everyMs?: number;
  readonly clock?: () => Date;
  /** Told when a checkpoint could not be written; the journal goes on, `close()` then rejects. */
  readonly onError?: (error: ToolError) => void;
}

/** A journal that leaves checkpoints of its chain in a witness file. */
export interface WitnessedJournal extends Journal {
  /** Write a checkpoint of the newest event now (when newer than the last) and wait until it is durable. */
  checkpoint(): Promise<WitnessCheckpoint | undefined>;
}

const HEX64 = /^[0-9a-f]{64}$/;

// A key of its own for checkpoints, so a checkpoint's signature can never stand for an audit MAC.
function witnessKey(key: AuditKey): Buffer {
  return createHmac("sha256", typeof key === "string" ? Buffer.from(key, "utf8") : Buffer.from(key))
    .update("toolgate witness checkpoint v1")
    .digest();
}

function signCheckpoint(key: Buffer, seq: number, mac: string, at: string): string {
  return createHmac("sha256", key).update(`${seq}\n${mac}\n${at}`).digest("hex");
}

/**
 * Wrap a journal so that, every `everyEvents` events or `everyMs`, the newest event it committed
 * (from the receipts the journal returns) is appended to `file` as one signed JSON line, opened
 * O_APPEND and fsynced per line; `close()` writes a last checkpoint of the head. The journal
 * itself is unchanged: every call is passed through.
 */
export function withWitness(journal: Journal, options: WitnessOptions): WitnessedJournal {
  const everyEvents = options.everyEvents ?? 100;
  const everyMs = options.everyMs ?? 60_000;
  if (!Number.isSafeInteger(everyEvents) || everyEvents < 1) throw new ToolError("config_invalid", "witness everyEvents must be a positive integer");
  if (!Number.isFinite(everyMs) || everyMs < 0) throw new ToolError("config_invalid", "witness everyMs must be a non-negative number of milliseconds");
  const clock = options.clock ?? (() => new Date());
  const key = witnessKey(options.key);
  let newest: PinnedHead = { seq: 0, mac: GENESIS_MAC };
  let written = 0;
  let unwritten = 0;
  let lastAt = clock().getTime();
  let handle: Promise<FileHandle> | undefined;
  let queue: Promise<unknown> = Promise.resolve();
  let failure: ToolError | undefined;
  let closed = false;

  const write = async ({ seq, mac }: PinnedHead): Promise<WitnessCheckpoint | undefined> => {
    if (seq <= written) return undefined;
    const at = clock().toISOString();
    const checkpoint: WitnessCheckpoint = { seq, mac, at, sig: signCheckpoint(key, seq, mac, at) };
    try {
      handle ??= open(options.file, "a", 0o600);
      const file = await handle;
      await file.write(`${JSON.stringify({ v: 1, ...checkpoint })}\n`);
      await file.sync();
    } catch (cause) {
      const error = new ToolError(
        "journal_failed",
        `the witness file ${options.file} could not be written (${(cause as NodeJS.ErrnoException).code ?? "error"})`,
        { cause },
      );
      failure ??= error;
      options.onError?.(error);
      return undefined;
    }
    written = Math.max(written, seq);
    return checkpoint;
  };
  // At most one checkpoint waits behind the one being written; a later one due meanwhile joins it
  // (for the newest event), so a burst faster than the disk costs no more than two writes.
  let waiting: { target: PinnedHead; done: Promise<WitnessCheckpoint | undefined> } | undefined;
  const enqueue = (): Promise<WitnessCheckpoint | undefined> => {
    unwritten = 0;
    lastAt = clock().getTime();
    if (waiting) {
      waiting.target = newest;
      return waiting.done;
    }
    const next: { target: PinnedHead; done: Promise<WitnessCheckpoint | undefined> } = { target: newest, done: Promise.resolve(undefined) };
    next.done = queue.then(() => {
      waiting = undefined;
      return write(next.target);
    });
    waiting = next;
    queue = next.done;
    return next.done;
  };
  const seen = (receipt: PinnedHead | undefined): void => {
    if (!receipt || receipt.seq <= newest.seq) return;
    newest = { seq: receipt.seq, mac: receipt.mac };
    unwritten++;
    if (unwritten >= everyEvents || clock().getTime() - lastAt >= everyMs) void enqueue();
  };
  const passReceipt = async (pending: Promise<JournalReceipt>): Promise<JournalReceipt> => {
    const receipt = await pending;
    seen(receipt);
    return receipt;
  };

  const witnessed: WitnessedJournal = {
    kind: journal.kind,
    append: (event) => passReceipt(journal.append(event)),
    readAudit: (o) => journal.readAudit(o),
    head: () => journal.head(),
    async beginIntent(intent, o) {
      const result = await journal.beginIntent(intent, o);
      if (result.status === "started") seen(result.receipt);
      return result;
    },
    settleIntent: (k, settlement) => passReceipt(journal.settleIntent(k, settlement)),
    getIntent: (k) => journal.getIntent(k),
    listOutbox: (o) => journal.listOutbox(o),
    async claimOutbox(o) {
      const claimed = await journal.claimOutbox(o);
      if (claimed.length > 0) seen(await journal.head());
      return claimed;
    },
    async requestApproval(request) {
      const result = await journal.requestApproval(request);
      seen(result.receipt);
      return result;
    },
    getApproval: (id) => journal.getApproval(id),
    editedRun: (...binding) => journal.editedRun(...binding),
    listApprovals: (o) => journal.listApprovals(o),
    async decideApproval(id, decision) {
      const result = await journal.decideApproval(id, decision);
      seen(result.receipt);
      return result;
    },
    async consumeGrant(grant, audit, o) {
      const outcome = await journal.consumeGrant(grant, audit, o);
      if (outcome.status === "consumed") seen(outcome.receipt);
      return outcome;
    },
    async chargeLimits(charges, audit) {
      const receipt = await journal.chargeLimits(charges, audit);
      if (receipt) seen(receipt);
      return receipt;
    },
    getRecord: (kind, id) => journal.getRecord(kind, id),
    listRecords: (kind) => journal.listRecords(kind),
    async updateRecord(kind, id, fn) {
      const result = await journal.updateRecord(kind, id, fn);
      seen(result.receipt);
      return result;
    },
    async checkpoint() {
      seen(await journal.head());
      return enqueue();
    },
    async close() {
      if (closed) return journal.close();
      closed = true;
      try {
        if (newest.seq > 0) {
          // Whatever this process (or another on the same store) committed since the last one.
          seen(await journal.head());
          await enqueue();
        }
        await queue;
        if (handle) await (await handle.catch(() => undefined))?.close();
      } finally {
        await journal.close();
      }
      if (failure) throw failure;
    },
  };
  // What a store hangs on its journal under a symbol (the engine's operator work: verifying rows,
  // pruning) stays reachable through the wrapper.
  for (const symbol of Object.getOwnPropertySymbols(journal))
    Object.defineProperty(witnessed, symbol, { value: (journal as unknown as Record<symbol, unknown>)[symbol] });
  return witnessed;
}

/** A witness file read back: its checkpoints, or the first line that is not a signed one. */
export type WitnessReading =
  { readonly ok: true; readonly checkpoints: readonly WitnessCheckpoint[] } | { readonly ok: false; readonly line: number; readonly reason: string };

/** Parse and authenticate every line of a witness file with the audit key. */
export function parseWitness(text: string, auditKey: AuditKey): WitnessReading {
  const key = witnessKey(auditKey);
  const checkpoints: WitnessCheckpoint[] = [];
  const lines = text.split("\n");
  if (lines[lines.length - 1] === "") lines.pop();
  for (const [index, line] of lines.entries()) {
    const bad = (reason: string): WitnessReading => ({ ok: false, line: index + 1, reason });
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      return bad("not JSON (a torn write or an edit)");
    }
    const { v, seq, mac, at, sig } = (value ?? {}) as Record<string, unknown>;
    if (
      v !== 1 ||
      !Number.isSafeInteger(seq) ||
      (seq as number) < 1 ||
      typeof mac !== "string" ||
      !HEX64.test(mac) ||
      typeof at !== "string" ||
      typeof sig !== "string"
    )
      return bad("not a witness checkpoint");
    if (!equalHex(signCheckpoint(key, seq as number, mac, at), sig)) return bad("signature does not match (written without the audit key, or edited)");
    checkpoints.push({ seq: seq as number, mac, at, sig });
  }
  return { ok: true, checkpoints };
}

/** Read a witness file (see `parseWitness`); a missing or unreadable file is `config_invalid`. */
export async function readWitness(file: string, auditKey: AuditKey): Promise<WitnessReading> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (cause) {
    throw new ToolError("config_invalid", `the witness file ${file} could not be read (${(cause as NodeJS.ErrnoException).code ?? "error"})`, { cause });
  }
  return parseWitness(text, auditKey);
}

export type PinnedHeadsVerdict =
  | { readonly ok: true; readonly checked: number; readonly last: PinnedHead | undefined; readonly following: number }
  | { readonly ok: false; readonly seq: number; readonly reason: string };

/**
 * Check heads recorded elsewhere (an operator's log, a witness file) against a chain that
 * `verifyAuditChain` accepted from its first event: each must be in it, at its seq, with its MAC.
 * A chain that ends before a pinned head lost its tail; a different MAC there means the chain up
 * to that event was rewritten (with the key: without it, the chain does not verify at all).
 * `following` is how many events come after the newest pinned head.
 */
export function checkPinnedHeads(chain: readonly PinnedHead[], pins: Iterable<PinnedHead>): PinnedHeadsVerdict {
  const end = chain.length === 0 ? 0 : chain[chain.length - 1]!.seq;
  if (chain.length > 0 && (chain[0]!.seq !== 1 || end !== chain.length))
    throw new ToolError("config_invalid", "checkPinnedHeads needs the whole chain from its first event, as verifyAuditChain accepted it");
  let last: PinnedHead | undefined;
  let checked = 0;
  for (const pin of pins) {
    if (!Number.isSafeInteger(pin.seq) || pin.seq < 0)
      return { ok: false, seq: 0, reason: `a pinned head's sequence number must be an integer from 0, not ${pin.seq}` };
    if (pin.seq > end) return { ok: false, seq: pin.seq, reason: `the chain ends at #${end}, before #${pin.seq} (events were cut off the end)` };
    const mac = pin.seq === 0 ? GENESIS_MAC : chain[pin.seq - 1]!.mac;
    if (!equalHex(mac, pin.mac.toLowerCase()))
      return {
        ok: false,
        seq: pin.seq,
        reason: `event #${pin.seq} has MAC ${mac.slice(0, 16)}…, not ${pin.mac.slice(0, 16)}… (the chain up to it was rewritten)`,
      };
    checked++;
    if (!last || pin.seq > last.seq) last = pin;
  }
  return { ok: true, checked, last, following: last ? end - last.seq : end };
}

function equalHex(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  return timingSafeEqual(Buffer.from(a, "utf8"), Buffer.from(b, "utf8"));
}
