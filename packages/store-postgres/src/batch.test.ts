import pg from "pg";
import { hashCanonical } from "@toolgate/core";
import { verifyAuditChain } from "@toolgate/core/operator";
import { sampleIntent, sampleRequest } from "@toolgate/core/testing";
import { expect, it } from "vitest";
import { connectPostgresJournal, type PostgresBatchTiming } from "./index.js";
import { describeWithPostgres, freshSchema, pgUrl } from "./fixtures/postgres.js";
import { execute, prepare } from "./sql.js";

const KEY = "postgres-batch-key";

// Text an attacker controls (keys, inputs, claimants) that the batch writes into its statements as
// literals: quotes of every kind, backslash escapes as an escape string would read them, array
// literal syntax, placeholders, statement breaks, and characters outside ASCII.
const HOSTILE = [
  "",
  "'",
  "''",
  "\\",
  "\\'",
  "\\\\'",
  "'\\",
  "\\x41\\101\\u0041\\n\\t\\b\\0",
  "E'x'",
  '"',
  '\\"',
  "{",
  "}",
  "{a,b}",
  '{"a","b"}',
  ",",
  "NULL",
  "null",
  "  padded  ",
  "$1",
  "$99",
  "$$ dollar $$",
  "$tag$ x $tag$",
  "'; DROP SCHEMA public CASCADE; --",
  "x'); COMMIT; DROP TABLE audit; --",
  "line\nbreak\r\nand\ttab",
  "\u2028\u2029\u200b\ufeff",
  "é e\u0301 ß ﬁ Ω",
  "😀 \ud83d\ude00",
  "/* comment */ -- comment",
  "'".repeat(300) + "\\".repeat(300),
];

