import { expect, it } from "vitest";
import { sha256Hex } from "../canonical-json.js";
import { ToolError } from "../errors.js";
import type { ApprovalBinding, ApprovalRequestInput, GrantCheck, Journal } from "../journal/types.js";
import type { JournalUnderTest } from "./describe-journal.js";
import { itApprovesEdits } from "./describe-edits.js";
import { at, checkFor, grantBy, sampleIntent, sampleRequest } from "./journal-samples.js";

/**
 * Who decided, how many had to, and what a retry finds: every store records the approver's id and
 * how they were authenticated, holds a two-person request pending until a second, different
 * approver grants it, hands a retry the granted request with its exact binding, and consumes a
 * grant by binding only when the whole binding is equal and the grant is live.
 */

type WithJournal = (fn: (j: JournalUnderTest) => Promise<void>) => () => Promise<void>;

const BINDING = ["toolId", "inputHash", "principal", "tenant", "previewHash"] as const satisfies readonly (keyof ApprovalBinding)[];
const used = { type: "test.used", at: at(1000), data: {} };
/** The check the gate builds for a retry: no token, the call's own binding. */
const byBinding = (request: ApprovalRequestInput, overrides: Partial<ApprovalBinding> = {}, when = at(1000)): GrantCheck => {
  const { tokenHash: _token, ...check } = checkFor(request, "", overrides, when);
  return { ...check, byBinding: true };
};
const invalid = (e: unknown) => ToolError.is(e, "approval_invalid");
const granted = async (journal: Journal, id: string, overrides: Partial<ApprovalRequestInput> = {}) => {
  const request = sampleRequest(id, overrides);
  await journal.requestApproval(request);
  await journal.decideApproval(id, grantBy("op_ana"));
  return request;
};

