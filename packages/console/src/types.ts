import type { AnyGate, Approver } from "@toolgate/core";
import type { Authority, Inventory } from "@toolgate/core/operator";

/** The gate the console serves: its journal, registry, approvals desk and authority (`gate.authority`). */
export type ConsoleGate = AnyGate;
export type ConsoleAuthority = Authority;
export type ConsoleApprover = Approver;

export interface WebhookOptions {
  /** Where each new approval request is posted (https, or http to this machine). */
  readonly url: string;
  /** Signs each body: `X-Toolgate-Signature: sha256=<hex HMAC-SHA256 of the raw body>`. */
  readonly secret: string;
  /** Attempts per delivery (default 5), the first retry after `backoffMs` (default 500), doubling. */
  readonly attempts?: number;
  readonly backoffMs?: number;
  /** Per-attempt deadline (default 5 s). */
  readonly timeoutMs?: number;
  /** Told of each delivery that failed for good (never the secret). */
  readonly onFailure?: (requestId: string, error: string) => void;
}

export interface ConsoleOptions {
  readonly gate: ConsoleGate;
  /** The capability inventory shown (default: built from the gate's registry, without profiles). */
  readonly inventory?: Inventory | (() => Inventory);
  readonly clock?: () => number;
  /** Notify a receiver of each new approval request. */
  readonly webhook?: WebhookOptions;
  /** How often the journal is read for the live queue and the webhook (default 500 ms). */
  readonly pollMs?: number;
  /** The console's own address, used in webhook links (startConsole sets it). */
  readonly baseUrl?: string;
  /** The port the Host header must name; unset: any port on 127.0.0.1 or localhost. */
  readonly port?: number;
  /** Told of a failure the console could not show a page for (never a secret). */
  readonly log?: (line: string) => void;
}
