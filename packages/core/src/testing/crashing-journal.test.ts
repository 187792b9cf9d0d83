import { describe, expect, it } from "vitest";
import { createMemoryJournal } from "../journal/memory.js";
import { createCrashingJournal } from "./crashing-journal.js";
import { sampleIntent } from "./describe-journal.js";

describe("createCrashingJournal", () => {
  it("fails result writes only while crashed, leaving the intent pending for recovery", async () => {
    const journal = createCrashingJournal(createMemoryJournal());
    expect(journal.crashed).toBe(false);
    const intent = sampleIntent("k1");
    await journal.beginIntent(intent);
    const settlement = {
      state: "completed",
      boundary: "effect_completed",
      intentHash: intent.intentHash,
      invocationId: intent.invocationId,
      at: intent.at,
    } as const;

    journal.crashed = true;
    await expect(journal.settleIntent("k1", settlement)).rejects.toThrow("the process died before the result was journaled");
    expect((await journal.listOutbox({ states: ["pending"] })).map((e) => e.key)).toEqual(["k1"]);

    journal.crashed = false;
    await journal.settleIntent("k1", settlement);
    expect((await journal.getIntent("k1"))?.state).toBe("completed");
  });
});
