import type { ApprovalRequest } from "@toolgate/core";
import type { ApprovalDesk } from "@toolgate/core";

export interface QueueChange {
  readonly pending: readonly string[];
  /** Requests seen for the first time by this console. */
  readonly added: readonly ApprovalRequest[];
}

/**
 * Reads the pending approvals from the journal every `pollMs` (other workers write it) while anyone
 * listens: the live page's event streams and the webhook. Tells each listener when the pending set,
 * a request's approvals or its edit version change; a failed read is tried again next tick.
 */
export interface QueueWatcher {
  subscribe(listener: (change: QueueChange) => void): () => void;
  /** The current signature of the queue (what listeners were last told). */
  readonly signature: string;
  close(): void;
}

export function watchQueue(desk: Pick<ApprovalDesk, "list">, pollMs: number, onError: (error: unknown) => void): QueueWatcher {
  const listeners = new Set<(change: QueueChange) => void>();
  // The pending ids of the last read: a request leaves "pending" for good, so this never grows past the queue.
  let seen = new Set<string>();
  let signature = "";
  let timer: NodeJS.Timeout | undefined;
  let running = false;
  let closed = false;

  const tick = async () => {
    if (running) return;
    running = true;
    try {
      const pending = await desk.list({ status: ["pending"] });
      const next = pending
        .map((r) => `${r.id}:${r.approvals?.length ?? 0}:${r.edit?.version ?? 0}`)
        .sort()
        .join(",");
      const added = pending.filter((r) => !seen.has(r.id));
      seen = new Set(pending.map((r) => r.id));
      if (next !== signature || added.length > 0) {
        signature = next;
        const change = { pending: pending.map((r) => r.id), added };
        for (const listener of [...listeners]) listener(change);
      }
    } catch (error) {
      onError(error);
    } finally {
      running = false;
    }
  };
  const start = () => {
    if (timer || closed) return;
    timer = setInterval(() => void tick(), pollMs);
    timer.unref();
    void tick();
  };
  const stop = () => {
    if (timer) clearInterval(timer);
    timer = undefined;
  };
  return {
    subscribe(listener) {
      listeners.add(listener);
      start();
      return () => {
        listeners.delete(listener);
        if (listeners.size === 0) stop();
      };
    },
    get signature() {
      return signature;
    },
    close() {
      closed = true;
      stop();
      listeners.clear();
    },
  };
}