describeWithPostgres("values written into a batch's statements", () => {
  it("read back as exactly what was written, as text and in arrays, whatever standard_conforming_strings says", async () => {
    const client = new pg.Client({ connectionString: pgUrl });
    await client.connect();
    try {
      const texts = "SELECT $1::text AS v, $2::text[] AS a";
      const numbers = "SELECT $1::double precision[] AS d, $2::bigint[] AS b";
      await client.query(`${prepare(texts)}; ${prepare(numbers)}`);
      for (const conforming of ["on", "off"]) {
        await client.query(`SET standard_conforming_strings = ${conforming}`);
        await client.query("SET escape_string_warning = off");
        for (const value of HOSTILE) {
          const { rows } = await client.query<{ v: string; a: (string | null)[] }>(execute(texts, [value, [value, null, value]]));
          expect(rows, `${conforming}: ${JSON.stringify(value)}`).toEqual([{ v: value, a: [value, null, value] }]);
        }
      }
      const values = [0, -1, 1.5, 1e21, Number.MAX_VALUE, Number.MIN_VALUE, 2 ** 53 - 1];
      const { rows } = await client.query<{ d: number[]; b: string[] }>(execute(numbers, [values, [1, 2 ** 53 - 1]]));
      expect(rows).toEqual([{ d: values, b: ["1", String(2 ** 53 - 1)] }]);
    } finally {
      await client.end();
    }
  });

  it("write each value as one literal argument, and refuse a value it cannot write", () => {
    const text = "SELECT $1::text, $2::text[]";
    expect(execute(text, ["$2", null])).toMatch(/^EXECUTE tg_[0-9a-f]{32}\(E'\$2', NULL\)$/);
    expect(execute(text, ["it's", ['a"b', "c\\d"]]).endsWith(String.raw`(E'it''s', E'{"a\\"b","c\\\\d"}')`)).toBe(true);
    expect(prepare(text)).toMatch(/^PREPARE tg_[0-9a-f]{32} AS SELECT \$1::text, \$2::text\[\]$/);
    expect(() => execute(text, [{ a: 1 }])).toThrow(TypeError);
    expect(() => execute(text, [[{ a: 1 }]])).toThrow(TypeError);
    expect(() => execute(text, [true])).toThrow(TypeError);
  });

  it("keep hostile keys, inputs, request ids and claimants exact through intents, settlements, approvals and claims, and the chain verifies", async () => {
    const { schema, drop } = freshSchema();
    const journal = await connectPostgresJournal(pgUrl, { auditKey: KEY, schema, poolSize: 2 });
    try {
      const intents = HOSTILE.map((text, i) => sampleIntent(`k${i}${text}`, { input: { text, list: [text, text] }, target: text, principal: text }));
      const started = await Promise.all(intents.map((intent) => journal.beginIntent(intent)));
      expect(started.map((s) => s.status)).toEqual(intents.map(() => "started"));
      for (const intent of intents) expect(await journal.getIntent(intent.key)).toMatchObject({ key: intent.key, input: intent.input, state: "pending" });
      const requests = HOSTILE.map((text, i) => sampleRequest(`r${i}${text}`, { principal: text }));
      const asked = await Promise.all(requests.map((r) => journal.requestApproval(r)));
      expect(asked.map((a) => [a.request.id, a.created])).toEqual(requests.map((r) => [r.id, true]));
      const claimed = await journal.claimOutbox({
        states: ["pending"],
        updatedBefore: "2100-01-01T00:00:00.000Z",
        limit: 1000,
        claimant: HOSTILE.join("|"),
        at: "2026-01-01T00:00:01.000Z",
      });
      expect(claimed.map((e) => e.key).sort()).toEqual(intents.map((i) => i.key).sort());
      for (const [i, intent] of intents.entries()) {
        const output = { echo: HOSTILE[i]! };
        const result = { output, outputHash: hashCanonical(output), untrusted: false, findings: [] };
        await journal.settleIntent(intent.key, {
          state: "completed",
          boundary: "effect_completed",
          intentHash: intent.intentHash,
          invocationId: HOSTILE[i]!,
          at: "2026-01-01T00:00:02.000Z",
          result,
        });
        expect(await journal.getIntent(intent.key)).toMatchObject({ key: intent.key, state: "completed", result: { output } });
      }
      const audit = await journal.readAudit();
      expect(audit.filter((r) => r.type === "outbox.claimed").map((r) => (r.data as { claimant: string }).claimant)).toEqual(
        intents.map(() => HOSTILE.join("|")),
      );
      expect(verifyAuditChain(audit, { key: KEY, expectedHead: await journal.head() })).toMatchObject({
        ok: true,
        count: intents.length * 3 + requests.length,
      });
    } finally {
      await journal.close();
      await drop();
    }
  });

  it("tell onBatch each committed batch: its calls (a refused call among them) and non-negative timings", async () => {
    const { schema, drop } = freshSchema();
    const timings: PostgresBatchTiming[] = [];
    const journal = await connectPostgresJournal(pgUrl, { auditKey: KEY, schema, poolSize: 2, onBatch: (t) => timings.push(t) });
    try {
      const intent = sampleIntent("once");
      const calls = await Promise.allSettled([
        journal.append({ type: "test.a", at: "2026-01-01T00:00:00.000Z", data: {} }),
        journal.beginIntent(intent),
        journal.settleIntent("missing", {
          state: "failed",
          boundary: "effect_failed",
          intentHash: intent.intentHash,
          invocationId: "x",
          at: "2026-01-01T00:00:00.000Z",
        }),
      ]);
      expect(calls.map((c) => c.status)).toEqual(["fulfilled", "fulfilled", "rejected"]);
      expect(timings.reduce((n, t) => n + t.calls, 0)).toBe(3);
      for (const t of timings) {
        expect(t.attempts).toBe(1);
        for (const ms of [t.lockMs, t.fetchMs, t.runMs, t.commitMs]) expect(ms).toBeGreaterThanOrEqual(0);
      }
    } finally {
      await journal.close();
      await drop();
    }
  });

  it("keep committing when onBatch throws: the hook's failure is its own", async () => {
    const { schema, drop } = freshSchema();
    const journal = await connectPostgresJournal(pgUrl, {
      auditKey: KEY,
      schema,
      poolSize: 2,
      onBatch: () => {
        throw new Error("metrics down");
      },
    });
    try {
      const receipts = await Promise.all([1, 2, 3].map((i) => journal.append({ type: "test.a", at: "2026-01-01T00:00:00.000Z", data: { i } })));
      expect(receipts.map((r) => r.seq)).toEqual([1, 2, 3]);
      expect(await journal.append({ type: "test.b", at: "2026-01-01T00:00:00.000Z", data: {} })).toMatchObject({ seq: 4 });
    } finally {
      await journal.close();
      await drop();
    }
  });

  it("answer record reads made together from one query, each caller its own row: stored, missing, repeated, and a tampered one refused alone", async () => {
    const { schema, drop } = freshSchema();
    const journal = await connectPostgresJournal(pgUrl, { auditKey: KEY, schema, poolSize: 2 });
    try {
      const ids = HOSTILE.slice(0, 12).map((text, i) => `${i}${text}`);
      for (const [i, id] of ids.entries()) {
        await journal.updateRecord("counter", id, () => ({
          value: i,
          event: { type: "test.set", at: "2026-01-01T00:00:00.000Z", data: {} },
          result: undefined,
        }));
      }
      const asks = [...ids, ...ids, "missing", "missing"].map((id) => ["counter", id] as const);
      const values = await Promise.all(asks.map(([kind, id]) => journal.getRecord(kind, id)));
      expect(values).toEqual([...ids.keys(), ...ids.keys(), undefined, undefined]);
      const admin = new pg.Client({ connectionString: pgUrl });
      await admin.connect();
      await admin.query(`UPDATE "${schema}".records SET record = replace(record, '"value":3', '"value":33') WHERE record_id = $1`, [ids[3]]);
      await admin.end();
      const after = await Promise.allSettled(ids.map((id) => journal.getRecord("counter", id)));
      expect(after.map((r) => r.status)).toEqual(ids.map((_, i) => (i === 3 ? "rejected" : "fulfilled")));
      expect(after[3]).toMatchObject({ reason: { code: "journal_tampered" } });
      expect(after.filter((r) => r.status === "fulfilled").map((r) => r.value)).toEqual([...ids.keys()].filter((i) => i !== 3));
    } finally {
      await journal.close();
      await drop();
    }
  });

  it("share a pool between two journals on one schema: each batch finds its statements prepared, whichever journal prepared them", async () => {
    const { schema, drop } = freshSchema();
    const pool = new pg.Pool({ connectionString: pgUrl, max: 1 });
    const first = await connectPostgresJournal(pool, { auditKey: KEY, schema });
    const second = await connectPostgresJournal(pool, { auditKey: KEY, schema });
    try {
      const receipts = [];
      for (let i = 0; i < 3; i++) {
        receipts.push(await first.beginIntent(sampleIntent(`first-${i}`)), await second.beginIntent(sampleIntent(`second-${i}`)));
      }
      expect(receipts.map((r) => r.status)).toEqual(Array(6).fill("started"));
      expect(verifyAuditChain(await first.readAudit(), { key: KEY, expectedHead: await second.head() })).toMatchObject({ ok: true, count: 6 });
    } finally {
      await first.close();
      await second.close();
      await pool.end();
      await drop();
    }
  });

  it("prepare again on a connection whose session lost its statements (DEALLOCATE ALL): only the batch that found them gone fails", async () => {
    const { schema, drop } = freshSchema();
    const pool = new pg.Pool({ connectionString: pgUrl, max: 1 });
    const journal = await connectPostgresJournal(pool, { auditKey: KEY, schema });
    try {
      await journal.beginIntent(sampleIntent("before"));
      await pool.query("DEALLOCATE ALL");
      const lost = await Promise.allSettled([journal.beginIntent(sampleIntent("lost"))]);
      expect(lost[0]).toMatchObject({ status: "rejected", reason: { code: "journal_failed" } });
      expect(await journal.beginIntent(sampleIntent("after"))).toMatchObject({ status: "started" });
      expect((await journal.readAudit()).map((r) => (r.data as { key?: string }).key)).toEqual(["before", "after"]);
    } finally {
      await journal.close();
      await pool.end();
      await drop();
    }
  });
});
