import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Journal } from "@toolgate/core";
import { checkPinnedHeads, parseWitness, verifyAuditChain, withWitness } from "@toolgate/core/operator";
import { describeJournal } from "@toolgate/core/testing";
import { connectPostgresJournal } from "@toolgate/store-postgres";
import { openSqliteJournal } from "@toolgate/store-sqlite";
import { describe, expect, it } from "vitest";

const KEY = "witness-stores-key-0123456789abcdef";
const pgUrl = process.env["TOOLGATE_PG_URL"] ?? "";
const witnessFile = (): string => join(mkdtempSync(join(tmpdir(), "toolgate-witness-")), "audit.witness");

interface Store {
  readonly name: string;
  readonly skip: boolean;
  /** A fresh store; `open()` gives another handle (worker) on it. */
  readonly fresh: () => { open: () => Promise<Journal> };
}

const stores: Store[] = [
  {
    name: "sqlite",
    skip: false,
    fresh: () => {
      const path = join(mkdtempSync(join(tmpdir(), "toolgate-witness-db-")), "journal.db");
      return { open: () => openSqliteJournal(path, { auditKey: KEY }) };
    },
  },
  {
    // Runs where scripts/postgres.sh gave this process a server (.ci/run does; under CI a missing
    // server fails these tests instead of skipping them); each store its own schema.
    name: "postgres",
    skip: pgUrl === "" && ["", "0", "false"].includes(process.env["CI"] ?? ""),
    fresh: () => {
      const schema = `w_${randomBytes(6).toString("hex")}`;
      return { open: () => connectPostgresJournal(pgUrl, { auditKey: KEY, schema, poolSize: 2 }) };
    },
  },
];

for (const store of stores) {
  describe.skipIf(store.skip)(`a witnessed ${store.name} journal`, () => {
    describeJournal(`${store.name} with a witness`, async () => {
      const { open } = store.fresh();
      const file = witnessFile();
      const journal = withWitness(await open(), { file, key: KEY, everyEvents: 3 });
      return { journal, auditKey: KEY, reopen: async () => withWitness(await open(), { file, key: KEY, everyEvents: 5 }) };
    });

    it("two workers append checkpoints to one witness file; all are in the chain; a cut tail is found", async () => {
      const { open } = store.fresh();
      const file = witnessFile();
      const workers = [withWitness(await open(), { file, key: KEY, everyEvents: 7 }), withWitness(await open(), { file, key: KEY, everyEvents: 4 })];
      await Promise.all(
        workers.map(async (journal, w) => {
          for (let i = 0; i < 30; i++) await journal.append({ type: "test.event", at: new Date().toISOString(), data: { w, i } });
        }),
      );
      for (const journal of workers) await journal.close();
      const reader = await open();
      try {
        const chain = await reader.readAudit();
        expect(verifyAuditChain(chain, { key: KEY })).toMatchObject({ ok: true, count: 60 });
        const reading = parseWitness(readFileSync(file, "utf8"), KEY);
        if (!reading.ok) throw new Error(reading.reason);
        expect(reading.checkpoints.length).toBeGreaterThanOrEqual(2);
        expect(Math.max(...reading.checkpoints.map((c) => c.seq))).toBe(60);
        expect(checkPinnedHeads(chain, reading.checkpoints)).toMatchObject({ ok: true, following: 0 });
        // What someone deleting the last events leaves behind: a chain that verifies on its own.
        const cut = chain.slice(0, 50);
        expect(verifyAuditChain(cut, { key: KEY }).ok).toBe(true);
        expect(checkPinnedHeads(cut, reading.checkpoints)).toMatchObject({ ok: false, reason: expect.stringMatching(/cut off the end/) });
      } finally {
        await reader.close();
      }
    });
  });
}
