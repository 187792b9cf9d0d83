import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { hashCanonical } from "@toolgate/core";
import { verifyJournalRows } from "@toolgate/core/operator";
import { sampleIntent } from "@toolgate/core/testing";
import { beforeEach, describe, expect, it } from "vitest";
import { runIn, tempProject } from "../fixtures/temp-project.js";
import { openRuntime } from "../runtime.js";
import { parseBefore } from "./journal.js";

let dir: string;
beforeEach(() => {
  dir = tempProject("toolgate-journal-");
});

const toolgate = (...args: string[]) => runIn(dir, ...args);

/** Two completed writes in the project's journal, settled on 2026-01-01. */
async function settledWrites(): Promise<void> {
  const runtime = await openRuntime({ cwd: dir });
  try {
    for (const key of ["k1", "k2"]) {
      const intent = sampleIntent(key);
      await runtime.journal.beginIntent(intent);
      const output = { saved: key };
      await runtime.journal.settleIntent(key, {
        state: "completed",
        boundary: "effect_completed",
        intentHash: intent.intentHash,
        invocationId: intent.invocationId,
        at: intent.at,
        result: { output, outputHash: hashCanonical(output), untrusted: false, findings: [] },
      });
    }
  } finally {
    await runtime.close();
  }
}

describe("toolgate journal prune", () => {
  it("refuses a date that is not one, or is in the future, as a usage error", async () => {
    expect(() => parseBefore("yesterday")).toThrow(/not a date/);
    expect(() => parseBefore("2026-13-45")).toThrow(/not a date/);
    expect(() => parseBefore("2999-01-01")).toThrow(/in the future/);
    expect(parseBefore("2026-01-31")).toBe("2026-01-31T00:00:00.000Z");
    expect((await toolgate("journal", "prune", "--before", "soon")).code).toBe(2);
    expect((await toolgate("journal", "prune")).code).toBe(2);
  });

  it("removes the bodies of entries settled before the date; rows and chain still verify", async () => {
    await settledWrites();
    const kept = await toolgate("journal", "prune", "--before", "2025-12-31");
    expect(kept).toMatchObject({ code: 0 });
    expect(kept.stdout).toMatch(/pruned the output bodies of 0 entries/);
    const pruned = await toolgate("journal", "prune", "--before", "2026-06-01", "--json");
    expect(pruned.code, pruned.stderr).toBe(0);
    expect(JSON.parse(pruned.stdout)).toMatchObject({ before: "2026-06-01T00:00:00.000Z", pruned: 2, tampered: [] });
    const runtime = await openRuntime({ cwd: dir });
    try {
      expect((await runtime.journal.getIntent("k1"))?.result).toMatchObject({ outputPruned: true, outputHash: hashCanonical({ saved: "k1" }) });
      expect(await verifyJournalRows(runtime.journal)).toMatchObject({ ok: true, problems: [] });
    } finally {
      await runtime.close();
    }
    expect((await toolgate("audit", "verify")).code).toBe(0);
  });

  it("leaves an entry that fails its seal as found, names it, and exits 1", async () => {
    await settledWrites();
    const db = new Database(join(dir, ".toolgate", "journal.db"));
    db.prepare('UPDATE outbox SET entry = replace(entry, \'"saved":"k2"\', \'"saved":"k9"\') WHERE key = \'k2\'').run();
    db.close();
    const r = await toolgate("journal", "prune", "--before", "2026-06-01");
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/of 1 entries/);
    expect(r.stderr).toMatch(/1 entries fail their seal and were left as found: k2/);
  });
});

describe("journal.retainReadOutputs in the composition file", () => {
  /** Call the pure notes.count_words through the CLI and return what the outbox kept of its result. */
  async function keptResult(): Promise<{ output?: unknown; outputHash: string } | undefined> {
    const called = await toolgate("call", "notes.count_words", "--input", '{"text":"three small words"}', "--profile", "reader", "--key", "count-1");
    expect(called.code).toBe(0);
    const runtime = await openRuntime({ cwd: dir });
    try {
      const entries = (await runtime.journal.listOutbox()).filter((e) => e.toolId === "notes.count_words");
      expect(entries).toHaveLength(1);
      return entries[0]!.result;
    } finally {
      await runtime.close();
    }
  }

  it("by default keeps a read's output hash, not its output", async () => {
    const kept = await keptResult();
    expect(kept?.outputHash).toMatch(/^[0-9a-f]{64}$/);
    expect(kept && "output" in kept && kept.output !== undefined).toBe(false);
  });

  it("keeps the output when the operator sets it", async () => {
    const config = join(dir, "toolgate.config.mjs");
    writeFileSync(
      config,
      readFileSync(config, "utf8").replace(
        'journal: { sqlite: ".toolgate/journal.db" }',
        'journal: { sqlite: ".toolgate/journal.db", retainReadOutputs: true }',
      ),
    );
    expect(readFileSync(config, "utf8")).toContain("retainReadOutputs: true");
    expect((await keptResult())?.output).toEqual({ words: 3 });
  });
});
