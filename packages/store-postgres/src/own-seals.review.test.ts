/**
 * Review of the journal's own-seals read-back (core/journal/own-seals.ts) on PostgreSQL: a row or
 * link this worker wrote, then edited, replaced, deleted or restated in the tables by someone with
 * write access, is refused by the writer itself exactly as by a worker that never wrote it; a kill
 * switch thrown by another worker is seen by the next read, also when several reads share a query.
 */
import pg from "pg";
import { ToolError } from "@toolgate/core";
import { sampleIntent } from "@toolgate/core/testing";
import { expect, it } from "vitest";
import { connectPostgresJournal, type PostgresJournal } from "./index.js";
import { describeWithPostgres, freshSchema, pgUrl } from "./fixtures/postgres.js";

const KEY = "postgres-own-seals-review-key";
const T = "2026-01-01T00:00:00.000Z";

/** A read's refusal as journal_tampered with this problem (and kind). */
const refusedAs = (problem: string, kind?: string) => (e: unknown) =>
  ToolError.is(e, "journal_tampered") && e.details?.["problem"] === problem && (kind === undefined || e.details?.["kind"] === kind);

/** Two workers (each its own pool) on one fresh schema, and a raw connection to its tables. */
async function workers() {
  const { schema, drop } = freshSchema();
  const writer = await connectPostgresJournal(pgUrl, { auditKey: KEY, schema, poolSize: 2 });
  const other = await connectPostgresJournal(pgUrl, { auditKey: KEY, schema, poolSize: 2 });
  const raw = new pg.Client({ connectionString: pgUrl });
  await raw.connect();
  const sql = async (text: string, values: unknown[] = []) => (await raw.query(text.replaceAll("$s", `"${schema}"`), values)).rows as Record<string, unknown>[];
  const close = async () => {
    await raw.end();
    await writer.close();
    await other.close();
    await drop();
  };
  return { writer, other, sql, close };
}

const set = (j: PostgresJournal, target: string, status: string) =>
  j.updateRecord("switch", target, () => ({
    value: { status, target, reason: "r", by: "op", at: T },
    event: { type: "switch.set", at: T, data: { status } },
    result: 0,
  }));

describeWithPostgres("review: own rows and links tampered in PostgreSQL after this worker wrote them", () => {
  const entryTampers: [string, string, string][] = [
    ["its row edited (seal kept)", "UPDATE $s.outbox SET entry = replace(entry, 'note k1', 'note k9') WHERE key = 'k1'", "seal"],
    ["its row deleted", "DELETE FROM $s.outbox WHERE key = 'k1'", "missing"],
    ["its row replaced by another validly sealed row", "UPDATE $s.outbox SET entry = (SELECT entry FROM $s.outbox WHERE key = 'k2') WHERE key = 'k1'", "seal"],
    ["its latest event's subject cleared", "UPDATE $s.audit SET subject = NULL WHERE subject = 'entry:k1'", "no_event"],
  ];
  for (const [name, tamper, problem] of entryTampers) {
    it(`an own entry with ${name}`, async () => {
      const { writer, other, sql, close } = await workers();
      try {
        await writer.beginIntent(sampleIntent("k1"));
        await writer.beginIntent(sampleIntent("k2"));
        expect(await writer.getIntent("k1")).toMatchObject({ key: "k1" });
        await sql(tamper);
        await expect(writer.getIntent("k1")).rejects.toSatisfy(refusedAs(problem, "entry"));
        await expect(other.getIntent("k1")).rejects.toSatisfy(refusedAs(problem, "entry"));
        await expect(writer.beginIntent(sampleIntent("k1"))).rejects.toSatisfy(refusedAs(problem, "entry"));
      } finally {
        await close();
      }
    });
  }

  it("an older version of an own entry put back after the other worker claimed it (restated)", async () => {
    const { writer, other, sql, close } = await workers();
    try {
      await writer.beginIntent(sampleIntent("k1"));
      const [first] = await sql("SELECT entry FROM $s.outbox WHERE key = 'k1'");
      const claimed = await other.claimOutbox({ states: ["pending"], updatedBefore: "2026-01-02T00:00:00.000Z", limit: 10, claimant: "w2", at: T });
      expect(claimed.map((e) => e.key)).toEqual(["k1"]);
      await sql("UPDATE $s.outbox SET entry = $1 WHERE key = 'k1'", [first!["entry"]]);
      await expect(writer.getIntent("k1")).rejects.toSatisfy(refusedAs("restated", "entry"));
      await expect(other.getIntent("k1")).rejects.toSatisfy(refusedAs("restated", "entry"));
    } finally {
      await close();
    }
  });

  it("an own link edited or its MAC replaced fails the writer's next record read", async () => {
    for (const tamper of [
      "UPDATE $s.audit SET payload = replace(payload, '\"n\":3', '\"n\":30') WHERE seq = 3",
      `UPDATE $s.audit SET mac = '${"f".repeat(64)}' WHERE seq = 3`,
    ]) {
      const { writer, other, sql, close } = await workers();
      try {
        for (let n = 1; n <= 4; n++) await writer.append({ type: "test.event", at: T, data: { n } });
        await sql(tamper);
        await expect(writer.getRecord("switch", "tool:a")).rejects.toSatisfy(refusedAs("index", "audit"));
        await expect(other.getRecord("switch", "tool:a")).rejects.toSatisfy(refusedAs("index", "audit"));
      } finally {
        await close();
      }
    }
  });

  it("a switch thrown by the other worker is seen by the writer's next reads, several in one turn", async () => {
    const { writer, other, sql, close } = await workers();
    try {
      await set(writer, "tool:notes.add_note", "enabled");
      await set(writer, "family:notes", "enabled");
      await set(other, "family:notes", "disabled");
      const reads = await Promise.all([
        writer.getRecord("switch", "tool:notes.add_note"),
        writer.getRecord("switch", "family:notes"),
        writer.getRecord("switch", "family:notes"),
      ]);
      expect(reads).toMatchObject([{ status: "enabled" }, { status: "disabled" }, { status: "disabled" }]);
      // Another switch's validly sealed row put in its place: refused.
      await set(writer, "family:other", "enabled");
      const [enabledRow] = await sql("SELECT record FROM $s.records WHERE record_id = 'family:other'");
      await sql("UPDATE $s.records SET record = $1 WHERE record_id = 'family:notes'", [String(enabledRow!["record"]).replace("family:other", "family:notes")]);
      await expect(writer.getRecord("switch", "family:notes")).rejects.toSatisfy(refusedAs("seal", "record"));
    } finally {
      await close();
    }
  });
});
