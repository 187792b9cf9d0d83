import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { availableParallelism, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { createGate, createToolRegistry, defineFamily, defineProfile, type Journal } from "@toolgate/core";
import { connectPostgresJournal } from "@toolgate/store-postgres";
import { openSqliteJournal } from "@toolgate/store-sqlite";
import { appendLineTool } from "./append-line-tool.js";
import { countWordsTool } from "./count-words-tool.js";
import { postgresServer } from "./postgres-server.js";
import { target, type TargetSpec } from "./targets.js";

export const journalTargets = {
  sqliteFull: { label: "sqlite FULL, side-effectful, 32 in flight", unit: "calls/s", direction: "at-least", target: 20_000 },
} as const satisfies Record<string, TargetSpec>;

const MEASURE_MS = 2000;
const WARMUP_CALLS = 300;
const IN_FLIGHT = 32;

/**
 * Durable governed calls per second through a real gate: a small pure tool (one audit event per
 * call) and a small side-effectful tool (intent before the effect, then the settled result), on
 * SQLite at synchronous NORMAL and FULL and on PostgreSQL, one at a time and 32 in flight.
 */
export async function benchJournalThroughput(): Promise<string[]> {
  const lines = [
    `journal throughput — durable governed calls per second (${MEASURE_MS / 1000} s per figure, after ${WARMUP_CALLS} warm-up calls)`,
    `machine load average ${loadavg()[0]!.toFixed(1)} on ${availableParallelism()} cores when it started`,
  ];
  const dir = mkdtempSync(join(tmpdir(), "toolgate-bench-"));
  const auditKey = randomBytes(32);
  try {
    for (const synchronous of ["normal", "full"] as const) {
      const journal = await openSqliteJournal(join(dir, `${synchronous}.db`), { auditKey, synchronous });
      const { out, effectInFlight } = await measureStore(`sqlite ${synchronous.toUpperCase()}`, journal);
      lines.push(...out);
      if (synchronous === "full") lines.push(target({ ...journalTargets.sqliteFull, value: effectInFlight }));
      await journal.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }

  const server = postgresServer();
  if (server.url === undefined) {
    lines.push(`postgres: skipped (${server.reason})`);
  } else {
    try {
      const schema = `bench_${randomBytes(4).toString("hex")}`;
      const journal = await connectPostgresJournal(server.url, { auditKey, schema, poolSize: IN_FLIGHT });
      try {
        lines.push(...(await measureStore("postgres", journal)).out);
      } finally {
        await journal.close();
      }
    } finally {
      server.stop();
    }
  }
  return lines;
}

async function measureStore(label: string, journal: Journal): Promise<{ out: string[]; effectInFlight: number }> {
  const { gate, call, limited } = benchGate(journal);
  let n = 0;
  const pure = async (): Promise<void> => {
    const result = await gate.invoke("bench.count_words", { text: "governed tools for agents that hold a real mailbox" }, call);
    if (result.status !== "ok") throw new Error(`bench call failed: ${result.status}`);
  };
  const effect = async (): Promise<void> => {
    // A fresh input per call: the derived idempotency key differs, so every call runs its effect.
    const result = await gate.invoke("bench.append_line", { line: "an audited side effect", n: n++ }, call);
    if (result.status !== "ok") throw new Error(`bench call failed: ${result.status}`);
  };
  const effectUnderLimit = async (): Promise<void> => {
    // The same call under a profile with one window limit: its count is charged with the intent.
    const result = await gate.invoke("bench.append_line", { line: "an audited side effect", n: n++ }, limited);
    if (result.status !== "ok")
      throw new Error(`bench call failed: ${result.status} ${"code" in result ? result.code : ""} ${"message" in result ? result.message : ""}`);
  };
  const out: string[] = [];
  let effectInFlight = NaN;
  for (const [tool, fn] of [
    ["pure tool", pure],
    ["side-effectful tool", effect],
    ["side-effectful, 1 limit", effectUnderLimit],
  ] as const) {
    const sequential = await callsPerSecond(fn, 1);
    const parallel = await callsPerSecond(fn, IN_FLIGHT);
    if (fn === effect) effectInFlight = parallel;
    out.push(
      `${`${label}, ${tool}`.padEnd(38)} ${fmt(sequential).padStart(9)} calls/s sequential   ${fmt(parallel).padStart(9)} calls/s with ${IN_FLIGHT} in flight`,
    );
  }
  return { out, effectInFlight };
}

async function callsPerSecond(fn: () => Promise<void>, inFlight: number): Promise<number> {
  for (let i = 0; i < WARMUP_CALLS; i++) await fn();
  (globalThis as { gc?: () => void }).gc?.();
  let calls = 0;
  const start = process.hrtime.bigint();
  const deadline = start + BigInt(MEASURE_MS) * 1_000_000n;
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (process.hrtime.bigint() < deadline) {
        await fn();
        calls++;
      }
    }),
  );
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  return calls / seconds;
}

const fmt = (n: number): string => Math.round(n).toLocaleString("en-US");

function benchGate(journal: Journal) {
  const lines: string[] = [];
  const appendLine = appendLineTool("bench", (args) => {
    if (lines.length > 10_000) lines.length = 0;
    return { length: lines.push(args.line) };
  });
  const registry = createToolRegistry({
    families: [defineFamily({ name: "bench", tools: [countWordsTool, appendLine], permissions: ["bench:read", "bench:write"] })],
  });
  const profile = defineProfile({ name: "bench", allow: ["bench:read", "bench:write"], maxRisk: "low" });
  const metered = defineProfile({
    name: "bench-metered",
    allow: ["bench:read", "bench:write"],
    maxRisk: "low",
    limits: [{ tools: ["bench.append_line"], per: "principal", max: 1_000_000, windowMs: 60_000 }],
  });
  const gate = createGate({ registry, journal, secrets: ["bench-secret-value"] });
  return {
    gate,
    call: { principal: "bench-agent", tenant: "bench", profile },
    limited: { principal: "bench-agent", tenant: "bench", profile: metered },
  };
}
