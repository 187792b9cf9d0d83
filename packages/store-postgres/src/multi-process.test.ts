import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { sha256Hex } from "@toolgate/core";
import { verifyAuditChain } from "@toolgate/core/operator";
import { sampleIntent, sampleRequest } from "@toolgate/core/testing";
import { expect, it } from "vitest";
import { connectPostgresJournal } from "./index.js";
import { describeWithPostgres, freshSchema, pgUrl } from "./fixtures/postgres.js";

const worker = fileURLToPath(new URL("./fixtures/worker.mjs", import.meta.url));
const dist = fileURLToPath(new URL("../dist/index.js", import.meta.url));

interface WorkerReport {
  readonly worker: string;
  readonly appended: number;
  readonly started: number;
  readonly consumed: number;
  readonly claimed: readonly string[];
  readonly incremented: number;
  readonly spent: number;
}

const run = (args: string[]): Promise<WorkerReport> =>
  new Promise((resolve, reject) => {
    execFile(process.execPath, [worker, ...args], { timeout: 120_000 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`worker failed: ${error.message}\n${stderr}`));
      else resolve(JSON.parse(stdout) as WorkerReport);
    });
  });

describeWithPostgres("worker processes on one schema", () => {
  it("keep one chain, start each shared key once, consume the grant once, claim each entry once, lose no record update and spend a token once", async () => {
    expect(existsSync(dist), "build the package first: the workers import dist/").toBe(true);
    const { schema, drop } = freshSchema();
    const key = "multi-process-key";
    try {
      const setup = await connectPostgresJournal(pgUrl, { auditKey: key, schema });
      const stale = 12;
      for (let i = 0; i < stale; i++) await setup.beginIntent(sampleIntent(`stale-${i}`));
      const req = sampleRequest("shared-grant");
      await setup.requestApproval(req);
      await setup.decideApproval(req.id, {
        kind: "grant",
        approver: "human",
        via: "owner",
        tokenHash: sha256Hex("tok"),
        grantExpiresAt: "2027-01-01T00:00:00.000Z",
        at: "2026-01-01T00:00:01.000Z",
      });
      await setup.updateRecord("login", "tgl_shared", () => ({
        value: { operator: "op_1" },
        event: { type: "login.issued", at: "2026-01-01T00:00:02.000Z", data: {} },
        result: undefined,
      }));
      const grant = {
        requestId: req.id,
        tokenHash: sha256Hex("tok"),
        binding: { toolId: req.toolId, inputHash: req.inputHash, principal: req.principal, tenant: req.tenant, previewHash: req.previewHash },
      };
      const workers = 3;
      const perWorker = 120;
      const reports = await Promise.all(
        Array.from({ length: workers }, (_, i) => run([pgUrl, schema, key, `w${i}`, String(perWorker), JSON.stringify(grant)])),
      );

      expect(reports.map((r) => r.appended)).toEqual(Array(workers).fill(perWorker));
      expect(reports.reduce((n, r) => n + r.started, 0)).toBe(5);
      expect(reports.reduce((n, r) => n + r.consumed, 0)).toBe(1);
      const increments = reports.reduce((n, r) => n + r.incremented, 0);
      expect(increments).toBe(workers * (perWorker / 8));
      expect(await setup.getRecord("counter", "shared")).toBe(increments);
      expect(reports.reduce((n, r) => n + r.spent, 0)).toBe(1);
      expect(await setup.getRecord("login", "tgl_shared")).toEqual({ operator: "op_1", spentBy: reports.find((r) => r.spent === 1)!.worker });
      const claimed = reports.flatMap((r) => r.claimed);
      expect(claimed.sort()).toEqual(Array.from({ length: stale }, (_, i) => `stale-${i}`).sort());

      const records = await setup.readAudit();
      expect(verifyAuditChain(records, { key, expectedHead: await setup.head() }).ok).toBe(true);
      expect(records.filter((r) => r.type === "test.worker")).toHaveLength(workers * perWorker);
      expect(records.filter((r) => r.type === "approval.consumed")).toHaveLength(1);
      expect(records.filter((r) => r.type === "outbox.claimed")).toHaveLength(stale);
      await setup.close();
    } finally {
      await drop();
    }
  });
});
