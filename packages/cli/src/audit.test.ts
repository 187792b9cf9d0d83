import { appendFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { openSqliteJournal } from "@toolgate/store-sqlite";
import { beforeEach, describe, expect, it } from "vitest";
import { notesConfig, runIn, tempProject } from "./fixtures/temp-project.js";

let dir: string;
beforeEach(() => {
  dir = tempProject("toolgate-audit-");
});

/** The CLI run in this process against the temp project: its real SQLite journal file. */
const toolgate = (...args: string[]) => runIn(dir, ...args);

async function someCalls(count: number): Promise<void> {
  for (let i = 0; i < count; i++) {
    const r = await toolgate("call", "notes.count_words", "--input", JSON.stringify({ text: `call ${i}` }), "--profile", "reader");
    expect(r.code, r.stderr).toBe(0);
  }
}

const HEAD = /^(\d+):([0-9a-f]{64})$/;
async function head(): Promise<string> {
  const r = await toolgate("audit", "head");
  expect(r.stdout).toMatch(HEAD);
  return r.stdout;
}

/** Delete the last `n` audit rows from the journal file, as someone with disk access would. */
function cutTail(n: number): void {
  const db = new Database(join(dir, ".toolgate", "journal.db"));
  db.prepare("DELETE FROM audit WHERE seq > (SELECT max(seq) FROM audit) - ?").run(n);
  db.close();
}

function useConfig(edit: (text: string) => string): void {
  const path = join(dir, "toolgate.config.mjs");
  writeFileSync(path, edit(readFileSync(path, "utf8")));
}

describe("toolgate audit head and verify --expected-head", () => {
  it("a cut tail: plain verify passes (the attack), verify against the kept head fails and says what it found", async () => {
    await someCalls(4);
    const kept = await head();
    expect(Number(kept.split(":")[0])).toBeGreaterThanOrEqual(4);
    cutTail(2);
    const plain = await toolgate("audit", "verify");
    expect(plain.code).toBe(0);
    const pinned = await toolgate("audit", "verify", "--expected-head", kept);
    expect(pinned.code).toBe(1);
    expect(pinned.stderr).toMatch(new RegExp(`ends at #${Number(kept.split(":")[0]) - 2}, before #${kept.split(":")[0]}`));
  });

  it("passes when the chain reaches the kept head and goes further, and says how many events follow it", async () => {
    await someCalls(2);
    const kept = await head();
    await someCalls(3);
    const r = await toolgate("audit", "verify", "--expected-head", kept);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/expected head #\d+ found; 3 events follow it/);
    const json = JSON.parse((await toolgate("audit", "verify", "--expected-head", kept, "--json")).stdout) as {
      ok: boolean;
      expectedHead: { ok: boolean; following: number };
    };
    expect(json).toMatchObject({ ok: true, expectedHead: { ok: true, following: 3 } });
  });

  it("a head beyond the end, a head whose MAC is not the event's at that seq, a same-key rewrite of the tail", async () => {
    await someCalls(3);
    const kept = await head();
    const [seq, mac] = kept.split(":") as [string, string];
    expect((await toolgate("audit", "verify", "--expected-head", `${Number(seq) + 5}:${mac}`)).code).toBe(1);
    const wrongMac = await toolgate("audit", "verify", "--expected-head", `${seq}:${"e".repeat(64)}`);
    expect(wrongMac.code).toBe(1);
    expect(wrongMac.stderr).toMatch(new RegExp(`event #${seq} has MAC ${mac.slice(0, 16)}`));
    // Someone with the audit key cuts the last events and writes others in their place.
    cutTail(2);
    const key = readFileSync(join(dir, ".toolgate", "audit.key"), "utf8").trim();
    const journal = await openSqliteJournal(join(dir, ".toolgate", "journal.db"), { auditKey: key });
    for (let i = 0; i < 4; i++)
      await journal.append({ type: "call.completed", at: new Date().toISOString(), toolId: "notes.count_words", data: { forged: i } });
    await journal.close();
    expect((await toolgate("audit", "verify")).code).toBe(0);
    const rewritten = await toolgate("audit", "verify", "--expected-head", kept);
    expect(rewritten.code).toBe(1);
    expect(rewritten.stderr).toMatch(/was rewritten/);
  });

  it("refuses a malformed --expected-head as a usage error (2) naming the SEQ:MAC format, before opening anything", async () => {
    await someCalls(1);
    for (const bad of [
      "",
      "12",
      "12:",
      ":abc",
      "x:" + "a".repeat(64),
      "-1:" + "a".repeat(64),
      "1:" + "a".repeat(63),
      "1:" + "g".repeat(64),
      "1.5:" + "a".repeat(64),
      "99999999999999999999:" + "a".repeat(64),
    ]) {
      const r = await toolgate("audit", "verify", "--expected-head", bad);
      expect(r.code, bad).toBe(2);
      expect(r.stderr, bad).toContain("SEQ:MAC");
    }
  });

  it("an empty journal: head is 0 and the genesis MAC, and it verifies against itself, not against a later head", async () => {
    const empty = await head();
    expect(empty).toBe(`0:${"0".repeat(64)}`);
    expect(JSON.parse((await toolgate("audit", "head", "--json")).stdout)).toEqual({ seq: 0, mac: "0".repeat(64), at: null, journal: "sqlite" });
    expect((await toolgate("audit", "verify", "--expected-head", empty)).code).toBe(0);
    expect((await toolgate("audit", "verify", "--expected-head", `1:${"a".repeat(64)}`)).code).toBe(1);
  });

  it("head --json carries the event's time and the journal kind", async () => {
    await someCalls(1);
    const json = JSON.parse((await toolgate("audit", "head", "--json")).stdout) as { seq: number; mac: string; at: string; journal: string };
    expect(`${json.seq}:${json.mac}`).toBe(await head());
    expect(json).toMatchObject({ journal: "sqlite", at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/) });
  });
});

