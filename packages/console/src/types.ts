import type { ApprovalRequest, Gate } from "@toolgate/core";
import type { Inventory } from "@toolgate/core/operator";

/**
 * What the console needs of the approval authority (`gate.authority`). Written against the shared
 * contract; the authority's own types are structurally the same.
 */
export type OperatorRole = "viewer" | "approver" | "admin";
export interface ConsoleApprover {
  readonly kind: "operator" | "client";
  readonly id: string;
  readonly name: string;
  readonly role: OperatorRole;
  readonly via: string;
}
export interface ConsoleOperator {
  readonly id: string;
  readonly name: string;
  readonly role: OperatorRole;
  readonly scope?: { readonly tools?: readonly string[]; readonly maxRisk?: string; readonly tenants?: readonly string[] };
  readonly status: string;
  readonly createdAt: string;
  readonly createdBy: string;
}
export interface ConsoleKillSwitch {
  readonly target: string;
  readonly reason: string;
  readonly by: string;
  readonly at: string;
}
export interface ConsoleAuthority {
  login(loginToken: string): Promise<{ readonly session: string; readonly approver: ConsoleApprover; readonly expiresAt: string } | undefined>;
  session(session: string): Promise<ConsoleApprover | undefined>;
  logout(session: string): Promise<void>;
  can(approver: ConsoleApprover, action: "view" | "decide" | "admin"): boolean;
  readonly operators: { list(): Promise<readonly ConsoleOperator[]> };
  readonly switches: {
    disable(target: string, reason: string, by: ConsoleApprover): Promise<unknown>;
    enable(target: string, by: ConsoleApprover): Promise<void>;
    list(): Promise<readonly ConsoleKillSwitch[]>;
  };
}
export type DecisionResult = { readonly status: "granted" } | { readonly status: "needs_another"; readonly request: ApprovalRequest };
export interface ConsoleDesk {
  list(options?: { readonly status?: readonly ApprovalRequest["status"][] }): Promise<readonly ApprovalRequest[]>;
  get(requestId: string): Promise<ApprovalRequest | undefined>;
  grant(requestId: string, options: { readonly by: ConsoleApprover; readonly ttlMs?: number }): Promise<DecisionResult | unknown>;
  deny(requestId: string, options: { readonly by: ConsoleApprover; readonly reason: string }): Promise<unknown>;
}

/** The gate the console serves: its journal, registry, approvals desk and authority. */
export type ConsoleGate = Pick<Gate, "journal" | "registry"> & { readonly approvals: ConsoleDesk; readonly authority: ConsoleAuthority };

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
  readonly gate: ConsoleGate | Gate;
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
