import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { verifyAuditChain } from "@toolgate/core/operator";
import { afterAll, describe, expect, it } from "vitest";
import { openSqliteJournal } from "./index.js";

const worker = fileURLToPath(new URL("./fixtures/append-worker.mjs", import.meta.url));
const dist = fileURLToPath(new URL("../dist/index.js", import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "toolgate-sqlite-mp-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface WorkerReport {
  readonly worker: string;
  readonly appended: number;
  readonly started: number;
  readonly incremented: number;
  readonly claimed: number;
}

const run = (args: string[]): Promise<WorkerReport> =>
  new Promise((resolve, reject) => {
    execFile(process.execPath, [worker, ...args], { timeout: 120_000 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`worker failed: ${error.message}\n${stderr}`));
      else resolve(JSON.parse(stdout) as WorkerReport);
    });
  });

describe("several processes on one journal file", () => {
  it("keep one unbroken chain, start each shared intent key once, lose no update of a shared record, and claim a record once", async () => {
    expect(existsSync(dist), "build the package first: the workers import dist/").toBe(true);
    const path = join(dir, "shared.db");
    const key = "multi-process-key";
    const workers = 4;
    const perWorker = 400;
    const shared = 10;
    // Fresh file: the workers also race to create and migrate it.
    const results = await Promise.all(Array.from({ length: workers }, (_, i) => run([path, key, `w${i}`, String(perWorker), String(shared)])));
    expect(results.map((r) => r.appended)).toEqual(Array(workers).fill(perWorker));
    expect(results.reduce((n, r) => n + r.started, 0)).toBe(shared);
    const increments = results.reduce((n, r) => n + r.incremented, 0);
    expect(increments).toBe(workers * (perWorker / 8));
    expect(results.reduce((n, r) => n + r.claimed, 0)).toBe(1);

    const journal = await openSqliteJournal(path, { auditKey: key });
    const records = await journal.readAudit();
    const verdict = verifyAuditChain(records, { key, expectedHead: await journal.head() });
    expect(verdict).toMatchObject({ ok: true, count: workers * perWorker + shared + increments + 1 });
    expect(await journal.getRecord("counter", "shared")).toBe(increments);
    const winner = results.find((r) => r.claimed === 1)!.worker;
    expect(await journal.getRecord("claim", "once")).toEqual({ by: winner });
    for (let i = 0; i < workers; i++) {
      const mine = records.filter((r) => r.type === "test.worker" && r.data["worker"] === `w${i}`);
      expect(mine).toHaveLength(perWorker);
    }
    expect(records.filter((r) => r.type === "intent.recorded")).toHaveLength(shared);
    expect(await journal.listOutbox()).toHaveLength(shared);
    await journal.close();
  });
});
