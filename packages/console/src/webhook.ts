import { createHmac, randomUUID } from "node:crypto";
import { ToolError, type ApprovalRequest } from "@toolgate/core";
import type { WebhookOptions } from "./types.js";

/** The body of an `approval.requested` notification: ids and the one-line summary, never the preview's details or body. */
export interface ApprovalRequestedEvent {
  readonly type: "approval.requested";
  readonly requestId: string;
  readonly toolId: string;
  readonly summary: string;
  readonly expiresAt: string;
  readonly consoleUrl: string;
  readonly sentAt: string;
}

/** `sha256=<hex>`: the HMAC-SHA256 of the raw body under the shared secret. */
export function signWebhookBody(secret: string, body: string): string {
  return `sha256=${createHmac("sha256", secret).update(body, "utf8").digest("hex")}`;
}

export interface WebhookSender {
  /** Queue a notification; returns at once (delivery and its retries run in the background). */
  notify(request: ApprovalRequest): void;
  /** Wait for queued deliveries to finish (tests, shutdown); aborts retries still waiting when `abort`. */
  drain(abort?: boolean): Promise<void>;
}

export function createWebhookSender(options: WebhookOptions, consoleUrl: (requestId: string) => string, clock: () => number): WebhookSender {
  if (typeof options.url !== "string" || !URL.canParse(options.url) || !/^https?:$/.test(new URL(options.url).protocol))
    throw new ToolError("config_invalid", "the webhook URL must be http(s)");
  if (typeof options.secret !== "string" || options.secret.length < 16)
    throw new ToolError("config_invalid", "the webhook secret must be at least 16 characters");
  const attempts = Math.max(1, options.attempts ?? 5);
  const backoffMs = options.backoffMs ?? 500;
  const timeoutMs = options.timeoutMs ?? 5000;
  const inFlight = new Set<Promise<void>>();
  const stop = new AbortController();

  const wait = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      stop.signal.addEventListener("abort", () => (clearTimeout(timer), resolve()), { once: true });
    });

  const deliver = async (request: ApprovalRequest) => {
    const event: ApprovalRequestedEvent = {
      type: "approval.requested",
      requestId: request.id,
      toolId: request.toolId,
      summary: request.preview.summary,
      expiresAt: request.expiresAt,
      consoleUrl: consoleUrl(request.id),
      sentAt: new Date(clock()).toISOString(),
    };
    const body = JSON.stringify(event);
    const headers = {
      "content-type": "application/json",
      "x-toolgate-event": event.type,
      "x-toolgate-delivery": randomUUID(),
      "x-toolgate-signature": signWebhookBody(options.secret, body),
    };
    let last = "";
    for (let attempt = 1; attempt <= attempts && !stop.signal.aborted; attempt++) {
      try {
        const response = await fetch(options.url, { method: "POST", headers, body, redirect: "manual", signal: AbortSignal.timeout(timeoutMs) });
        await response.body?.cancel();
        if (response.ok) return;
        last = `HTTP ${response.status}`;
      } catch (error) {
        last = error instanceof Error ? error.name : "failed";
      }
      if (attempt < attempts) await wait(backoffMs * 2 ** (attempt - 1));
    }
    options.onFailure?.(request.id, last);
  };

  return {
    notify(request) {
      const delivery = deliver(request).catch(() => undefined);
      inFlight.add(delivery);
      void delivery.finally(() => inFlight.delete(delivery));
    },
    async drain(abort = false) {
      if (abort) stop.abort();
      while (inFlight.size > 0) await Promise.all([...inFlight]);
    },
  };
}