describe("toolgate audit verify reports stored rows with the chain", () => {
  it("an approval request granted by editing the file fails verify by name while the chain still verifies", async () => {
    const ask = ["call", "notes.save_note", "--input", '{"name":"todo","text":"buy milk"}', "--profile", "writer", "--key", "todo-1"];
    const asked = await toolgate(...ask);
    expect(asked.code).toBe(4);
    const id = /request (apr_[0-9a-f-]+)/.exec(asked.stdout)![1]!;
    const clean = await toolgate("audit", "verify");
    expect(clean.code, clean.stderr).toBe(0);
    expect(clean.stdout).toMatch(/stored rows verified: \d+ outbox entries, 1 approval requests/);
    const db = new Database(join(dir, ".toolgate", "journal.db"));
    const granted = db
      .prepare(`UPDATE approvals SET status = 'granted', request = replace(request, '"status":"pending"', '"status":"granted"') WHERE request_id = ?`)
      .run(id);
    db.close();
    expect(granted.changes).toBe(1);
    const chainOnly = JSON.parse((await toolgate("audit", "verify", "--json")).stdout) as { ok: boolean; rows: { ok: boolean } };
    expect(chainOnly).toMatchObject({ ok: true, rows: { ok: false } });
    const edited = await toolgate("audit", "verify");
    expect(edited.code).toBe(1);
    expect(edited.stderr).toMatch(new RegExp(`1 stored row fails verification: approval request ${id}: seal`));
  });

  it("a cut tail that took the events of stored rows is reported both ways: the rows and the kept head", async () => {
    const asked = await toolgate("call", "notes.save_note", "--input", '{"name":"x","text":"y"}', "--profile", "writer");
    expect(asked.code).toBe(4);
    const kept = await head();
    cutTail(1);
    const r = await toolgate("audit", "verify", "--expected-head", kept);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/approval request apr_/);
    expect(r.stderr).toMatch(/does not hold the expected head: the chain ends at/);
  });

  it("an edited recorded result of a completed call fails verify naming the outbox entry", async () => {
    const ask = ["call", "notes.save_note", "--input", '{"name":"todo","text":"buy milk"}', "--profile", "writer", "--key", "todo-2"];
    const id = /request (apr_[0-9a-f-]+)/.exec((await toolgate(...ask)).stdout)![1]!;
    expect((await toolgate("approvals", "approve", id)).code).toBe(0);
    expect((await toolgate(...ask)).code).toBe(0);
    const db = new Database(join(dir, ".toolgate", "journal.db"));
    const edited = db.prepare(`UPDATE outbox SET entry = replace(entry, '"saved":"todo"', '"saved":"evil"') WHERE state = 'completed'`).run();
    db.close();
    expect(edited.changes).toBe(1);
    const r = await toolgate("audit", "verify");
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/1 stored row fails verification: outbox entry [0-9a-f]{64}: \w+/);
  });
});

