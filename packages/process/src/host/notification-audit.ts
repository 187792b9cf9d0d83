import { canonicalJson, scanForInjection, type Journal, type Redactor } from "@toolgate/core";
import { MAX_NOTIFICATION_CHARS, type ProcessNotification } from "./after-calls.js";
import { toolClaim } from "./untrusted-text.js";

/** The audit event a journaled notification is. */
export const NOTIFICATION_EVENT = "process.notification";

/** Where a host journals its processes' notifications: the gate's journal, and the gate's redactor. */
export interface NotificationAudit {
  readonly journal: Pick<Journal, "append">;
  /** Secrets to keep out of the journal (the gate's redactor); without it only the text's own plainness applies. */
  readonly redactor?: Pick<Redactor, "redact">;
}

/**
 * Where each notification goes once it passed its size and rate bounds: the journal (as the tool's
 * claim: its fields as canonical JSON, made plain, labelled, scanned for instructions, redacted)
 * and `onNotification`. Neither a listener's throw nor a journal's failure reaches the process.
 */
export function notificationSink(
  processName: string,
  onNotification: ((notification: ProcessNotification) => void) | undefined,
  audit: NotificationAudit | undefined,
  warn: (message: string) => void,
): ((notification: Omit<ProcessNotification, "process">) => void) | undefined {
  if (!onNotification && !audit) return undefined;
  return (notification) => {
    const full: ProcessNotification = { process: processName, ...notification };
    if (audit) journal(audit, full, warn);
    if (onNotification) onNotification(full);
  };
}

function journal(audit: NotificationAudit, notification: ProcessNotification, warn: (message: string) => void): void {
  // Plain first (removing hidden characters can join a secret's pieces), then redacted: the redactor sees what is stored.
  const claim = toolClaim(notification.process, canonicalJson(notification.fields), MAX_NOTIFICATION_CHARS);
  const findings = scanForInjection(claim.text).map((f) => ({ rule: f.rule }));
  const data = {
    process: notification.process,
    ...(notification.callId === undefined ? {} : { callId: notification.callId }),
    notification: claim,
    ...(findings.length > 0 ? { findings } : {}),
  };
  const event = { type: NOTIFICATION_EVENT, at: new Date().toISOString(), data: audit.redactor ? audit.redactor.redact(data) : data };
  Promise.resolve()
    .then(() => audit.journal.append(event))
    .catch(() => warn(`a notification from tool process ${notification.process} could not be journaled`));
}
