import { describe, expect, it } from "vitest";
import { z } from "zod";
import { hashCanonical } from "../canonical-json.js";
import { defineFamily } from "../family.js";
import { createGate } from "../gate/gate.js";
import { defineTool } from "../manifest.js";
import { recoverOutbox } from "../recovery.js";
import { createToolRegistry } from "../registry.js";
import { editableRequest, editCheckFor, editedIntent, editGrant, expectOf } from "../testing/journal-samples.js";
import { createMemoryJournal } from "./memory.js";
import type { ApprovalEditInput, IntentInput } from "./types.js";

/**
 * Recovery of an edited call: the entry holds the edited input and its hash, so a crashed edited
 * call is replayed with the edited input (never the input as asked), and an entry whose recorded
 * input no longer hashes to what was approved is not run at all.
 */

const ID = "ledger.upsert_entry";
const asked = { n: 1 };
const fixed = { n: 2 };

function world() {
  const ran: unknown[] = [];
  const upsert = defineTool({
    id: ID,
    title: "Upsert",
    description: "Idempotent write.",
    input: z.object({ n: z.number() }),
    output: z.object({ ok: z.boolean() }),
    actionType: "ledger-write",
    effect: "write",
    risk: "low",
    approval: "never",
    requiredAllowlist: ["ledger:write"],
    idempotent: true,
    retryable: true,
    reversible: false,
    timeoutMs: 60_000,
    runtimeIsolation: { network: "none", filesystem: "none", secrets: "none", subprocess: "none" },
    untrustedOutput: false,
    handler: (input) => (ran.push(input), { ok: true }),
  });
  const registry = createToolRegistry({ families: [defineFamily({ name: "ledger", tools: [upsert], permissions: ["ledger:write"] })] });
  const journal = createMemoryJournal({ auditKey: "edit-recovery-key" });
  return { gate: createGate({ registry, journal }), journal, ran };
}

/** A request for `asked`, edited to `fixed` and granted; the intent the gate recorded for it before it crashed. */
async function crashedEditedCall(w: ReturnType<typeof world>, key: string, overrides: Partial<IntentInput> = {}) {
  const request = (
    await w.journal.requestApproval(editableRequest(`r-${key}`, { toolId: ID, principal: "agent", tenant: "t", input: asked, inputHash: hashCanonical(asked) }))
  ).request;
  const preview = { summary: "upsert n=2" };
  const edit: ApprovalEditInput = {
    input: fixed,
    inputHash: hashCanonical(fixed),
    preview,
    previewHash: hashCanonical(preview),
    target: undefined,
    changes: [{ path: "/n", before: 1, after: 2 }],
    fromInputHash: request.inputHash,
    by: "op_ana",
    via: "owner",
    at: new Date(0).toISOString(),
  };
  const granted = (await w.journal.decideApproval(request.id, editGrant(edit, expectOf(request)))).request;
  const intent = editedIntent(key, granted, {
    toolId: ID,
    principal: "agent",
    tenant: "t",
    effect: "write",
    idempotent: true,
    target: undefined,
    ...overrides,
  });
  expect((await w.journal.beginIntent(intent, { grant: { ...editCheckFor(granted), binding: { ...editCheckFor(granted).binding, toolId: ID } } })).status).toBe(
    "started",
  );
  return granted;
}

describe("recovery of an approver's edit", () => {
  it("replays a crashed edited call with the edited input, once, and keeps the edit on the entry", async () => {
    const w = world();
    const request = await crashedEditedCall(w, "k1");
    const report = await recoverOutbox(w.gate, { olderThanMs: 0 });
    expect(report).toMatchObject({ claimed: 1, replayed: 1 });
    expect(w.ran).toEqual([fixed]);
    const entry = await w.journal.getIntent("k1");
    expect(entry).toMatchObject({
      state: "completed",
      inputHash: hashCanonical(fixed),
      edited: { requestId: request.id, askedInputHash: hashCanonical(asked) },
    });
    expect(await recoverOutbox(w.gate, { olderThanMs: 0 })).toMatchObject({ claimed: 0 });
    expect(w.ran).toEqual([fixed]);
  });

  it("never runs an edited entry whose recorded input does not hash to the approved edit (neither it nor the input as asked)", async () => {
    const w = world();
    await crashedEditedCall(w, "k1", { input: asked });
    const report = await recoverOutbox(w.gate, { olderThanMs: 0 });
    expect(report.replayed).toBe(0);
    expect(w.ran).toEqual([]);
    expect(await w.journal.getIntent("k1")).toMatchObject({ state: "unknown" });
  });
});
