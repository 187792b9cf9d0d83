import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { availableParallelism, loadavg } from "node:os";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { recoverOutbox, verifyAuditChain } from "@toolgate/core/operator";
import { connectPostgresJournal, type PostgresJournal } from "@toolgate/store-postgres";
import type { FleetWorkerReport } from "./postgres-fleet-worker.js";
import { postgresServer } from "./postgres-server.js";
import { target } from "./targets.js";

const MEASURE_MS = 3000;
const FLEETS = [1, 2, 4] as const;
/** Recovery takes pending entries this old: old enough for crashed intents, young enough to race live calls. */
const RACE_OLDER_THAN_MS = 250;
const RECOVERERS = 2;
/** Pause between one recovery loop's passes. */
const RECOVERY_PAUSE_MS = 100;
const worker = fileURLToPath(new URL("./postgres-fleet-worker.js", import.meta.url));

/**
 * Side-effectful governed calls per second from N worker processes (N = 1, 2, 4) sharing one
 * PostgreSQL schema, each with its own gate and journal and 32 calls in flight, while two recovery
 * loops claim and settle what looks abandoned. After each run it checks the claims, the intents and
 * the effects: no entry claimed twice, no intent lost, no effect run twice, and the chain verifies.
 */
export async function benchPostgresFleet(): Promise<string[]> {
  const lines = [
    `postgres fleet — N worker processes on one schema, side-effectful tool, 32 in flight each, ${MEASURE_MS / 1000} s per N, recovery racing`,
    `machine load average ${loadavg()[0]!.toFixed(1)} on ${availableParallelism()} cores when it started`,
  ];
  const server = postgresServer();
  // Without a server the figures are missing, and the summary says so (NaN is never met).
  if (server.url === undefined) return [...lines, `postgres fleet: skipped (${server.reason})`, ...targets(NaN, NaN, NaN)];
  try {
    const rates = new Map<number, number>();
    let faults = 0;
    for (const n of FLEETS) {
      try {
        const run = await runFleet(server.url, n);
        rates.set(n, run.rate);
        faults += run.faults;
        lines.push(...run.lines);
      } catch (cause) {
        // A fleet that could not run is a missing figure and a fault, not the end of the bench.
        rates.set(n, NaN);
        faults++;
        lines.push(`${n} workers: failed: ${cause instanceof Error ? cause.message : String(cause)}`);
      }
    }
    return [...lines, ...targets(rates.get(1)!, rates.get(4)!, faults)];
  } finally {
    server.stop();
  }
}

const targets = (one: number, four: number, faults: number): string[] => [
  target({ label: "postgres fleet: 4 workers vs 1 worker", value: four / one, unit: "×", direction: "at-least", target: 3 }),
  target({ label: "postgres fleet: side-effectful calls/s, 4 workers", value: four, unit: "calls/s", direction: "at-least", target: 10_000 }),
  target({ label: "postgres fleet: double claims + lost intents + double effects", value: faults, unit: "faults", direction: "at-most", target: 0 }),
];

interface FleetRun {
  readonly rate: number;
  readonly faults: number;
  readonly lines: string[];
}

