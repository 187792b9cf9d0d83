import type { DispatchNotification } from "../protocol/messages.js";

/** Call ids remembered after they end, so a late frame for one is told apart from a frame for an id never issued. */
export const ENDED_CALLS_KEPT = 4096;

/** The ids of the last `limit` calls that ended, oldest forgotten first. */
export class EndedCalls {
  private readonly ids = new Set<string>();

  constructor(private readonly limit = ENDED_CALLS_KEPT) {}

  add(callId: string): void {
    this.ids.delete(callId);
    this.ids.add(callId);
    if (this.ids.size > this.limit) this.ids.delete(this.ids.values().next().value!);
  }

  has(callId: string): boolean {
    return this.ids.has(callId);
  }
}

/** Largest notification delivered, as compact JSON (UTF-16 code units); larger ones are dropped and logged. */
export const MAX_NOTIFICATION_CHARS = 64 * 1024;
/** Notifications delivered per second per process; the rest of that second's are dropped and counted in one log line. */
export const MAX_NOTIFICATIONS_PER_SECOND = 20;

/** A `DispatchNotification` a tool process sent, as the host delivers it. Every field is the tool's claim. */
export interface ProcessNotification {
  readonly process: string;
  /** The call it names, when it named one the host issued to this process. */
  readonly callId?: string;
  /** The frame's fields other than `type` and `call_id`: plain JSON, unverified. */
  readonly fields: Readonly<Record<string, unknown>>;
}

/**
 * Size and rate bounds for one process's notifications, then delivery. Never throws: a listener's
 * failure is the listener's. `knownCall` tells whether a `call_id` names a call the host issued.
 */
export class NotificationGate {
  private windowStart = 0;
  private inWindow = 0;
  private dropped = 0;

  constructor(
    private readonly deliver: ((notification: Omit<ProcessNotification, "process">) => void) | undefined,
    private readonly log: (level: "debug" | "warn", message: string) => void,
    private readonly now: () => number = Date.now,
  ) {}

  receive(frame: DispatchNotification, knownCall: (callId: string) => boolean): void {
    const time = this.now();
    if (time - this.windowStart >= 1000) {
      if (this.dropped > 0) this.log("warn", `dropped ${this.dropped} notification(s) over the rate of ${MAX_NOTIFICATIONS_PER_SECOND} a second`);
      this.windowStart = time;
      this.inWindow = 0;
      this.dropped = 0;
    }
    if (++this.inWindow > MAX_NOTIFICATIONS_PER_SECOND) {
      this.dropped++;
      return;
    }
    const { type: _type, call_id: callId, ...fields } = frame;
    const size = JSON.stringify(fields).length;
    if (size > MAX_NOTIFICATION_CHARS) return this.log("warn", `dropped a notification of ${size} characters (at most ${MAX_NOTIFICATION_CHARS})`);
    if (!this.deliver) return this.log("debug", "a notification arrived and there is no onNotification to take it");
    const known = callId !== undefined && knownCall(callId);
    try {
      this.deliver({ ...(known ? { callId } : {}), fields });
    } catch {
      // the listener's failure, not the tool's
    }
  }
}
