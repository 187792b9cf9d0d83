// Many calls in flight on one PostgreSQL journal, all charged to one window: a count read by one
// connection while another caller's walk already saw a newer version is stale, not tampered, so
// no call is refused as tampering and the count ends at the number of calls that ran.
import { randomBytes } from "node:crypto";
import { createGate, createToolRegistry, defineProfile } from "@toolgate/core";
import { readLimitUsage } from "@toolgate/core/operator";
import { createNotesStore, createNotesTools } from "@toolgate/core/testing";
import { connectPostgresJournal } from "@toolgate/store-postgres";
import { describe, expect, it } from "vitest";
import { pgSkipReason, pgUrl } from "./fixtures/workers.js";

const IN_FLIGHT = 32;
const PER_LANE = 100;

describe.skipIf(pgSkipReason !== undefined)("a window charged by many calls in flight on PostgreSQL", () => {
  it(`${IN_FLIGHT} in flight: every call runs and is counted once; none is refused as tampered`, async () => {
    const journal = await connectPostgresJournal(pgUrl, {
      auditKey: randomBytes(32),
      schema: `inflight_${randomBytes(4).toString("hex")}`,
      poolSize: IN_FLIGHT,
    });
    try {
      const profile = defineProfile({
        name: "busy",
        allow: ["notes:read", "notes:write", "notes:delete", "notes:sync"],
        maxRisk: "critical",
        limits: [{ name: "syncs", tools: ["notes.sync_notes"], per: "tenant", max: 100_000, windowMs: 60_000 }],
      });
      const gate = createGate({ registry: createToolRegistry({ families: [createNotesTools(createNotesStore())] }), journal });
      const results = await Promise.all(
        Array.from({ length: IN_FLIGHT }, async (_, lane) => {
          const statuses: string[] = [];
          for (let i = 0; i < PER_LANE; i++) {
            const r = await gate.invoke(
              "notes.sync_notes",
              { delayMs: 0 },
              { principal: `agent-${lane}`, tenant: "t", profile, idempotencyKey: `${lane}-${i}` },
            );
            statuses.push(r.status === "ok" ? "ok" : `${r.status} ${"code" in r ? r.code : ""} ${"message" in r ? r.message : ""}`);
          }
          return statuses;
        }),
      );
      const notOk = results.flat().filter((s) => s !== "ok");
      expect(notOk).toEqual([]);
      const usage = await readLimitUsage(journal);
      expect(usage.map((u) => [u.limit, u.used])).toEqual([["syncs", IN_FLIGHT * PER_LANE]]);
    } finally {
      await journal.close();
    }
  });
});