async function runFleet(url: string, n: number): Promise<FleetRun> {
  const schema = `fleet_${randomBytes(4).toString("hex")}`;
  const key = randomBytes(32);
  const journals: PostgresJournal[] = [];
  for (let i = 0; i < RECOVERERS; i++) journals.push(await connectPostgresJournal(url, { auditKey: key, schema, poolSize: 2 }));
  const children = Array.from({ length: n }, (_, i) => startWorker([url, schema, key.toString("hex"), `w${i}`, String(MEASURE_MS)]));
  // Recovery races the workers until they report; whatever ends the run stops it before the journals close.
  let racing = true;
  let raced: Promise<number>[] = [];
  try {
    await Promise.all(children.map((c) => c.ready));
    raced = journals.map((journal, i) =>
      (async () => {
        let claims = 0;
        while (racing) {
          claims += (await recoverOutbox(journal, { olderThanMs: RACE_OLDER_THAN_MS, batchSize: 32, claimant: `recovery-${i}`, leaseMs: 60_000 })).claimed;
          await new Promise((resolve) => setTimeout(resolve, RECOVERY_PAUSE_MS));
        }
        return claims;
      })(),
    );
    const serverCpu = postgresCpuMicros(url);
    for (const c of children) c.process.stdin!.write("go\n");
    const reports = await Promise.all(children.map((c) => c.report));
    const serverMicros = postgresCpuMicros(url) - serverCpu;
    racing = false;
    const racedClaims = (await Promise.all(raced)).reduce((a, b) => a + b, 0);
    // Everything still pending is what a crashed worker left: recovery must still be able to take it.
    const late = await recoverOutbox(journals[0]!, { olderThanMs: 0, batchSize: 500, claimant: "recovery-final", leaseMs: 60_000 });
    const check = await checkFleet(journals[0]!, key, reports);
    const rate = reports.reduce((sum, r) => sum + r.calls / r.seconds, 0);
    const calls = reports.reduce((sum, r) => sum + r.calls, 0);
    const workerMicros = reports.reduce((sum, r) => sum + r.cpuMicros, 0);
    const batches = reports.reduce((sum, r) => sum + r.batches, 0);
    const batched = reports.reduce((sum, r) => sum + r.batchedCalls, 0);
    const per = (pick: (t: FleetWorkerReport["timing"]) => number): string =>
      (reports.reduce((sum, r) => sum + pick(r.timing), 0) / Math.max(1, batches)).toFixed(2);
    const failed = reports.flatMap((r) => Object.entries(r.failures).map(([code, count]) => `${code} ${count}`));
    return {
      rate,
      faults: check.faults,
      lines: [
        `${`${n} worker${n > 1 ? "s" : " "}`.padEnd(10)} ${fmt(rate).padStart(7)} calls/s  (per worker ${reports.map((r) => fmt(r.calls / r.seconds)).join(" / ")}; ` +
          `${fmt(batches / (MEASURE_MS / 1000))} batches/s of ${(batched / Math.max(1, batches)).toFixed(1)} calls${failed.length > 0 ? `; failed: ${failed.join(", ")}` : ""})`,
        `           per batch (ms): waiting for the head lock ${per((t) => t.lockMs)}, holding it: fetch ${per((t) => t.fetchMs)}, ` +
          `run ${per((t) => t.runMs)}, write+commit ${per((t) => t.commitMs)}`,
        `           CPU per call: workers ${fmt(workerMicros / calls)} µs, PostgreSQL ${Number.isNaN(serverMicros) ? "?" : fmt(serverMicros / calls)} µs ` +
          `(the server's processes, recovery's share included; the machine has ${availableParallelism()} cores)`,
        `           recovery claimed ${racedClaims} while racing (${check.liveClaims} of them live calls the worker then settled) and ${late.claimed} after; ` +
          `${check.text}`,
      ],
    };
  } finally {
    racing = false;
    await Promise.allSettled(raced);
    for (const c of children) if (c.process.exitCode === null) c.process.kill();
    for (const journal of journals) await journal.close().catch(() => undefined);
  }
}

