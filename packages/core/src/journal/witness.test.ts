import { appendFileSync, mkdtempSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ToolError } from "../errors.js";
import { describeJournal } from "../testing/describe-journal.js";
import { sampleIntent, sampleRequest } from "../testing/journal-samples.js";
import { verifyAuditChain } from "./audit-chain.js";
import { createMemoryJournal } from "./memory.js";
import { GENESIS_MAC, type AuditRecord, type Journal } from "./types.js";
import { checkPinnedHeads, parseWitness, readWitness, withWitness } from "./witness.js";

const KEY = "witness-test-key-0123456789abcdef";
const at = (i: number): string => new Date(Date.UTC(2026, 0, 1) + i * 1000).toISOString();
const tempFile = (): string => join(mkdtempSync(join(tmpdir(), "toolgate-witness-")), "witness.jsonl");

async function appendEvents(journal: Journal, from: number, count: number, note = "event"): Promise<void> {
  for (let i = from; i < from + count; i++) await journal.append({ type: "test.event", at: at(i), data: { i, note } });
}

const lines = (file: string): { v: number; seq: number; mac: string; at: string; sig: string }[] =>
  readFileSync(file, "utf8")
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l) as { v: number; seq: number; mac: string; at: string; sig: string });

// The wrapper is a faithful journal: every conformance rule still holds through it.
describeJournal("memory with a witness", async () => {
  const journal = withWitness(createMemoryJournal({ auditKey: KEY }), { file: tempFile(), key: KEY, everyEvents: 3 });
  return { journal, auditKey: KEY };
});

describe("withWitness writes signed checkpoints of the chain", () => {
  it("every N events, each an event of the chain; close() adds the head; the file is 0600 and appended to", async () => {
    const file = tempFile();
    writeFileSync(file, "", { mode: 0o600 });
    const memory = createMemoryJournal({ auditKey: KEY });
    const journal = withWitness(memory, { file, key: KEY, everyEvents: 4, everyMs: 3_600_000 });
    await appendEvents(journal, 1, 10);
    const chain = await memory.readAudit();
    await journal.close();
    const written = lines(file);
    // #4, then #8 unless it was still waiting behind #4's write when close() asked for the head (#10).
    expect([
      [4, 8, 10],
      [4, 10],
    ]).toContainEqual(written.map((c) => c.seq));
    for (const c of written) expect(c.mac).toBe(chain[c.seq - 1]!.mac);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const reading = parseWitness(readFileSync(file, "utf8"), KEY);
    expect(reading).toMatchObject({ ok: true });
    expect(checkPinnedHeads(chain, reading.ok ? reading.checkpoints : [])).toMatchObject({ ok: true, checked: written.length, following: 0 });
  });

  it("after everyMs, the next event is checkpointed; a process that wrote nothing leaves the file alone", async () => {
    const file = tempFile();
    let now = Date.UTC(2026, 0, 1);
    const journal = withWitness(createMemoryJournal({ auditKey: KEY }), { file, key: KEY, everyEvents: 1000, everyMs: 60_000, clock: () => new Date(now) });
    await appendEvents(journal, 1, 2);
    now += 60_000;
    await appendEvents(journal, 3, 1);
    expect(await journal.checkpoint()).toBeUndefined(); // #3 was already due: nothing newer
    expect(lines(file).map((c) => c.seq)).toEqual([3]);
    await appendEvents(journal, 4, 1);
    expect((await journal.checkpoint())?.seq).toBe(4);
    await journal.close();
    const idle = tempFile();
    await withWitness(createMemoryJournal({ auditKey: KEY }), { file: idle, key: KEY }).close();
    expect(() => statSync(idle)).toThrow();
  });

  it("sees the receipts of intents, settlements and approvals, not only append", async () => {
    const file = tempFile();
    const memory = createMemoryJournal({ auditKey: KEY });
    const journal = withWitness(memory, { file, key: KEY, everyEvents: 1 });
    await journal.beginIntent(sampleIntent("k1"));
    await journal.requestApproval(sampleRequest("apr_1"));
    await journal.checkpoint();
    const head = await memory.head();
    expect(lines(file).at(-1)).toMatchObject({ seq: head.seq, mac: head.mac });
    expect(lines(file).length).toBeGreaterThanOrEqual(2);
    await journal.close();
  });

  it("a burst faster than the disk is coalesced: at most two writes wait, the last for the newest event", async () => {
    const file = tempFile();
    const memory = createMemoryJournal({ auditKey: KEY });
    const journal = withWitness(memory, { file, key: KEY, everyEvents: 1 });
    await Promise.all(Array.from({ length: 200 }, (_, i) => journal.append({ type: "test.burst", at: at(i), data: { i } })));
    const last = await journal.checkpoint();
    await journal.close();
    const seqs = lines(file).map((c) => c.seq);
    expect(seqs.length).toBeLessThan(200);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    expect(seqs.at(-1)).toBe(200);
    expect(last?.seq ?? 200).toBe(200);
  });

  it("two writers on one file append whole lines (O_APPEND); a file that cannot be written fails close(), not the calls", async () => {
    const file = tempFile();
    const a = withWitness(createMemoryJournal({ auditKey: KEY }), { file, key: KEY, everyEvents: 1 });
    const b = withWitness(createMemoryJournal({ auditKey: KEY }), { file, key: KEY, everyEvents: 1 });
    for (let i = 1; i <= 20; i++) {
      await appendEvents(a, i, 1);
      await a.checkpoint();
      await appendEvents(b, i, 1);
      await b.checkpoint();
    }
    await Promise.all([appendEvents(a, 21, 20), appendEvents(b, 21, 20)]);
    await Promise.all([a.close(), b.close()]);
    expect(lines(file).length).toBeGreaterThanOrEqual(42);
    expect(parseWitness(readFileSync(file, "utf8"), KEY)).toMatchObject({ ok: true });

    const errors: ToolError[] = [];
    const broken = withWitness(createMemoryJournal({ auditKey: KEY }), {
      file: join(file, "not-a-dir", "w.jsonl"),
      key: KEY,
      everyEvents: 1,
      onError: (e) => errors.push(e),
    });
    await appendEvents(broken, 1, 2);
    expect((await broken.readAudit()).length).toBe(2);
    await expect(broken.close()).rejects.toSatisfy((e) => ToolError.is(e, "journal_failed") && /witness file/.test((e as Error).message));
    expect(errors.length).toBeGreaterThan(0);
  });

  it("keeps what a store hangs on its journal under a symbol (the engine's operator work) reachable", async () => {
    const operations = Symbol.for("toolgate-test.operations");
    const inner = Object.assign(createMemoryJournal({ auditKey: KEY }), { [operations]: { verify: () => "rows" } });
    const journal = withWitness(inner, { file: tempFile(), key: KEY }) as unknown as Record<symbol, { verify(): string }>;
    expect(journal[operations]!.verify()).toBe("rows");
    await (journal as unknown as Journal).close();
  });

  it("refuses nonsense intervals", () => {
    const journal = createMemoryJournal({ auditKey: KEY });
    expect(() => withWitness(journal, { file: tempFile(), key: KEY, everyEvents: 0 })).toThrow(ToolError);
    expect(() => withWitness(journal, { file: tempFile(), key: KEY, everyMs: Number.NaN })).toThrow(ToolError);
  });
});

