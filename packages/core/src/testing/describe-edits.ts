import { expect, it } from "vitest";
import { hashCanonical, sha256Hex } from "../canonical-json.js";
import { ToolError } from "../errors.js";
import type { ApprovalEditInput, ApprovalRequest, ApprovalRequestInput, GrantCheck, Journal } from "../journal/types.js";
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

/**
 * An approver's edit, as every store keeps it: a decision names the version it saw, an edit is
 * taken only where it may be and only as what it says it is, approvals count for the version they
 * approved, and a grant of an edited request runs the edited input and nothing else, leaving a
 * sealed record of where it ran.
 */

type WithJournal = (fn: (j: JournalUnderTest) => Promise<void>) => () => Promise<void>;

const used = { type: "test.used", at: at(1000), data: {} };
const code = (c: string) => (e: unknown) => ToolError.is(e) && e.code === c;
const stale = (e: unknown) => ToolError.is(e, "approval_invalid") && /changed since you looked/.test(e.message);

/** Nothing written: the head did not move, and the request is as it was. */
async function unchanged(journal: Journal, id: string, run: () => Promise<unknown>, refusal: (e: unknown) => boolean): Promise<void> {
  const head = await journal.head();
  const before = await journal.getApproval(id);
  await expect(run()).rejects.toSatisfy(refusal);
  expect(await journal.head()).toEqual(head);
  expect(await journal.getApproval(id)).toEqual(before);
}

/** Request `id` asked, then edited and granted by op_ana (one approver needed unless overridden). */
async function editedAndGranted(journal: Journal, id: string, overrides: Partial<ApprovalRequestInput> = {}): Promise<ApprovalRequest> {
  const asked = (await journal.requestApproval(editableRequest(id, overrides))).request;
  return (await journal.decideApproval(id, editGrant(editOf(asked, `fixed ${id}`), expectOf(asked)))).request;
}