describe("a witness file configured as journal.witness", () => {
  const witnessed = (path: string) => (text: string) =>
    text.replace('journal: { sqlite: ".toolgate/journal.db" },', `journal: { sqlite: ".toolgate/journal.db", witness: ${JSON.stringify(path)} },`);

  it("every command that writes leaves a checkpoint; verify --witness finds a cut tail that plain verify misses", async () => {
    const witness = join(mkdtempSync(join(tmpdir(), "toolgate-witness-")), "audit.witness");
    useConfig(witnessed(witness));
    await someCalls(3);
    const lines = readFileSync(witness, "utf8").trim().split("\n");
    expect(lines).toHaveLength(3);
    expect(`${JSON.parse(lines[2]!).seq}:${JSON.parse(lines[2]!).mac}`).toBe(await head());
    expect((await toolgate("audit", "head")).code).toBe(0);
    expect(readFileSync(witness, "utf8").trim().split("\n")).toHaveLength(3); // reading writes nothing
    const ok = await toolgate("audit", "verify", "--witness", witness);
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stdout).toMatch(/witness: 3 checkpoints found in the chain, the last #\d+; 0 events follow it/);
    cutTail(1);
    const cut = await toolgate("audit", "verify", "--witness", witness);
    expect(cut.code).toBe(1);
    expect(cut.stderr).toMatch(/checkpoint of the witness file .*cut off the end/);
    // The configured witness is checked without --witness too.
    const plain = await toolgate("audit", "verify");
    expect(plain.code).toBe(1);
    expect(plain.stderr).toMatch(/checkpoint of the witness file .*cut off the end/);
  });

  it("plain verify fails when the configured witness file is gone while the chain holds events", async () => {
    const witness = join(mkdtempSync(join(tmpdir(), "toolgate-witness-")), "audit.witness");
    useConfig(witnessed(witness));
    await someCalls(1);
    expect((await toolgate("audit", "verify")).code).toBe(0);
    rmSync(witness);
    const gone = await toolgate("audit", "verify");
    expect(gone.code).toBe(1);
    expect(gone.stderr).toMatch(/witness file .* \(journal\.witness\) does not exist, but the chain holds \d+ events/);
  });

  it("an edited or foreign witness line fails verify naming the line; a missing witness file is a configuration error", async () => {
    const witness = join(mkdtempSync(join(tmpdir(), "toolgate-witness-")), "audit.witness");
    useConfig(witnessed(witness));
    await someCalls(2);
    appendFileSync(witness, `${JSON.stringify({ v: 1, seq: 1, mac: "a".repeat(64), at: new Date().toISOString(), sig: "b".repeat(64) })}\n`);
    const forged = await toolgate("audit", "verify", "--witness", witness);
    expect(forged.code).toBe(1);
    expect(forged.stderr).toMatch(/line 3: signature does not match/);
    expect((await toolgate("audit", "verify", "--witness", join(dir, "nope.witness"))).code).toBe(3);
  });

  it("toolgate.config.json: a witness that is not a non-empty path is a configuration error naming journal", async () => {
    for (const witness of ['""', "5", "null"]) {
      writeFileSync(join(dir, "bad.json"), `{ "families": [], "profiles": [], "journal": { "sqlite": "j.db", "witness": ${witness} } }`);
      const r = await toolgate("--config", "bad.json", "audit", "head");
      expect(r.code, witness).toBe(3);
      expect(r.stderr, witness).toMatch(/bad\.json is invalid: journal/);
    }
  });

  it("refuses a witness inside the journal's directory, also through a symbolic link; a witness elsewhere in the project is fine", async () => {
    // One file per configuration: a module once imported stays loaded in this process.
    const configWith = (name: string, path: string): string => {
      writeFileSync(join(dir, name), witnessed(path)(readFileSync(notesConfig, "utf8")));
      return name;
    };
    const inside = await toolgate("--config", configWith("inside.config.mjs", ".toolgate/audit.witness"), "audit", "head");
    expect(inside.code).toBe(3);
    expect(inside.stderr).toMatch(/inside the journal's directory/);
    mkdirSync(join(dir, ".toolgate"), { recursive: true });
    symlinkSync(join(dir, ".toolgate"), join(dir, "state-link"));
    expect((await toolgate("--config", configWith("linked.config.mjs", "state-link/w.jsonl"), "audit", "head")).code).toBe(3);
    mkdirSync(join(dir, "witness"));
    const elsewhere = configWith("elsewhere.config.mjs", "witness/audit.witness");
    const r = await toolgate("--config", elsewhere, "call", "notes.count_words", "--input", '{"text":"a b"}', "--profile", "reader");
    expect(r.code, r.stderr).toBe(0);
    expect(
      readFileSync(join(dir, "witness", "audit.witness"), "utf8")
        .trim()
        .split("\n"),
    ).toHaveLength(1);
  });
});
