import type pg from "pg";
import type { RowEvent, StoredRow } from "@toolgate/core/store-kit";

/** A row with its subject's latest audit link, as the driver's queries select it. */
export interface RowResult {
  readonly id: string;
  readonly text: string | null;
  readonly seq: string | null;
  readonly prev_mac: string | null;
}

export const latestOf = (r: { seq: string | null; prev_mac: string | null }): RowEvent | undefined =>
  r.seq === null ? undefined : { seq: Number(r.seq), prevMac: r.prev_mac! };
export const rowOf = (r: RowResult): StoredRow => ({ id: r.id, text: r.text ?? undefined, latest: latestOf(r) });

type Read = <R extends pg.QueryResultRow, T>(text: string, values: unknown[], pick: (rows: R[]) => T) => Promise<T>;

interface Asked {
  readonly kind: string;
  readonly id: string;
  readonly waiting: { resolve: (row: StoredRow) => void; reject: (reason: unknown) => void }[];
}

/**
 * Reads of single records made in the same turn of the event loop share one query (every call
 * reads its tool's and its family's kill switch): each caller gets its row as the database held
 * it when that query ran, after the caller asked, as if it had asked alone. Callers asking for the
 * same record in that turn share its row (each gets its own copy). `text` takes the kinds and the
 * ids as two arrays and returns one row per pair, in order.
 */
export function pointReads(read: Read, text: string): { get(kind: string, id: string): Promise<StoredRow> } {
  let asked: Map<string, Asked> | undefined;
  const run = (): void => {
    const batch = [...asked!.values()];
    asked = undefined;
    read(text, [batch.map((b) => b.kind), batch.map((b) => b.id)], (rows: RowResult[]) => rows.map(rowOf))
      .then((rows) => {
        if (rows.length !== batch.length) throw new Error(`asked for ${batch.length} records, read ${rows.length} rows`);
        batch.forEach((b, i) => b.waiting.forEach((w) => w.resolve({ ...rows[i]! })));
      })
      .catch((reason: unknown) => batch.forEach((b) => b.waiting.forEach((w) => w.reject(reason))));
  };
  return {
    get: (kind, id) =>
      new Promise((resolve, reject) => {
        if (asked === undefined) {
          asked = new Map();
          setImmediate(run);
        }
        const key = JSON.stringify([kind, id]);
        const entry = asked.get(key) ?? { kind, id, waiting: [] };
        entry.waiting.push({ resolve, reject });
        asked.set(key, entry);
      }),
  };
}