describe("a witness file is authenticated line by line", () => {
  async function witnessed(): Promise<{ file: string; text: string }> {
    const file = tempFile();
    const journal = withWitness(createMemoryJournal({ auditKey: KEY }), { file, key: KEY, everyEvents: 1000 });
    for (const from of [1, 3, 5]) {
      await appendEvents(journal, from, 2);
      await journal.checkpoint();
    }
    await journal.close();
    return { file, text: readFileSync(file, "utf8") };
  }

  it("refuses an edited MAC, seq or time, a forged line, a line signed with another key, a torn line", async () => {
    const { text } = await witnessed();
    const [first, ...rest] = text.trim().split("\n");
    const parsed = JSON.parse(first!) as Record<string, unknown>;
    const edits = [
      { ...parsed, mac: "f".repeat(64) },
      { ...parsed, seq: 1 },
      { ...parsed, at: at(99) },
      { ...parsed, sig: "0".repeat(64) },
      { ...parsed, v: 2 },
      { ...parsed, seq: "2" },
    ];
    for (const edit of edits) {
      const verdict = parseWitness([JSON.stringify(edit), ...rest].join("\n"), KEY);
      expect(verdict, JSON.stringify(edit)).toMatchObject({ ok: false, line: 1 });
    }
    expect(parseWitness(text, "another-key-0123456789abcdef0123")).toMatchObject({ ok: false, line: 1, reason: expect.stringMatching(/signature/) });
    expect(parseWitness(`${text}{"v":1,"seq":`, KEY)).toMatchObject({ ok: false, line: 4, reason: expect.stringMatching(/not JSON/) });
    expect(parseWitness(`${text}null\n`, KEY)).toMatchObject({ ok: false, line: 4 });
    expect(parseWitness("", KEY)).toEqual({ ok: true, checkpoints: [] });
  });

  it("readWitness reads the file; a missing one is config_invalid", async () => {
    const { file } = await witnessed();
    expect(await readWitness(file, KEY)).toMatchObject({ ok: true, checkpoints: [{ seq: 2 }, { seq: 4 }, { seq: 6 }] });
    appendFileSync(file, "garbage\n");
    expect(await readWitness(file, KEY)).toMatchObject({ ok: false, line: 4 });
    await expect(readWitness(join(file, "missing"), KEY)).rejects.toSatisfy((e) => ToolError.is(e, "config_invalid"));
  });
});

