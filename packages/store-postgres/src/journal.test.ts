import { createServer } from "node:net";
import pg from "pg";
import { sha256Hex, ToolError, type Journal } from "@toolgate/core";
import { verifyAuditChain, verifyJournalRows } from "@toolgate/core/operator";
import {
  describeJournal,
  describeJournalTampering,
  expectUpgradeSample,
  sampleIntent,
  sampleRequest,
  writeUpgradeSample,
  type RawJournalRows,
} from "@toolgate/core/testing";
import { expect, it } from "vitest";
import { connectPostgresJournal, POSTGRES_SCHEMA_VERSION, type PostgresJournal } from "./index.js";
import { describeWithPostgres, freshSchema, pgUrl } from "./fixtures/postgres.js";
import { MIGRATIONS } from "./schema.js";

const KEY = "postgres-conformance-key";
const at = (ms = 0): string => new Date(Date.UTC(2026, 0, 1) + ms).toISOString();

describeWithPostgres("postgres", () => {
  describeJournal("postgres", async () => {
    const { schema, drop } = freshSchema();
    const journal = await connectPostgresJournal(pgUrl, { auditKey: KEY, schema, poolSize: 4 });
    // A second worker: its own pool, its own connections.
    return { journal, auditKey: KEY, reopen: () => connectPostgresJournal(pgUrl, { auditKey: KEY, schema, poolSize: 4 }), cleanup: drop };
  });
});

/** The schema's tables, written behind the journal's back as anyone with write access could. */
function rawRows(schema: string): RawJournalRows {
  const s = `"${schema}"`;
  const run = async <T>(text: string, values: unknown[], pick: (rows: Record<string, unknown>[]) => T = () => undefined as T): Promise<T> => {
    const client = new pg.Client({ connectionString: pgUrl });
    await client.connect();
    try {
      return pick((await client.query(text, values)).rows);
    } finally {
      await client.end();
    }
  };
  return {
    entry: (key) => run(`SELECT entry FROM ${s}.outbox WHERE key = $1`, [key], (rows) => rows[0]?.["entry"] as string | undefined),
    putEntry: (r) =>
      run(
        `INSERT INTO ${s}.outbox (key, state, updated_ms, entry) VALUES ($1, $2, $3, $4)
         ON CONFLICT (key) DO UPDATE SET state = EXCLUDED.state, updated_ms = EXCLUDED.updated_ms, entry = EXCLUDED.entry`,
        [r.key, r.state, r.updatedMs, r.text],
      ),
    deleteEntry: (key) => run(`DELETE FROM ${s}.outbox WHERE key = $1`, [key]),
    request: (id) => run(`SELECT request FROM ${s}.approvals WHERE request_id = $1`, [id], (rows) => rows[0]?.["request"] as string | undefined),
    putRequest: (r) =>
      run(
        `INSERT INTO ${s}.approvals (request_id, status, input_hash, request) VALUES ($1, $2, $3, $4)
         ON CONFLICT (request_id) DO UPDATE SET status = EXCLUDED.status, request = EXCLUDED.request`,
        [r.id, r.status, r.inputHash, r.text],
      ),
    deleteRequest: (id) => run(`DELETE FROM ${s}.approvals WHERE request_id = $1`, [id]),
    record: (kind, id) =>
      run(`SELECT record FROM ${s}.records WHERE kind = $1 AND record_id = $2`, [kind, id], (rows) => rows[0]?.["record"] as string | undefined),
    // An UPDATE of the stored row when there is one (an edit), an INSERT otherwise (a forgery).
    putRecord: (r) =>
      run(
        `WITH edited AS (UPDATE ${s}.records SET record = $3 WHERE kind = $1 AND record_id = $2 RETURNING 1)
         INSERT INTO ${s}.records (kind, record_id, record) SELECT $1, $2, $3 WHERE NOT EXISTS (SELECT 1 FROM edited)`,
        [r.kind, r.id, r.text],
      ),
    deleteRecord: (kind, id) => run(`DELETE FROM ${s}.records WHERE kind = $1 AND record_id = $2`, [kind, id]),
    rewindSubject: (subject, to) => run(`UPDATE ${s}.audit SET subject = NULL WHERE subject = $1 AND seq > $2`, [subject, to.seq]),
  };
}