export function itApprovesEdits(withJournal: WithJournal): void {
  it(
    "refuses a decision that names a version or preview it no longer is, and a grant without one once the request was edited, writing nothing",
    withJournal(async ({ journal }) => {
      const asked = (await journal.requestApproval(editableRequest("r1", { approvalsNeeded: 2 }))).request;
      for (const expectNow of [
        { version: 1, previewHash: asked.previewHash },
        { version: 0, previewHash: sha256Hex("another preview") },
      ]) {
        await unchanged(journal, "r1", () => journal.decideApproval("r1", { ...grantBy("op_bo"), expect: expectNow }), stale);
      }
      const edited = (await journal.decideApproval("r1", editGrant(editOf(asked, "fixed"), expectOf(asked)))).request;
      expect(edited).toMatchObject({ status: "pending", edit: { version: 1 } });
      await unchanged(journal, "r1", () => journal.decideApproval("r1", grantBy("op_bo")), stale);
      await unchanged(journal, "r1", () => journal.decideApproval("r1", { ...grantBy("op_bo"), expect: expectOf(asked) }), stale);
      await unchanged(
        journal,
        "r1",
        () => journal.decideApproval("r1", { ...grantBy("op_bo"), expect: { ...expectOf(edited), previewHash: asked.previewHash } }),
        stale,
      );
      // A second edit made from the version before the first: the approver did not see the first.
      const late = editGrant(editOf(asked, "mine", "op_bo"), expectOf(edited));
      await unchanged(journal, "r1", () => journal.decideApproval("r1", late), stale);
      const granted = await journal.decideApproval("r1", { ...grantBy("op_bo"), expect: expectOf(edited) });
      expect(granted.request).toMatchObject({ status: "granted", edit: { version: 1 } });
      // An unedited request keeps today's decision (no expect), and takes a right one.
      await journal.requestApproval(editableRequest("r2"));
      expect((await journal.decideApproval("r2", { ...grantBy("op_bo"), expect: expectOf((await journal.getApproval("r2"))!) })).request.status).toBe(
        "granted",
      );
    }),
  );

  it(
    "refuses an edit of a request that may not be edited, or one that is not what it says, writing nothing",
    withJournal(async ({ journal }) => {
      const cases: [string, Record<string, unknown>, (edit: ApprovalEditInput) => ApprovalEditInput, string][] = [
        ["held output", { kind: "output" }, (e) => e, "edit_refused"],
        ["edits refused", { editable: false }, (e) => e, "edit_refused"],
        ["no editable field", { editable: [] }, (e) => e, "edit_refused"],
        ["asked before edits", { editable: undefined }, (e) => e, "edit_refused"],
        ["no input", { input: undefined }, (e) => e, "edit_refused"],
        ["input redacted", { inputRedacted: true }, (e) => e, "edit_refused"],
        ["input redaction unknown", { inputRedacted: undefined }, (e) => e, "edit_refused"],
        ["no change", {}, (e) => ({ ...e, input: { text: "note x" }, inputHash: hashCanonical({ text: "note x" }) }), "edit_refused"],
        ["hash of another input", {}, (e) => ({ ...e, inputHash: hashCanonical({ text: "other" }) }), "approval_invalid"],
        ["not JSON", {}, (e) => ({ ...e, input: { n: Number.NaN } }), "approval_invalid"],
        ["from another version", {}, (e) => ({ ...e, fromInputHash: sha256Hex("v0?") }), "approval_invalid"],
        ["made by someone else", {}, (e) => ({ ...e, by: "op_bo" }), "approval_invalid"],
        ["authenticated otherwise", {}, (e) => ({ ...e, via: "session" }), "approval_invalid"],
        ["malformed preview", {}, (e) => ({ ...e, preview: { summary: 5 } as never }), "approval_invalid"],
        ["malformed changes", {}, (e) => ({ ...e, changes: [{ before: 1 }] as never }), "approval_invalid"],
      ];
      for (const [what, overrides, change, refusal] of cases) {
        const id = `r-${what.replaceAll(" ", "-")}`;
        const request = { ...editableRequest(id, { input: { text: "note x" }, inputHash: hashCanonical({ text: "note x" }) }), ...overrides };
        await journal.requestApproval(request as ApprovalRequestInput);
        const edit = editOf(request, "fixed");
        const decision = { ...editGrant(edit, expectOf({ ...request, status: "pending" })), edit: change(edit) };
        await unchanged(journal, id, () => journal.decideApproval(id, decision), code(refusal));
        expect({ what, edit: (await journal.getApproval(id))?.edit }).toEqual({ what, edit: undefined });
      }
    }),
  );

  it(
    "refuses an edit of a request no longer pending (granted, denied, consumed) or expired, and the edit is not kept",
    withJournal(async ({ journal }) => {
      const granted = await editedAndGranted(journal, "r1");
      const again = editGrant(editOf(granted, "again", "op_bo", granted.edit!.inputHash), expectOf(granted));
      await unchanged(journal, "r1", () => journal.decideApproval("r1", again), code("approval_consumed"));
      const denied = (await journal.requestApproval(editableRequest("r2"))).request;
      await journal.decideApproval("r2", { kind: "deny", approver: "op_bo", via: "owner", reason: "no", at: at(500) });
      await unchanged(journal, "r2", () => journal.decideApproval("r2", editGrant(editOf(denied, "fixed"), expectOf(denied))), code("approval_consumed"));
      const late = (await journal.requestApproval(editableRequest("r3", { expiresAt: at(100) }))).request;
      await expect(journal.decideApproval("r3", editGrant(editOf(late, "fixed"), expectOf(late)))).rejects.toSatisfy(code("approval_expired"));
      expect(await journal.getApproval("r3")).toMatchObject({ status: "expired" });
      expect((await journal.getApproval("r3"))?.edit).toBeUndefined();
      expect((await journal.readAudit()).some((e) => e.type === "approval.edited" && e.data["requestId"] !== "r1")).toBe(false);
    }),
  );

  it(
    "keeps an edit as the request's next version: approval.edited then approval.granted, both inputs in the row, approvals named by version",
    withJournal(async ({ journal }) => {
      const asked = (await journal.requestApproval(editableRequest("r1"))).request;
      const head = await journal.head();
      const edit = editOf(asked, "fixed");
      const { request } = await journal.decideApproval("r1", editGrant(edit, expectOf(asked)));
      expect(request).toMatchObject({ status: "granted", input: asked.input, inputHash: asked.inputHash, previewHash: asked.previewHash });
      expect(request.edit).toEqual({ ...edit, version: 1 });
      expect(request.approvals).toEqual([{ by: "op_ana", via: "owner", at: at(500), version: 1 }]);
      expect(await journal.getApproval("r1")).toEqual(request);
      const events = await journal.readAudit({ afterSeq: head.seq });
      expect(events.map((e) => e.type)).toEqual(["approval.edited", "approval.granted"]);
      expect(events[0]!.data).toEqual({
        requestId: "r1",
        version: 1,
        approver: "op_ana",
        via: "owner",
        fromInputHash: asked.inputHash,
        inputHash: edit.inputHash,
        previewHash: edit.previewHash,
        target: null,
        changes: edit.changes,
      });
      expect(events[1]!.data).toMatchObject({ requestId: "r1", complete: true, approvals: 1, version: 1 });
    }),
  );

  it(
    "counts approvals per version: an edit needs a second, different approver of the edited version, and the editor's own credential is not one",
    withJournal(async ({ journal }) => {
      // The editor approves once; the same person or one standing for them again is refused.
      const a = (await journal.requestApproval(editableRequest("ra", { approvalsNeeded: 2 }))).request;
      const v1 = (await journal.decideApproval("ra", editGrant(editOf(a, "fixed"), expectOf(a)))).request;
      expect(v1).toMatchObject({ status: "pending", edit: { version: 1 } });
      await unchanged(journal, "ra", () => journal.decideApproval("ra", { ...grantBy("op_ana"), expect: expectOf(v1) }), code("approval_invalid"));
      const linked = { ...grantBy("op_cy"), linked: ["op_ana"], expect: expectOf(v1) };
      await unchanged(journal, "ra", () => journal.decideApproval("ra", linked), code("approval_invalid"));
      expect((await journal.decideApproval("ra", { ...grantBy("op_bo"), expect: expectOf(v1) })).request.status).toBe("granted");

      // An approval of version 0 stops counting once another approver edits it; it stays as history.
      const b = (await journal.requestApproval(editableRequest("rb", { approvalsNeeded: 2 }))).request;
      expect((await journal.decideApproval("rb", grantBy("op_ana"))).request.status).toBe("pending");
      const edited = (await journal.decideApproval("rb", editGrant(editOf(b, "fixed", "op_bo"), expectOf(b)))).request;
      expect(edited.status).toBe("pending");
      expect(edited.approvals).toEqual([
        { by: "op_ana", via: "owner", at: at(500) },
        { by: "op_bo", via: "owner", at: at(500), version: 1 },
      ]);
      expect((await journal.readAudit()).at(-1)?.data).toMatchObject({ complete: false, approvals: 1, approvalsNeeded: 2, version: 1 });
      await unchanged(
        journal,
        "rb",
        () => journal.decideApproval("rb", { ...grantBy("op_cy"), linked: ["op_bo"], expect: expectOf(edited) }),
        code("approval_invalid"),
      );
      // A second edit restarts the count again: only its editor has approved version 2.
      const v2 = (await journal.decideApproval("rb", editGrant(editOf(b, "again", "op_ana", edited.edit!.inputHash), expectOf(edited)))).request;
      expect(v2).toMatchObject({
        status: "pending",
        edit: { version: 2, fromInputHash: edited.edit!.inputHash, changes: [{ path: "/text", after: "again" }] },
      });
      const done = (await journal.decideApproval("rb", { ...grantBy("op_bo"), expect: expectOf(v2) })).request;
      expect(done.status).toBe("granted");
      expect(done.approvals?.map((x) => [x.by, x.version ?? 0])).toEqual([
        ["op_ana", 0],
        ["op_bo", 1],
        ["op_ana", 2],
        ["op_bo", 2],
      ]);
    }),
  );

  it(
    "consumes an edited grant only by a check that names the edit, and an unedited grant only by one that names none; a mismatch leaves the grant usable",
    withJournal(async ({ journal }) => {
      const request = await editedAndGranted(journal, "r1");
      const right = editCheckFor(request);
      const wrong: [GrantCheck, string][] = [
        [checkFor(request, "tok"), "edit"],
        [{ ...right, edit: { ...right.edit!, inputHash: request.inputHash } }, "edit"],
        [{ ...right, edit: { ...right.edit!, previewHash: request.previewHash } }, "edit"],
        [{ ...right, edit: { inputHash: "", previewHash: "" } }, "edit"],
        // The caller presenting the edited input: the binding is the call as asked.
        [{ ...right, binding: { ...right.binding, inputHash: request.edit!.inputHash } }, "inputHash"],
        [{ ...right, binding: { ...right.binding, previewHash: request.edit!.previewHash } }, "previewHash"],
      ];
      for (const [check, field] of wrong) expect(await journal.consumeGrant(check, used)).toEqual({ status: "mismatch", mismatched: [field] });
      expect((await journal.getApproval("r1"))?.status).toBe("granted");

      await journal.requestApproval(sampleRequest("r2"));
      await journal.decideApproval("r2", grantBy("op_ana"));
      const plain = checkFor(sampleRequest("r2"), "tok");
      expect(await journal.consumeGrant({ ...plain, edit: right.edit! }, used)).toEqual({ status: "mismatch", mismatched: ["edit"] });
      expect((await journal.consumeGrant(plain, used)).status).toBe("consumed");
      expect((await journal.consumeGrant(right, used)).status).toBe("consumed");
    }),
  );

  it(
    "never runs the input as asked (or any other) with a grant for the edited input, nor an intent naming an edit without that grant, writing nothing",
    withJournal(async ({ journal }) => {
      const request = await editedAndGranted(journal, "r1");
      const grant = editCheckFor(request);
      const other = await editedAndGranted(journal, "r2");
      await journal.requestApproval(sampleRequest("r3"));
      await journal.decideApproval("r3", grantBy("op_ana"));
      const { edited: _e, ...unnamed } = editedIntent("k1", request);
      const attempts: [string, () => Promise<unknown>][] = [
        ["the input as asked", () => journal.beginIntent(sampleIntent("k1", { inputHash: request.inputHash, input: request.input }), { grant })],
        ["the edited input, unnamed", () => journal.beginIntent({ ...unnamed, intentHash: hashCanonical(unnamed) }, { grant })],
        ["another input, named", () => journal.beginIntent(editedIntent("k1", request, { inputHash: sha256Hex("other") }), { grant })],
        ["named for another request", () => journal.beginIntent(editedIntent("k1", other), { grant })],
        ["asked as another input", () => journal.beginIntent(editedIntent("k1", { ...request, inputHash: sha256Hex("x") }), { grant })],
        ["named, without a grant", () => journal.beginIntent(editedIntent("k1", request))],
        ["named, with an unedited grant", () => journal.beginIntent(editedIntent("k1", request), { grant: checkFor(sampleRequest("r3"), "tok") })],
      ];
      const asAsked = sampleIntent("k1", { inputHash: request.inputHash, input: request.input });
      expect(await journal.beginIntent(asAsked, { grant: checkFor(request, "tok") })).toEqual({
        status: "grant_refused",
        outcome: { status: "mismatch", mismatched: ["edit"] },
      });
      for (const [what, attempt] of attempts) {
        const head = await journal.head();
        await expect(attempt(), what).rejects.toSatisfy(code("approval_invalid"));
        expect(await journal.head(), what).toEqual(head);
      }
      expect(await journal.getIntent("k1")).toBeUndefined();
      expect((await journal.getApproval("r1"))?.status).toBe("granted");
      expect((await journal.getApproval("r3"))?.status).toBe("granted");
      expect(await journal.editedRun(request.toolId, request.inputHash, request.principal, request.tenant)).toBeUndefined();

      const started = await journal.beginIntent(editedIntent("k1", request), { grant });
      expect(started).toMatchObject({
        status: "started",
        entry: { key: "k1", inputHash: request.edit!.inputHash, grantId: "r1", edited: { requestId: "r1" } },
      });
      expect((await journal.getApproval("r1"))?.status).toBe("consumed");
      expect((await journal.beginIntent(editedIntent("k2", request), { grant })).status).toBe("grant_refused");
    }),
  );

  it(
    "seals where an edited grant ran, found only by the call as asked (tool, input, principal, tenant), and writable by nobody else",
    withJournal(async ({ journal }) => {
      const request = await editedAndGranted(journal, "r1");
      const head = await journal.head();
      const started = await journal.beginIntent(editedIntent("k1", request, { at: at(2000) }), { grant: editCheckFor(request) });
      expect(started.status).toBe("started");
      const events = await journal.readAudit({ afterSeq: head.seq });
      expect(events.map((e) => e.type)).toEqual(["approval.consumed", "intent.edited", "intent.recorded"]);
      expect(events[1]!.data).toEqual({ key: "k1", requestId: "r1", askedInputHash: request.inputHash, inputHash: request.edit!.inputHash });
      expect(events[2]!.data).toMatchObject({
        key: "k1",
        inputHash: request.edit!.inputHash,
        grantId: "r1",
        edited: { requestId: "r1", askedInputHash: request.inputHash },
      });
      const { toolId, inputHash, principal, tenant } = request;
      expect(await journal.editedRun(toolId, inputHash, principal, tenant)).toEqual({ key: "k1", requestId: "r1", at: at(2000) });
      for (const [t, i, p, n] of [
        ["notes.other", inputHash, principal, tenant],
        [toolId, request.edit!.inputHash, principal, tenant],
        [toolId, inputHash, "agent-2", tenant],
        [toolId, inputHash, principal, "tenant-b"],
      ] as const) {
        expect(await journal.editedRun(t, i, p, n)).toBeUndefined();
      }
      const id = hashCanonical([toolId, inputHash, principal, tenant]);
      let ran = false;
      const forge = () =>
        journal.updateRecord("edited-run", id, () => ((ran = true), { value: { key: "k9", requestId: "r9", at: at() }, event: used, result: 0 }));
      await expect(forge()).rejects.toSatisfy(code("config_invalid"));
      expect(ran).toBe(false);
      expect(await journal.editedRun(toolId, inputHash, principal, tenant)).toEqual({ key: "k1", requestId: "r1", at: at(2000) });
    }),
  );
}