describe("checkPinnedHeads: a head recorded elsewhere finds what verifyAuditChain alone cannot", () => {
  async function chainOf(count: number, note = "event", key = KEY): Promise<AuditRecord[]> {
    const journal = createMemoryJournal({ auditKey: key });
    await appendEvents(journal, 1, count, note);
    return [...(await journal.readAudit())];
  }

  it("a cut tail verifies on its own, and fails against the pinned head", async () => {
    const chain = await chainOf(8);
    const pin = { seq: 8, mac: chain[7]!.mac };
    const cut = chain.slice(0, 5);
    expect(verifyAuditChain(cut, { key: KEY })).toMatchObject({ ok: true, count: 5 });
    expect(checkPinnedHeads(cut, [pin])).toMatchObject({ ok: false, seq: 8, reason: expect.stringMatching(/ends at #5.*cut off the end/) });
    expect(checkPinnedHeads([], [pin])).toMatchObject({ ok: false, seq: 8, reason: expect.stringMatching(/ends at #0/) });
  });

  it("a rewrite with the same key verifies on its own, and fails against a pinned head at or after the first rewritten event", async () => {
    const original = await chainOf(8);
    // Rebuild the tail after #3 with the key, linked to the original prefix: a valid chain.
    const journal = createMemoryJournal({ auditKey: KEY });
    await appendEvents(journal, 1, 3);
    await appendEvents(journal, 4, 7, "rewritten");
    const forged = [...(await journal.readAudit())];
    expect(forged.slice(0, 3)).toEqual(original.slice(0, 3));
    expect(verifyAuditChain(forged, { key: KEY })).toMatchObject({ ok: true, count: 10 });
    expect(checkPinnedHeads(forged, [{ seq: 4, mac: original[3]!.mac }])).toMatchObject({ ok: false, seq: 4, reason: expect.stringMatching(/rewritten/) });
    expect(checkPinnedHeads(forged, [{ seq: 8, mac: original[7]!.mac }])).toMatchObject({ ok: false, seq: 8 });
    // A pin before the first rewritten event still holds: what a head cannot see.
    expect(checkPinnedHeads(forged, [{ seq: 3, mac: original[2]!.mac }])).toMatchObject({ ok: true, following: 7 });
    // Without the key the chain itself does not verify.
    const otherKey = await chainOf(8, "event", "another-key-0123456789abcdef0123");
    expect(verifyAuditChain(otherKey, { key: KEY }).ok).toBe(false);
  });

  it("passes a chain that reaches the pin and goes further; counts what follows; the empty chain's head is 0 and the genesis MAC", async () => {
    const chain = await chainOf(6);
    expect(checkPinnedHeads(chain, [{ seq: 4, mac: chain[3]!.mac.toUpperCase() }])).toEqual({
      ok: true,
      checked: 1,
      last: { seq: 4, mac: chain[3]!.mac.toUpperCase() },
      following: 2,
    });
    expect(checkPinnedHeads([], [{ seq: 0, mac: GENESIS_MAC }])).toMatchObject({ ok: true, following: 0 });
    expect(checkPinnedHeads(chain, [])).toEqual({ ok: true, checked: 0, last: undefined, following: 6 });
    expect(checkPinnedHeads(chain, [{ seq: 0, mac: "1".repeat(64) }])).toMatchObject({ ok: false, seq: 0 });
    expect(checkPinnedHeads(chain, [{ seq: 1.5, mac: GENESIS_MAC }])).toMatchObject({ ok: false });
    expect(checkPinnedHeads(chain, [{ seq: -1, mac: GENESIS_MAC }])).toMatchObject({ ok: false });
    expect(() => checkPinnedHeads(chain.slice(2), [])).toThrow(ToolError);
  });
});