describeWithPostgres("postgres rows", () => {
  describeJournalTampering("postgres", async () => {
    const { schema, drop } = freshSchema();
    const journal = await connectPostgresJournal(pgUrl, { auditKey: KEY, schema, poolSize: 4 });
    return { journal, auditKey: KEY, raw: rawRows(schema), cleanup: drop };
  });
});

/** Several workers on one schema, each with its own pool; closed and the schema dropped after. */
async function withWorkers(count: number, fn: (workers: PostgresJournal[], schema: string) => Promise<void>): Promise<void> {
  const { schema, drop } = freshSchema();
  const workers: PostgresJournal[] = [];
  try {
    for (let i = 0; i < count; i++) workers.push(await connectPostgresJournal(pgUrl, { auditKey: KEY, schema, poolSize: 4 }));
    await fn(workers, schema);
  } finally {
    for (const w of workers) await w.close();
    await drop();
  }
}

const verifyAll = async (journal: Journal) => verifyAuditChain(await journal.readAudit(), { key: KEY, expectedHead: await journal.head() });

describeWithPostgres("connectPostgresJournal refuses what it cannot safely use", () => {
  it("refuses a schema whose version is newer than this code", async () => {
    await withWorkers(1, async ([journal], schema) => {
      const admin = new pg.Client({ connectionString: pgUrl });
      await admin.connect();
      await admin.query(`UPDATE "${schema}".toolgate_meta SET value = $1 WHERE name = 'schema_version'`, [String(POSTGRES_SCHEMA_VERSION + 1)]);
      await admin.end();
      const opening = connectPostgresJournal(pgUrl, { auditKey: KEY, schema });
      await expect(opening).rejects.toThrow(
        new RegExp(`version ${POSTGRES_SCHEMA_VERSION + 1}, newer than this @toolgate/store-postgres understands \\(${POSTGRES_SCHEMA_VERSION}\\)`),
      );
      await expect(opening).rejects.toSatisfy((e) => ToolError.is(e, "journal_failed"));
      expect(journal!.schemaVersion).toBe(POSTGRES_SCHEMA_VERSION);
    });
  });

  it("refuses a schema from before sealed rows that holds rows (they cannot be sealed unverified), and upgrades an empty one", async () => {
    const v1 = async (rows: boolean): Promise<{ schema: string; drop: () => Promise<void> }> => {
      const fresh = freshSchema();
      const s = `"${fresh.schema}"`;
      const admin = new pg.Client({ connectionString: pgUrl });
      await admin.connect();
      await admin.query(`CREATE SCHEMA ${s}; CREATE TABLE ${s}.toolgate_meta (name text PRIMARY KEY, value text NOT NULL)`);
      await admin.query(MIGRATIONS[0]!(s));
      await admin.query(`INSERT INTO ${s}.toolgate_meta VALUES ('schema_version', '1')`);
      if (rows) await admin.query(`INSERT INTO ${s}.approvals (request_id, status, input_hash, request) VALUES ('r1', 'granted', 'h', '{}')`);
      await admin.end();
      return fresh;
    };
    const withRows = await v1(true);
    try {
      const opening = connectPostgresJournal(pgUrl, { auditKey: KEY, schema: withRows.schema });
      await expect(opening).rejects.toSatisfy((e) => ToolError.is(e, "journal_failed"));
      await expect(opening).rejects.toThrow(/has version 1, from before rows were sealed, and holds 1 outbox entries.*point the journal at a new schema/);
    } finally {
      await withRows.drop();
    }
    const empty = await v1(false);
    try {
      const journal = await connectPostgresJournal(pgUrl, { auditKey: KEY, schema: empty.schema });
      expect(journal.schemaVersion).toBe(POSTGRES_SCHEMA_VERSION);
      await journal.beginIntent(sampleIntent("k1"));
      expect((await journal.getIntent("k1"))?.state).toBe("pending");
      await journal.close();
    } finally {
      await empty.drop();
    }
  });

  it("upgrades a schema-2 database in place: its sealed rows still open, a granted request is joined, records work", async () => {
    const { schema, drop } = freshSchema();
    const s = `"${schema}"`;
    try {
      const journal = await connectPostgresJournal(pgUrl, { auditKey: KEY, schema });
      await writeUpgradeSample(journal);
      await journal.close();
      // Back to schema 2 exactly as its migrations left it (the row format did not change).
      const admin = new pg.Client({ connectionString: pgUrl });
      await admin.connect();
      await admin.query(`DROP TABLE ${s}.records; DROP INDEX ${s}.approvals_open;
        CREATE INDEX approvals_pending ON ${s}.approvals (input_hash) WHERE status = 'pending';
        UPDATE ${s}.toolgate_meta SET value = '2' WHERE name = 'schema_version'`);
      const indexes = await admin.query(`SELECT indexname FROM pg_indexes WHERE schemaname = $1 ORDER BY indexname`, [schema]);
      await admin.end();
      expect(indexes.rows.map((r) => r["indexname"])).toEqual([
        "approvals_pending",
        "approvals_pkey",
        "approvals_request_id_key",
        "audit_head_pkey",
        "audit_pkey",
        "audit_subject",
        "outbox_claim",
        "outbox_key_key",
        "outbox_pkey",
        "toolgate_meta_pkey",
      ]);

      const upgraded = await connectPostgresJournal(pgUrl, { auditKey: KEY, schema });
      expect(upgraded.schemaVersion).toBe(3);
      await expectUpgradeSample(upgraded);
      await upgraded.close();
    } finally {
      await drop();
    }
  });

  it("refuses a worker configured with another audit key, before it can append", async () => {
    await withWorkers(1, async ([journal], schema) => {
      await journal!.append({ type: "test.event", at: at(), data: {} });
      await expect(connectPostgresJournal(pgUrl, { auditKey: "another key", schema })).rejects.toThrow(/another audit key/);
      expect(await verifyAll(journal!)).toMatchObject({ ok: true, count: 1 });
    });
  });

  it("refuses a schema name that is not a plain identifier, and a missing key", async () => {
    await expect(connectPostgresJournal(pgUrl, { auditKey: KEY, schema: 'x"; DROP TABLE y; --' })).rejects.toThrow(/schema must match/);
    await expect(connectPostgresJournal(pgUrl, { auditKey: "" })).rejects.toThrow(/audit key/);
  });

  it("reports an unreachable server as journal_failed", async () => {
    const port = await new Promise<number>((resolve) => {
      const server = createServer().listen(0, "127.0.0.1", () => {
        const address = server.address();
        server.close(() => resolve(typeof address === "object" && address ? address.port : 1));
      });
    });
    await expect(connectPostgresJournal(`postgres://nobody@127.0.0.1:${port}/none`, { auditKey: KEY })).rejects.toSatisfy((e) =>
      ToolError.is(e, "journal_failed"),
    );
  });

  it("rejects calls after close, and leaves a pool it was given open", async () => {
    const { schema, drop } = freshSchema();
    const pool = new pg.Pool({ connectionString: pgUrl, max: 2 });
    const journal = await connectPostgresJournal(pool, { auditKey: KEY, schema });
    await journal.append({ type: "test.event", at: at(), data: {} });
    await journal.close();
    await expect(journal.append({ type: "test.event", at: at(), data: {} })).rejects.toSatisfy((e) => ToolError.is(e, "journal_failed"));
    expect((await pool.query("SELECT 1 AS one")).rows[0]).toEqual({ one: 1 });
    await pool.end();
    await drop();
  });

  it("finds an event edited in the table behind the journal's back", async () => {
    await withWorkers(1, async ([journal], schema) => {
      for (let i = 0; i < 4; i++) await journal!.append({ type: "test.event", at: at(i), data: { amount: i } });
      const admin = new pg.Client({ connectionString: pgUrl });
      await admin.connect();
      await admin.query(`UPDATE "${schema}".audit SET payload = replace(payload, '"amount":2', '"amount":200') WHERE seq = 3`);
      await admin.end();
      expect(verifyAuditChain(await journal!.readAudit(), { key: KEY })).toMatchObject({ ok: false, seq: 3 });
    });
  });
});