/** Claims, intents and effects after a run, read back from the shared schema. */
async function checkFleet(
  journal: PostgresJournal,
  key: Buffer,
  reports: readonly FleetWorkerReport[],
): Promise<{ faults: number; liveClaims: number; text: string }> {
  const audit = await journal.readAudit();
  const chain = verifyAuditChain(audit, { key, expectedHead: await journal.head() });
  const claims = new Map<string, number>();
  for (const event of audit) {
    const claimed = event.type === "outbox.claimed" ? (event.data as { key?: unknown } | undefined)?.key : undefined;
    if (typeof claimed === "string") claims.set(claimed, (claims.get(claimed) ?? 0) + 1);
  }
  const doubleClaims = [...claims.values()].filter((count) => count > 1).length;
  const state = new Map((await journal.listOutbox()).map((e) => [e.key, e.state] as const));
  // Lost: a crashed worker's intent that is gone or was never resolved, an effect without its
  // intent or with an intent that does not say it may have happened, anything left pending.
  const effects = reports.flatMap((r) => r.effects);
  const lost =
    reports.flatMap((r) => r.crashed).filter((k) => state.get(k) !== "unknown").length +
    effects.filter((k) => state.get(k) !== "completed" && state.get(k) !== "unknown").length +
    [...state.values()].filter((s) => s === "pending").length;
  const doubleEffects = effects.length - new Set(effects).size;
  const liveClaims = [...claims.keys()].filter((k) => state.get(k) === "completed").length;
  const faults = doubleClaims + lost + doubleEffects + (chain.ok ? 0 : 1);
  const verdict = chain.ok ? `chain of ${audit.length} events verifies` : `CHAIN BROKEN at ${chain.seq}: ${chain.reason}`;
  return {
    faults,
    liveClaims,
    text: `${state.size} intents, ${effects.length} effects: double claims ${doubleClaims}, lost intents ${lost}, double effects ${doubleEffects}; ${verdict}`,
  };
}

interface StartedWorker {
  readonly process: ChildProcess;
  readonly ready: Promise<void>;
  readonly report: Promise<FleetWorkerReport>;
}

function startWorker(args: string[]): StartedWorker {
  const child = spawn(process.execPath, [worker, ...args], { stdio: ["pipe", "pipe", "inherit"] });
  const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
  // A clean exit may come before its last line is read: only a failed one ends the wait.
  const exited = new Promise<never>((_, reject) =>
    child.once("exit", (code) => code !== 0 && reject(new Error(`fleet worker ${args[3]} exited with ${code}`))),
  );
  exited.catch(() => undefined);
  const next = (): Promise<string> => Promise.race([lines.next().then((line) => (line.done ? "" : line.value)), exited]);
  const ready = next().then((line) => {
    if (line !== "ready") throw new Error(`fleet worker ${args[3]} said ${line.slice(0, 200)}`);
  });
  const report = ready.then(next).then((line) => JSON.parse(line) as FleetWorkerReport);
  // Both are awaited later; a failure before then must not go unhandled.
  ready.catch(() => undefined);
  report.catch(() => undefined);
  return { process: child, ready, report };
}

/**
 * CPU used so far by the fleet's PostgreSQL server (user + system, µs, from /proc): its postmaster
 * (found by the port it was started with, `-p PORT`, as scripts/postgres.sh starts it) with the
 * time of the backends it has reaped, and its live processes. NaN where it cannot be found.
 */
function postgresCpuMicros(url: string): number {
  const port = new URL(url).port;
  const tick = 1e6 / 100; // USER_HZ: 100 on Linux
  const stats: { pid: string; ppid: string; cpu: number; reaped: number }[] = [];
  let postmaster: string | undefined;
  try {
    for (const pid of readdirSync("/proc").filter((name) => /^\d+$/.test(name))) {
      try {
        const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
        const close = stat.lastIndexOf(")");
        if (stat.slice(stat.indexOf("(") + 1, close) !== "postgres") continue;
        const f = stat.slice(close + 2).split(" ");
        stats.push({ pid, ppid: f[1]!, cpu: (Number(f[11]) + Number(f[12])) * tick, reaped: (Number(f[13]) + Number(f[14])) * tick });
        if (port !== "" && readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" ").includes(` -p ${port} `)) postmaster = pid;
      } catch {
        continue; // gone meanwhile, or not ours to read
      }
    }
  } catch {
    return NaN;
  }
  if (postmaster === undefined) return NaN;
  return stats.filter((p) => p.pid === postmaster || p.ppid === postmaster).reduce((sum, p) => sum + p.cpu + (p.pid === postmaster ? p.reaped : 0), 0);
}

const fmt = (value: number): string => Math.round(value).toLocaleString("en-US");
