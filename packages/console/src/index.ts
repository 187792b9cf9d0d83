/**
 * @toolgate/console — the operator console: approvals with their concrete previews, inventory,
 * audit (filter, verify, export), outbox, kill switch and operators, served on 127.0.0.1 with
 * sessions from the approval authority, CSRF tokens on every change and a strict CSP.
 */
export { createConsoleApp } from "./app.js";
export type { ConsoleApp } from "./app.js";
export { startConsole } from "./server.js";
export type { RunningConsole, StartConsoleOptions } from "./server.js";
export { signWebhookBody } from "./webhook.js";
export type { ApprovalRequestedEvent } from "./webhook.js";
export { CSP } from "./security.js";
export type { ConsoleOptions, ConsoleGate, ConsoleAuthority, ConsoleApprover, WebhookOptions } from "./types.js";
