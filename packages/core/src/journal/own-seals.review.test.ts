/**
 * Review: what a journal handle reads back of its own writes (own-seals.ts) must equal what a
 * handle that never wrote them reads (the full check) — same value, same refusal — for odd and
 * hostile intents, after tampering, after a rolled-back batch and with two handles on one store.
 */
import { describe, expect, it } from "vitest";
import { ToolError } from "../errors.js";
import { sampleIntent, settleFailed } from "../testing/journal-samples.js";
import { createJournal } from "./create-journal.js";
import { memoryDriver } from "./memory.js";
import type { IntentInput } from "./types.js";

const auditKey = "own-seals-review-key";

/** What a read gives: the value as JSON (key order included) or the refusal's code and problem. */
async function outcome(read: () => Promise<unknown>): Promise<string> {
  try {
    const value = await read();
    return `ok ${JSON.stringify(value)} ${value === undefined ? "" : JSON.stringify(Object.keys(value as object))}`;
  } catch (e) {
    return ToolError.is(e) ? `refused ${e.code} ${String(e.details?.["problem"])}` : `threw ${String(e)}`;
  }
}

function pair() {
  const driver = memoryDriver();
  return { driver, writer: createJournal(driver, { auditKey }), reader: createJournal(driver, { auditKey }) };
}

const odd: [string, Partial<IntentInput>][] = [
  ["input with undefined members and holes", { input: { a: undefined, b: [undefined, 1, , 2] } }],
  ["input with NaN, Infinity and -0", { input: { n: NaN, i: -Infinity, z: -0, big: 1e308 } }],
  ["input with a Date and a toJSON", { input: { d: new Date(0), t: { toJSON: () => ({ x: 1 }) } } }],
  ["input with a __proto__ key", { input: JSON.parse('{"__proto__":{"polluted":true},"a":1}') as unknown }],
  ["input a string", { input: "plain" }],
  ["input null", { input: null }],
  ["input undefined", { input: undefined }],
  ["target empty", { target: "" }],
  ["target undefined", { target: undefined }],
  ["key with unicode and NUL", { key: "k\u0000\u202e\ud800é" }],
  ["inputRedacted not a boolean", { inputRedacted: "yes" as unknown as boolean }],
  ["inputRedacted undefined", { inputRedacted: undefined as unknown as boolean }],
  ["idempotent not a boolean", { idempotent: 1 as unknown as boolean }],
  ["effect unknown", { effect: "delete" as unknown as "write" }],
  ["at not a string", { at: 5 as unknown as string }],
  ["at undefined", { at: undefined as unknown as string }],
  ["toolId undefined", { toolId: undefined as unknown as string }],
  ["an extra key", { extra: 1 } as Partial<IntentInput>],
  ["a result key handed in", { result: { outputHash: "x" } } as Partial<IntentInput>],
];

describe("review: own read-back equals a fresh handle's full check", () => {
  for (const [name, overrides] of odd) {
    it(name, async () => {
      const { writer, reader } = pair();
      const intent = { ...sampleIntent("k"), ...overrides };
      const began = await outcome(() => writer.beginIntent(intent));
      const key = intent.key;
      const own = await outcome(() => writer.getIntent(key));
      const fresh = await outcome(() => reader.getIntent(key));
      expect({ began: began.slice(0, 10), own }).toEqual({ began: began.slice(0, 10), own: fresh });
    });
  }

  it("the other handle's later write, then the writer's row put back (restated), is refused by both", async () => {
    const { driver, writer, reader } = pair();
    const intent = sampleIntent("r", { effect: "read" });
    await writer.beginIntent(intent);
    const first = driver.tables.entries.get("r")!;
    // The other handle retakes it after a failure: a later version at a later event.
    await settleFailed(reader, intent);
    await reader.beginIntent(intent, { retake: { attempts: 1, states: ["failed"] } });
    driver.tables.entries.set("r", first);
    expect(await outcome(() => writer.getIntent("r"))).toBe("refused journal_tampered restated");
    expect(await outcome(() => reader.getIntent("r"))).toBe("refused journal_tampered restated");
  });
});