describeWithPostgres("postgres journal batches", () => {
  it("fail only the call the database refuses, not the others in its transaction", async () => {
    await withWorkers(1, async ([journal], schema) => {
      const admin = new pg.Client({ connectionString: pgUrl });
      await admin.connect();
      await admin.query(`CREATE FUNCTION "${schema}".poison() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN IF NEW.payload LIKE '%poison%' THEN RAISE EXCEPTION 'poisoned event'; END IF; RETURN NEW; END $$`);
      await admin.query(`CREATE TRIGGER poison BEFORE INSERT ON "${schema}".audit FOR EACH ROW EXECUTE FUNCTION "${schema}".poison()`);
      await admin.end();
      const intent = sampleIntent("k1");
      const outcomes = await Promise.allSettled([
        journal!.append({ type: "test.a", at: at(), data: {} }),
        journal!.beginIntent(intent),
        journal!.append({ type: "test.poison", at: at(), data: {} }),
        journal!.settleIntent("missing", { state: "failed", boundary: "effect_failed", intentHash: intent.intentHash, invocationId: "x", at: at() }),
        journal!.append({ type: "test.b", at: at(), data: {} }),
      ]);
      expect(outcomes.map((o) => o.status)).toEqual(["fulfilled", "fulfilled", "rejected", "rejected", "fulfilled"]);
      expect(outcomes[2]).toMatchObject({ reason: { code: "journal_failed", message: expect.stringMatching(/poisoned event/) } });
      expect(outcomes[3]).toMatchObject({ reason: { code: "journal_failed", message: expect.stringMatching(/no intent recorded/) } });
      const types = (await journal!.readAudit()).map((r) => r.type);
      expect(types).toEqual(["test.a", "intent.recorded", "test.b"]);
      expect(await verifyAll(journal!)).toMatchObject({ ok: true, count: 3 });
    });
  });

  it("resolve each call only once its transaction committed: another pool sees it then", async () => {
    await withWorkers(2, async ([writer, observer]) => {
      const seen = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          writer!.append({ type: "test.event", at: at(i), data: { i } }).then(async (r) => (await observer!.head()).seq >= r.seq),
        ),
      );
      expect(seen).toEqual(Array(20).fill(true));
    });
  });
});

