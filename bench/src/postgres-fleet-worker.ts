// One worker of the PostgreSQL fleet load (see postgres-fleet.ts): its own gate and journal on the
// shared schema, a side-effectful tool with 32 calls in flight for a fixed time, and now and then
// an intent written without its effect or settlement, as a worker that crashed would leave it.
// Reads its orders from argv, waits for "go" on stdin, and prints one JSON report on stdout.
import { createInterface } from "node:readline";
import { createGate, createToolRegistry, defineFamily, defineProfile, ToolError } from "@toolgate/core";
import { connectPostgresJournal } from "@toolgate/store-postgres";
import { appendLineTool } from "./append-line-tool.js";

/** What a worker prints when its time is up. */
export interface FleetWorkerReport {
  readonly worker: string;
  readonly calls: number;
  readonly seconds: number;
  /** Refused or failed calls by code. */
  readonly failures: Readonly<Record<string, number>>;
  /** The idempotency key of every effect this worker ran (warm-up included), once per run. */
  readonly effects: readonly string[];
  /** Keys of intents written as a crashed worker leaves them: never run, never settled. */
  readonly crashed: readonly string[];
  /** Batches the journal committed while measuring, the calls they held, and their summed timings (ms). */
  readonly batches: number;
  readonly batchedCalls: number;
  readonly timing: { lockMs: number; fetchMs: number; runMs: number; commitMs: number };
  /** CPU this process used while measuring (user + system, every thread), µs. */
  readonly cpuMicros: number;
}

const IN_FLIGHT = 32;
/** Warm-up, sequential, bounded by count and by time. */
const WARMUP_CALLS = 100;
const WARMUP_MS = 500;
/** One crashed intent per this many calls. */
const CRASH_EVERY = 50;

const [url, schema, keyHex, worker, measureText] = process.argv.slice(2);
if (!url || !schema || !keyHex || !worker || !measureText) throw new Error("usage: postgres-fleet-worker URL SCHEMA KEY_HEX WORKER MEASURE_MS");
const measureMs = Number(measureText);

let batches = 0;
let batchedCalls = 0;
const timing = { lockMs: 0, fetchMs: 0, runMs: 0, commitMs: 0 };
const journal = await connectPostgresJournal(url, {
  auditKey: Buffer.from(keyHex, "hex"),
  schema,
  poolSize: 4,
  onBatch: (b) => {
    batches++;
    batchedCalls += b.calls;
    timing.lockMs += b.lockMs;
    timing.fetchMs += b.fetchMs;
    timing.runMs += b.runMs;
    timing.commitMs += b.commitMs;
  },
});
const effects: string[] = [];
// The effect: its key is recorded, so the fleet can count any effect that ran twice.
const appendLine = appendLineTool("fleet", (_args, ctx) => ({ length: effects.push(ctx.idempotencyKey) }));
const registry = createToolRegistry({ families: [defineFamily({ name: "fleet", tools: [appendLine], permissions: ["fleet:write"] })] });
const gate = createGate({ registry, journal, secrets: ["fleet-secret-value"] });
const call = { principal: `agent-${worker}`, tenant: "fleet", profile: defineProfile({ name: "fleet", allow: ["fleet:write"], maxRisk: "low" }) };

const failures: Record<string, number> = {};
const crashed: string[] = [];
let n = 0;
const one = async (): Promise<boolean> => {
  const i = n++;
  if (i % CRASH_EVERY === CRASH_EVERY - 1) {
    const key = `crash-${worker}-${i}`;
    const at = new Date().toISOString();
    const intent = { key, invocationId: `inv_${key}`, toolId: appendLine.id, principal: call.principal, tenant: call.tenant };
    const facts = { inputHash: "0".repeat(64), input: { n: i }, inputRedacted: false, effect: "write", idempotent: false, target: undefined };
    const started = await journal.beginIntent({ ...intent, ...facts, effect: "write", intentHash: "1".repeat(64), at });
    if (started.status === "started") crashed.push(key);
  }
  const result = await gate.invoke(appendLine.id, { line: "a governed side effect", n: i }, call);
  if (result.status === "ok") return true;
  const code = "code" in result ? result.code : result.status;
  failures[code] = (failures[code] ?? 0) + 1;
  return false;
};

const warmUntil = Date.now() + WARMUP_MS;
for (let i = 0; i < WARMUP_CALLS && Date.now() < warmUntil; i++) await one();
batches = 0;
batchedCalls = 0;
for (const k of Object.keys(timing) as (keyof typeof timing)[]) timing[k] = 0;
process.stdout.write("ready\n");
await new Promise<void>((resolve) => createInterface({ input: process.stdin }).once("line", () => resolve()));

let calls = 0;
const cpu = process.cpuUsage();
const start = process.hrtime.bigint();
const deadline = start + BigInt(measureMs) * 1_000_000n;
await Promise.all(
  Array.from({ length: IN_FLIGHT }, async () => {
    while (process.hrtime.bigint() < deadline) if (await one()) calls++;
  }),
);
const seconds = Number(process.hrtime.bigint() - start) / 1e9;
const used = process.cpuUsage(cpu);
await journal.close().catch((cause: unknown) => {
  failures[ToolError.is(cause) ? cause.code : "close_failed"] = 1;
});
const report: FleetWorkerReport = { worker, calls, seconds, failures, effects, crashed, batches, batchedCalls, timing, cpuMicros: used.user + used.system };
// The report runs to hundreds of kilobytes (every effect's key): exit only once the pipe has taken all of it.
process.stdout.write(`${JSON.stringify(report)}\n`, () => process.exit(0));