export function itDecidesApprovals(withJournal: WithJournal): void {
  itApprovesEdits(withJournal);

  it(
    "refuses the same approver twice on a two-person request, writing nothing, and grants on a second, different one",
    withJournal(async ({ journal }) => {
      const req = sampleRequest("r2p", { approvalsNeeded: 2, callRef: "call_77" });
      await journal.requestApproval(req);
      const first = await journal.decideApproval("r2p", grantBy("op_ana", "t1"));
      expect(first.request).toMatchObject({ status: "pending", approvals: [{ by: "op_ana", via: "owner", at: at(500) }] });
      expect(first.request.grantTokenHash).toBeUndefined();
      expect((await journal.readAudit()).at(-1)).toMatchObject({ type: "approval.granted", data: { approver: "op_ana", via: "owner", complete: false } });
      expect((await journal.consumeGrant(checkFor(req, "t1"), used)).status).toBe("not_granted");
      expect((await journal.consumeGrant(byBinding(req), used)).status).toBe("not_granted");
      const head = await journal.head();
      await expect(journal.decideApproval("r2p", grantBy("op_ana", "t2"))).rejects.toSatisfy(invalid);
      await expect(journal.decideApproval("r2p", grantBy("op_ana", "t2"))).rejects.toThrow(/second, different approver/);
      expect(await journal.head()).toEqual(head);
      const second = await journal.decideApproval("r2p", { ...grantBy("op_bo", "t2"), via: "session" });
      expect(second.request).toMatchObject({ status: "granted", decidedBy: "op_bo", decidedVia: "session", callRef: "call_77", approvalsNeeded: 2 });
      expect(second.request.approvals?.map((a) => a.by)).toEqual(["op_ana", "op_bo"]);
      expect((await journal.readAudit()).at(-1)).toMatchObject({ type: "approval.granted", data: { approver: "op_bo", via: "session", complete: true } });
      expect(await journal.getApproval("r2p")).toEqual(second.request);
      expect((await journal.consumeGrant(checkFor(req, "t2"), used)).status).toBe("consumed");
    }),
  );

  it(
    "refuses a request it could not read back (approvalsNeeded other than 1 or 2, a callRef that is not a short string, editable fields or redaction of another shape), writing nothing",
    withJournal(async ({ journal }) => {
      for (const approvalsNeeded of [0, 3, 1.5, "2"]) {
        await expect(journal.requestApproval(sampleRequest("r1", { approvalsNeeded } as never))).rejects.toSatisfy((e) => ToolError.is(e, "config_invalid"));
      }
      for (const odd of [{ editable: true }, { editable: "/to" }, { editable: ["/to", 1] }, { inputRedacted: "no" }]) {
        await expect(journal.requestApproval(sampleRequest("r1", odd as never))).rejects.toSatisfy((e) => ToolError.is(e, "config_invalid"));
      }
      for (const callRef of [42, "x".repeat(257)]) {
        await expect(journal.requestApproval(sampleRequest("r1", { callRef } as never))).rejects.toSatisfy((e) => ToolError.is(e, "invalid_input"));
      }
      expect((await journal.head()).seq).toBe(0);
      expect(await journal.listApprovals()).toEqual([]);
    }),
  );

  it(
    "refuses a second approval whose approver stands for the first (a session opened with a link the first approver issued), either way round",
    withJournal(async ({ journal }) => {
      for (const [id, first, second] of [
        ["r-a", grantBy("op_ada"), { ...grantBy("op_bob"), linked: ["op_ada"] }],
        ["r-b", { ...grantBy("op_bob"), linked: ["op_ada"] }, grantBy("op_ada")],
        ["r-c", { ...grantBy("op_bob"), linked: ["op_ada"] }, { ...grantBy("op_cy"), linked: ["op_ada"] }],
      ] as const) {
        await journal.requestApproval(sampleRequest(id, { approvalsNeeded: 2 }));
        expect((await journal.decideApproval(id, first)).request.status).toBe("pending");
        const head = await journal.head();
        await expect(journal.decideApproval(id, second)).rejects.toSatisfy(invalid);
        expect(await journal.head()).toEqual(head);
      }
      expect((await journal.getApproval("r-a"))?.approvals).toEqual([{ by: "op_ada", via: "owner", at: at(500) }]);
      expect((await journal.getApproval("r-b"))?.approvals).toEqual([{ by: "op_bob", via: "owner", at: at(500), linked: ["op_ada"] }]);
      await expect(journal.decideApproval("r-a", { ...grantBy("op_dee"), linked: [""] })).rejects.toSatisfy(invalid);
      expect((await journal.decideApproval("r-a", { ...grantBy("op_dee"), linked: ["owner"] })).request.status).toBe("granted");
    }),
  );

  it(
    "refuses a decision that does not name its approver and how they were authenticated",
    withJournal(async ({ journal }) => {
      await journal.requestApproval(sampleRequest("r1"));
      const head = await journal.head();
      const bad = [
        { ...grantBy(""), via: "owner" },
        { ...grantBy("op_ana"), via: "" },
        { ...grantBy("op_ana"), via: undefined },
        { kind: "deny", approver: "op_ana", reason: "no", at: at(500) },
      ];
      for (const decision of bad) await expect(journal.decideApproval("r1", decision as never)).rejects.toSatisfy(invalid);
      expect(await journal.head()).toEqual(head);
      const denied = await journal.decideApproval("r1", { kind: "deny", approver: "op_bo", via: "host", reason: "no", at: at(500) });
      expect(denied.request).toMatchObject({ status: "denied", decidedBy: "op_bo", decidedVia: "host", reason: "no" });
    }),
  );

  it(
    "hands a retry the granted, unexpired request with the same binding; never an expired, consumed or differently bound one",
    withJournal(async ({ journal }) => {
      const req = await granted(journal, "r1");
      const retry = await journal.requestApproval({ ...req, id: "r1-retry", invocationId: "inv_retry", createdAt: at(1000) });
      expect(retry).toMatchObject({ created: false, request: { id: "r1", status: "granted" } });
      for (const field of BINDING) {
        const other = await journal.requestApproval({ ...req, id: `r1-${field}`, [field]: sha256Hex(field), createdAt: at(1000) });
        expect(other).toMatchObject({ created: true, request: { id: `r1-${field}`, status: "pending" } });
      }
      // Once the grant has expired a retry makes a new request.
      expect(await journal.requestApproval({ ...req, id: "r1-late", createdAt: at(600_000) })).toMatchObject({ created: true, request: { id: "r1-late" } });
      // Asking for two approvers does not join a grant one approver made, nor a request needing one.
      expect(await journal.requestApproval({ ...req, id: "r1-two", approvalsNeeded: 2, createdAt: at(1000) })).toMatchObject({ created: true });

      const req2 = await granted(journal, "r2");
      await journal.beginIntent(sampleIntent("k2"), { grant: checkFor(req2, "tok") });
      expect(await journal.requestApproval({ ...req2, id: "r2-after", createdAt: at(1000) })).toMatchObject({ created: true });
    }),
  );

  it(
    "consumes a grant by binding only when every binding field is equal and the grant is granted, unexpired and unconsumed",
    withJournal(async ({ journal }) => {
      const req = await granted(journal, "r1");
      for (const field of BINDING) {
        expect(await journal.consumeGrant(byBinding(req, { [field]: sha256Hex("other") }), used)).toEqual({ status: "mismatch", mismatched: [field] });
      }
      const partial = byBinding(req);
      const { previewHash: _p, ...withoutPreview } = partial.binding;
      expect((await journal.consumeGrant({ ...partial, binding: withoutPreview as ApprovalBinding }, used)).status).toBe("mismatch");
      expect((await journal.consumeGrant(byBinding(req, {}, at(600_000)), used)).status).toBe("expired");
      expect((await journal.consumeGrant(byBinding(req, {}, "not a time"), used)).status).toBe("expired");
      // Without byBinding, a check with no token is a token mismatch.
      const { tokenHash: _t, ...tokenless } = checkFor(req, "tok");
      expect(await journal.consumeGrant(tokenless, used)).toEqual({ status: "mismatch", mismatched: ["token"] });
      expect((await journal.getApproval("r1"))?.status).toBe("granted");
      expect((await journal.consumeGrant(byBinding(req), used)).status).toBe("consumed");
      expect((await journal.consumeGrant(byBinding(req), used)).status).toBe("already_consumed");

      const pending = sampleRequest("r2");
      await journal.requestApproval(pending);
      expect((await journal.consumeGrant(byBinding(pending), used)).status).toBe("not_granted");
      await journal.decideApproval("r2", { kind: "deny", approver: "op_ana", via: "owner", reason: "no", at: at(500) });
      expect((await journal.consumeGrant(byBinding(pending), used)).status).toBe("denied");
      const started = await journal.beginIntent(sampleIntent("k3"), { grant: byBinding(pending) });
      expect(started.status).toBe("grant_refused");
      expect(await journal.getIntent("k3")).toBeUndefined();
    }),
  );

  it(
    "refuses a grant by binding when a binding field is empty on both sides (a binding must be whole)",
    withJournal(async ({ journal }) => {
      const req = await granted(journal, "r1", { tenant: "" });
      expect(await journal.consumeGrant(byBinding(req), used)).toEqual({ status: "mismatch", mismatched: ["tenant"] });
      expect((await journal.consumeGrant(checkFor(req, "tok"), used)).status).toBe("consumed");
    }),
  );
}