describeWithPostgres("several workers on one schema", () => {
  it("keep one unbroken chain while appending and recording intents concurrently", async () => {
    await withWorkers(3, async (workers) => {
      await Promise.all(
        workers.flatMap((w, wi) =>
          Array.from({ length: 30 }, (_, i) =>
            i % 3 === 0 ? w.beginIntent(sampleIntent(`w${wi}-${i}`)) : w.append({ type: "test.concurrent", at: at(i), data: { wi, i } }),
          ),
        ),
      );
      expect(await verifyAll(workers[0]!)).toMatchObject({ ok: true, count: 90 });
    });
  });

  it("consume a grant exactly once, with consumers on separate pools", async () => {
    await withWorkers(3, async (workers) => {
      const req = sampleRequest("race-grant");
      await workers[0]!.requestApproval(req);
      await workers[1]!.decideApproval(req.id, {
        kind: "grant",
        approver: "human",
        via: "owner",
        tokenHash: sha256Hex("tok"),
        grantExpiresAt: at(600_000),
        at: at(1),
      });
      const check = (i: number) => ({
        requestId: req.id,
        tokenHash: sha256Hex("tok"),
        binding: { toolId: req.toolId, inputHash: req.inputHash, principal: req.principal, tenant: req.tenant, previewHash: req.previewHash },
        invocationId: `inv_${i}`,
        at: at(2),
      });
      const outcomes = await Promise.all(
        Array.from({ length: 18 }, (_, i) => {
          const w = workers[i % 3]!;
          return i % 2 === 0
            ? w
                .beginIntent(sampleIntent(`consume-${i}`), { grant: check(i) })
                .then((r) => (r.status === "started" ? "consumed" : r.status === "grant_refused" ? r.outcome.status : r.status))
            : w.consumeGrant(check(i), { type: "approval.used", at: at(2), data: { i } }).then((o) => o.status);
        }),
      );
      expect(outcomes.filter((o) => o === "consumed")).toHaveLength(1);
      expect(outcomes.filter((o) => o === "already_consumed")).toHaveLength(17);
      const records = await workers[2]!.readAudit();
      expect(records.filter((r) => r.type === "approval.consumed")).toHaveLength(1);
      expect(await workers[2]!.listOutbox()).toHaveLength(outcomes.filter((o, i) => o === "consumed" && i % 2 === 0).length);
      expect(await verifyAll(workers[0]!)).toMatchObject({ ok: true });
    });
  });

  it("start one intent per key, with callers on separate pools", async () => {
    await withWorkers(3, async (workers) => {
      const results = await Promise.all(
        Array.from({ length: 24 }, (_, i) => workers[i % 3]!.beginIntent(sampleIntent(`key-${i % 4}`, { invocationId: `inv_${i}` }))),
      );
      for (let k = 0; k < 4; k++) {
        const forKey = results.filter((r) => r.status !== "grant_refused" && r.entry.key === `key-${k}`);
        expect(forKey.filter((r) => r.status === "started")).toHaveLength(1);
        expect(forKey.filter((r) => r.status === "existing")).toHaveLength(5);
      }
      expect((await workers[0]!.readAudit()).filter((r) => r.type === "intent.recorded")).toHaveLength(4);
    });
  });

  it("never give two recovery workers the same entry (FOR UPDATE SKIP LOCKED)", async () => {
    await withWorkers(3, async (workers) => {
      for (let i = 0; i < 30; i++) await workers[0]!.beginIntent(sampleIntent(`stale-${i}`, { at: at(i) }));
      const claimedBy = new Map<string, string>();
      let duplicates = 0;
      await Promise.all(
        workers.map(async (w, wi) => {
          for (;;) {
            const batch = await w.claimOutbox({ states: ["pending"], updatedBefore: at(60_000), limit: 4, claimant: `w${wi}`, at: at(120_000) });
            if (batch.length === 0) return;
            for (const entry of batch) {
              if (claimedBy.has(entry.key)) duplicates++;
              claimedBy.set(entry.key, `w${wi}`);
              expect(entry.attempts).toBe(2);
            }
          }
        }),
      );
      expect(duplicates).toBe(0);
      expect(claimedBy.size).toBe(30);
      const claims = (await workers[0]!.readAudit()).filter((r) => r.type === "outbox.claimed");
      expect(claims).toHaveLength(30);
      expect(new Set(claims.map((r) => r.data["key"])).size).toBe(30);
      expect(await verifyAll(workers[1]!)).toMatchObject({ ok: true });
    });
  });

  it("join concurrent requests for the same call into one pending request", async () => {
    await withWorkers(3, async (workers) => {
      const base = sampleRequest("join-0");
      const results = await Promise.all(
        Array.from({ length: 9 }, (_, i) => workers[i % 3]!.requestApproval({ ...base, id: `join-${i}`, invocationId: `inv_${i}` })),
      );
      expect(results.filter((r) => r.created)).toHaveLength(1);
      expect(new Set(results.map((r) => r.request.id)).size).toBe(1);
      expect(await workers[0]!.listApprovals({ status: ["pending"] })).toHaveLength(1);
    });
  });
});
