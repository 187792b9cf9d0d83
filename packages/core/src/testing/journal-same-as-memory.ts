/** The conformance case that compares a store with the memory journal, event for event and MAC for MAC. */
import { expect, it } from "vitest";
import { hashCanonical, sha256Hex } from "../canonical-json.js";
import { createMemoryJournal } from "../journal/memory.js";
import type { IntentInput, Journal } from "../journal/types.js";
import type { JournalUnderTest } from "./describe-journal.js";
import {
  at,
  checkFor,
  editableRequest,
  editCheckFor,
  editedIntent,
  editGrant,
  editOf,
  expectOf,
  grantBy,
  sampleIntent,
  sampleRequest,
} from "./journal-samples.js";

export function itWritesWhatTheMemoryJournalWrites(withJournal: (fn: (j: JournalUnderTest) => Promise<void>) => () => Promise<void>): void {
  it(
    "writes the same audit trail, outbox and approvals as the memory journal, MAC for MAC",
    withJournal(async ({ journal, auditKey }) => {
      const reference = createMemoryJournal({ auditKey });
      const results: unknown[][] = [[], []];
      const stripJournal = (value: unknown): unknown => JSON.parse(JSON.stringify(value ?? null, (k, v: unknown) => (k === "journal" ? undefined : v)));
      const both = async (step: (j: Journal) => Promise<unknown>): Promise<void> => {
        for (const [i, j] of [journal, reference].entries()) {
          let outcome: unknown;
          try {
            outcome = { value: stripJournal(await step(j)) };
          } catch (error) {
            outcome = { error: (error as { code?: unknown }).code ?? "thrown" };
          }
          results[i]!.push(outcome);
        }
      };
      const settleWith = (key: string, intent: IntentInput, when: number) =>
        both((j) =>
          j.settleIntent(key, {
            state: "failed",
            boundary: "effect_failed",
            intentHash: intent.intentHash,
            invocationId: intent.invocationId,
            at: at(when),
            error: { code: "handler_failed", message: "no" },
            audit: { durationMs: 3 },
          }),
        );
      await both((j) =>
        j.append({
          type: "test.event",
          at: at(1),
          invocationId: "inv_x",
          toolId: "notes.add_note",
          principal: "agent",
          tenant: "t",
          data: { nested: { b: 1, a: [1, "2"] } },
        }),
      );
      const one = sampleIntent("same1", { target: undefined });
      const two = sampleIntent("same2", { at: at(10) });
      await both((j) => j.beginIntent(one));
      await both((j) => j.beginIntent(two));
      await both((j) => j.beginIntent(sampleIntent("same1")));
      await both((j) =>
        j.settleIntent("same1", {
          state: "completed",
          boundary: "effect_completed",
          intentHash: one.intentHash,
          invocationId: one.invocationId,
          at: at(20),
          result: { output: { ok: true }, outputHash: hashCanonical({ ok: true }), untrusted: true, findings: [] },
          audit: { result: "done" },
          eventType: "call.late_result",
        }),
      );
      await settleWith("same2", two, 30);
      await settleWith("missing", two, 31);
      await both((j) => j.claimOutbox({ states: ["failed", "pending"], updatedBefore: at(60_000), limit: 1, claimant: "w", at: at(40) }));
      await both((j) => j.beginIntent(two, { retake: { attempts: 2, states: ["failed"] } }));
      const req = sampleRequest("same-r1");
      await both((j) => j.requestApproval(req));
      await both((j) => j.requestApproval({ ...req, id: "same-r2", invocationId: "inv_join", createdAt: at(50) }));
      await both((j) => j.requestApproval(sampleRequest("same-r3", { kind: "output", target: "t3" })));
      await both((j) => j.requestApproval(sampleRequest("same-r3", { inputHash: sha256Hex("another input") })));
      await both((j) => j.requestApproval(sampleRequest("same-r4", { expiresAt: at(100) })));
      await both((j) =>
        j.decideApproval("same-r4", { kind: "grant", approver: "human", via: "owner", tokenHash: sha256Hex("t"), grantExpiresAt: at(500), at: at(200) }),
      );
      await both((j) =>
        j.decideApproval("same-r4", { kind: "grant", approver: "human", via: "owner", tokenHash: sha256Hex("t"), grantExpiresAt: at(500), at: at(200) }),
      );
      await both((j) => j.decideApproval("same-r3", { kind: "deny", approver: "human", via: "owner", reason: "no", at: at(60) }));
      await both((j) =>
        j.decideApproval("same-r1", { kind: "grant", approver: "human", via: "owner", tokenHash: sha256Hex("tok"), grantExpiresAt: at(600_000), at: at(70) }),
      );
      await both((j) => j.beginIntent(sampleIntent("same3"), { grant: checkFor(req, "wrong") }));
      await both((j) => j.consumeGrant(checkFor(req, "tok", { tenant: "other" }), { type: "approval.used", at: at(80), data: {} }));
      await both((j) => j.beginIntent(sampleIntent("same3"), { grant: checkFor(req, "tok") }));
      await both((j) => j.consumeGrant(checkFor(req, "tok"), { type: "approval.used", at: at(90), data: { requestId: req.id } }));
      await both((j) =>
        j.consumeGrant(checkFor(sampleRequest("same-r3", { kind: "output", target: "t3" }), "tok"), { type: "approval.used", at: at(90), data: {} }),
      );
      const r5 = sampleRequest("same-r5");
      await both((j) => j.requestApproval(r5));
      await both((j) =>
        j.decideApproval("same-r5", { kind: "grant", approver: "human", via: "owner", tokenHash: sha256Hex("tok5"), grantExpiresAt: at(600_000), at: at(95) }),
      );
      await both((j) => j.consumeGrant(checkFor(r5, "tok5"), { type: "approval.used", at: at(96), data: { requestId: r5.id } }));
      const r6 = sampleRequest("same-r6", { approvalsNeeded: 2, callRef: "call-6" });
      await both((j) => j.requestApproval(r6));
      await both((j) => j.decideApproval("same-r6", { ...grantBy("op_a", "tok6", at(600_000), at(97)), via: "session" }));
      await both((j) => j.decideApproval("same-r6", grantBy("op_a", "tok6", at(600_000), at(98))));
      await both((j) => j.decideApproval("same-r6", grantBy("op_b", "tok6", at(600_000), at(99))));
      await both((j) => j.requestApproval({ ...r6, id: "same-r7", createdAt: at(100) }));
      const { tokenHash: _none, ...r6Binding } = checkFor(r6, "none");
      await both((j) => j.consumeGrant({ ...r6Binding, byBinding: true }, { type: "approval.used", at: at(101), data: {} }));
      // An approver's edit: the edit and its approvals, the edited intent and its edited-run record.
      const r8 = editableRequest("same-r8", { approvalsNeeded: 2 });
      await both((j) => j.requestApproval(r8));
      const r8Edit = editOf(r8, "same fixed", "op_a");
      await both((j) => j.decideApproval("same-r8", { ...editGrant(r8Edit, expectOf({ ...r8, status: "pending" }), "tok8"), at: at(101) }));
      const r8Edited = (await reference.getApproval("same-r8"))!;
      await both((j) => j.decideApproval("same-r8", { ...grantBy("op_b", "tok8", at(600_000), at(101)), expect: expectOf(r8Edited) }));
      const r8Granted = (await reference.getApproval("same-r8"))!;
      await both((j) => j.beginIntent(editedIntent("same8", r8Granted, { at: at(101) }), { grant: editCheckFor(r8Granted, "tok8") }));
      await both((j) => j.editedRun(r8.toolId, r8.inputHash, r8.principal, r8.tenant));
      expect(await reference.editedRun(r8.toolId, r8.inputHash, r8.principal, r8.tenant)).toMatchObject({ key: "same8", requestId: "same-r8" });
      const rec = (kind: string, id: string, value: unknown, when: number) =>
        both((j) =>
          j.updateRecord(kind, id, (current) => ({ value, event: { type: `${kind}.set`, at: at(when), data: { current: current ?? null } }, result: current })),
        );
      await rec("operator", "op_a", { role: "admin" }, 102);
      await rec("switch", "tool:notes.add_note", { reason: "r" }, 103);
      await rec("operator", "op_a", { role: "viewer" }, 104);
      await both((j) => j.updateRecord("operator", "op_a", () => ({ value: { role: "x" }, event: { type: "no", at: at(105), data: {} }, result: 0 })));
      await both((j) => j.getRecord("operator", "op_a"));
      await both((j) => j.listRecords("operator"));
      await both((j) => j.getIntent("same1"));
      await both((j) => j.getIntent("missing"));
      await both((j) => j.getApproval("same-r1"));
      await both((j) => j.listOutbox());
      await both((j) => j.listOutbox({ states: ["pending"], limit: 5 }));
      await both((j) => j.listApprovals());
      await both((j) => j.listApprovals({ status: ["pending", "expired"], limit: 5 }));
      await both((j) => j.readAudit({ afterSeq: 2, limit: 3 }));
      await both((j) => j.head());
      expect(results[0]).toEqual(results[1]);
      expect(await journal.readAudit()).toEqual(await reference.readAudit());
      expect(await journal.getIntent("same1")).toStrictEqual(await reference.getIntent("same1"));
      expect(await journal.getApproval("same-r3")).toStrictEqual(await reference.getApproval("same-r3"));
      expect(await journal.getApproval("same-r8")).toStrictEqual(await reference.getApproval("same-r8"));
      expect(await journal.getIntent("same8")).toStrictEqual(await reference.getIntent("same8"));
      await reference.close();
    }),
  );
}
