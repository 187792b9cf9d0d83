import type { JournalTransaction, StoredRequest, TransactionReads } from "@toolgate/core/store-kit";

/**
 * One committed batch, timed on the client: every writer waits for the audit head row lock, so
 * the time a batch holds it bounds the whole fleet's rate. Milliseconds.
 */
export interface PostgresBatchTiming {
  /** Calls the batch held. */
  readonly calls: number;
  /** Transactions it took (more than one after a deadlock or serialization retry). */
  readonly attempts: number;
  /** From asking for the lock to holding it (the server's clock): the wait for other writers plus half a round trip. */
  readonly lockMs: number;
  /** Holding the lock: reading the declared rows (sent with the lock), until they are back here. */
  readonly fetchMs: number;
  /** Holding the lock: running the calls in this process (sealing rows and events). */
  readonly runMs: number;
  /** Holding the lock: writing the batch and committing it (the commit waits for its fsync). */
  readonly commitMs: number;
}

export interface QueuedOp {
  readonly reads: TransactionReads;
  readonly run: (tx: JournalTransaction) => unknown;
  readonly resolve: (value: unknown) => void;
  readonly reject: (reason: unknown) => void;
}

/** A row of the batch's read (see `fetch` in sql.ts). */
export interface FetchedRow {
  readonly kind: string;
  readonly id: string;
  readonly body: string | null;
  readonly status: StoredRequest["status"];
  readonly input_hash: string;
  readonly seq: string | null;
  readonly prev_mac: string | null;
}
