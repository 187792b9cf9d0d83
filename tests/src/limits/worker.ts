// A worker process of the cross-worker limits test (run from its TypeScript sources by the
// adapters' loader). It reads its orders as one JSON line on stdin (secrets never go on the command
// line), opens the shared journal, builds its own gate, says "ready", waits for "go", then sends
// mail with `inFlight` calls at a time until one is refused, says "looped", waits for "late" (every
// worker's loop has ended), makes `after` more calls one by one, and prints what happened as one
// JSON line.
import { createInterface } from "node:readline";
import type { InvokeResult, Journal } from "@toolgate/core";
import { openSqliteJournal } from "@toolgate/store-sqlite";
import { connectPostgresJournal } from "@toolgate/store-postgres";
import { AGENT, mailGate, sendInput, type GoogleLink } from "./fixtures/mail-gate.js";

export interface WorkerOrders {
  readonly name: string;
  readonly journal: { readonly sqlite: string } | { readonly postgres: string; readonly schema: string };
  readonly auditKeyHex: string;
  readonly google: GoogleLink;
  readonly inFlight: number;
  readonly after: number;
  /** Stop starting calls after this many, refused or not (a gate that never refuses must not hang the test). */
  readonly cap: number;
}

/** One call as the worker saw it: refused when asked (`ask`), or after its grant (`granted`); `after` calls come once the loop stopped. */
export interface Outcome {
  readonly n: number;
  readonly phase: "ask" | "granted";
  readonly late: boolean;
  readonly status: InvokeResult["status"];
  readonly code?: string;
  readonly message?: string;
  readonly retryAfterMs?: number;
  readonly details?: Record<string, unknown>;
}

export interface WorkerReport {
  readonly name: string;
  readonly maxInFlight: number;
  readonly outcomes: readonly Outcome[];
}

const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
const orders = JSON.parse(String((await lines.next()).value)) as WorkerOrders;
const auditKey = Buffer.from(orders.auditKeyHex, "hex");
const journal: Journal =
  "sqlite" in orders.journal
    ? await openSqliteJournal(orders.journal.sqlite, { auditKey })
    : await connectPostgresJournal(orders.journal.postgres, { auditKey, schema: orders.journal.schema });
const gate = await mailGate(journal, orders.google);

function outcomeOf(n: number, phase: Outcome["phase"], late: boolean, result: InvokeResult): Outcome {
  if (result.status === "ok" || result.status === "approval_required") return { n, phase, late, status: result.status };
  const retryAfterMs = result.status === "denied" ? result.retryAfterMs : undefined;
  return {
    n,
    phase,
    late,
    status: result.status,
    code: result.code,
    message: result.message,
    ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
    ...(result.details === undefined ? {} : { details: result.details }),
  };
}

/** One send as an agent with a human approving every preview makes it: ask, grant as the owner, send with the grant. */
async function send(n: number, late: boolean): Promise<Outcome> {
  const input = sendInput(orders.name, n);
  const asked = await gate.invoke("gmail.send_message", input, AGENT);
  if (asked.status !== "approval_required") return outcomeOf(n, "ask", late, asked);
  const decided = await gate.approvals.grant(asked.requestId, { by: gate.authority.owner() });
  if (decided.status !== "granted") throw new Error(`request ${asked.requestId} was not granted`);
  return outcomeOf(n, "granted", late, await gate.invoke("gmail.send_message", input, { ...AGENT, approval: decided.grant }));
}

process.stdout.write("ready\n");
await lines.next();

const outcomes: Outcome[] = [];
let next = 0;
let inFlight = 0;
let maxInFlight = 0;
let refused = false;
async function lane(): Promise<void> {
  while (!refused && next < orders.cap) {
    const n = next++;
    maxInFlight = Math.max(maxInFlight, ++inFlight);
    const outcome = await send(n, false).finally(() => inFlight--);
    outcomes.push(outcome);
    if (outcome.status !== "ok") refused = true;
  }
}
await Promise.all(Array.from({ length: orders.inFlight }, lane));
// The late calls wait for every worker's loop to end: until then another worker's call may hold a
// first look it passed, so the budget is not yet spent everywhere.
process.stdout.write("looped\n");
await lines.next();
for (let i = 0; i < orders.after; i++) outcomes.push(await send(next++, true));

await journal.close();
const report: WorkerReport = { name: orders.name, maxInFlight, outcomes };
process.stdout.write(`${JSON.stringify(report)}\n`);
process.exit(0);
