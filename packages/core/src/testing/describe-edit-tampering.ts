import { expect, it } from "vitest";
import { hashCanonical } from "../canonical-json.js";
import { ToolError } from "../errors.js";
import { verifyJournalRows } from "../journal/operations.js";
import type { ApprovalRequest } from "../journal/types.js";
import type { TamperableJournal } from "./describe-tampering.js";
import { editableRequest, editCheckFor, editedIntent, editGrant, editOf, expectOf, grantBy, sampleIntent } from "./journal-samples.js";

/**
 * An edited request's row and the edited-run record carry their own proof like every row: the
 * edit's input or hash changed, the edit removed, an earlier version put back, an approval moved to
 * another version, a record forged, edited, restated or deleted — each is `journal_tampered`.
 */

type WithJournal = (fn: (j: TamperableJournal) => Promise<void>) => () => Promise<void>;
type Row = Record<string, unknown>;

const tamperedWith = (problem?: string) => (e: unknown) => ToolError.is(e, "journal_tampered") && (problem === undefined || e.details?.["problem"] === problem);
const rewritten = (text: string, change: (row: Row) => void): string => {
  const envelope = JSON.parse(text) as { row: Row };
  change(envelope.row);
  return JSON.stringify(envelope);
};

export function itRefusesTamperedEdits(withJournal: WithJournal): void {
  it(
    "refuses an edited request whose edit's input or hash was changed, whose edit was removed, or whose approval was moved to another version",
    withJournal(async ({ journal, raw }) => {
      const asked = (await journal.requestApproval(editableRequest("r1", { approvalsNeeded: 2 }))).request;
      const edited = (await journal.decideApproval("r1", editGrant(editOf(asked, "fixed"), expectOf(asked)))).request;
      const sealed = (await raw.request("r1"))!;
      const put = (text: string) => raw.putRequest({ id: "r1", status: "pending", inputHash: asked.inputHash, text });
      const evil = { text: "evil" };
      const changes: [string, (row: Row) => void][] = [
        ["edit.input", (row) => void ((row["edit"] as Row)["input"] = evil)],
        ["edit.input and its hash", (row) => void Object.assign(row["edit"] as Row, { input: evil, inputHash: hashCanonical(evil) })],
        ["edit.inputHash back to the input as asked", (row) => void ((row["edit"] as Row)["inputHash"] = asked.inputHash)],
        ["edit removed", (row) => void delete row["edit"]],
        ["approval's version", (row) => void ((row["approvals"] as Row[])[0]!["version"] = 0)],
      ];
      for (const [what, change] of changes) {
        await put(rewritten(sealed, change));
        const head = await journal.head();
        await expect(journal.getApproval("r1"), what).rejects.toSatisfy(tamperedWith("seal"));
        await expect(journal.decideApproval("r1", { ...grantBy("op_bo"), expect: expectOf(edited) }), what).rejects.toSatisfy(tamperedWith());
        expect(await journal.head(), what).toEqual(head);
        expect((await verifyJournalRows(journal)).ok, what).toBe(false);
        await put(sealed);
      }
      expect(await journal.getApproval("r1")).toEqual(edited);
    }),
  );

  it(
    "refuses an earlier version of an edited request put back (the input as asked, granted; an edit before the last)",
    withJournal(async ({ journal, raw }) => {
      const asked = (await journal.requestApproval(editableRequest("r1", { approvalsNeeded: 2 }))).request;
      const v0 = (await raw.request("r1"))!;
      const v1 = (await journal.decideApproval("r1", editGrant(editOf(asked, "fixed"), expectOf(asked)))).request;
      const v1Text = (await raw.request("r1"))!;
      const granted = (await journal.decideApproval("r1", { ...grantBy("op_bo"), expect: expectOf(v1) })).request;
      for (const [text, status] of [
        [v0, "pending"],
        [v1Text, "pending"],
      ] as const) {
        await raw.putRequest({ id: "r1", status, inputHash: asked.inputHash, text });
        await expect(journal.getApproval("r1")).rejects.toSatisfy(tamperedWith("restated"));
        const head = await journal.head();
        await expect(journal.beginIntent(editedIntent("k1", granted), { grant: editCheckFor(granted) })).rejects.toSatisfy(tamperedWith("restated"));
        expect(await journal.head()).toEqual(head);
      }
      expect(await journal.getIntent("k1")).toBeUndefined();
    }),
  );

  it(
    "refuses an edited-run record edited, restated, copied to another call or deleted behind the journal's back",
    withJournal(async ({ journal, raw }) => {
      const run = async (id: string, key: string): Promise<ApprovalRequest> => {
        const asked = (await journal.requestApproval(editableRequest(id, { input: { text: "same" }, inputHash: hashCanonical({ text: "same" }) }))).request;
        const request = (await journal.decideApproval(id, editGrant(editOf(asked, `fixed ${id}`), expectOf(asked)))).request;
        expect((await journal.beginIntent(editedIntent(key, request), { grant: editCheckFor(request) })).status).toBe("started");
        return request;
      };
      const first = await run("r1", "k1");
      const { toolId, inputHash, principal, tenant } = first;
      const id = hashCanonical([toolId, inputHash, principal, tenant]);
      const found = () => journal.editedRun(toolId, inputHash, principal, tenant);
      const older = (await raw.record("edited-run", id))!;
      await run("r2", "k2");
      expect(await found()).toMatchObject({ key: "k2", requestId: "r2" });
      const latest = (await raw.record("edited-run", id))!;

      await raw.putRecord({ kind: "edited-run", id, text: rewritten(latest, (row) => void ((row["value"] as Row)["key"] = "k1")) });
      await expect(found()).rejects.toSatisfy(tamperedWith("seal"));
      await raw.putRecord({ kind: "edited-run", id, text: older });
      await expect(found()).rejects.toSatisfy(tamperedWith("restated"));
      await raw.putRecord({ kind: "edited-run", id, text: latest });
      expect(await found()).toMatchObject({ key: "k2" });

      const elsewhere = hashCanonical([toolId, inputHash, "agent-2", tenant]);
      await raw.putRecord({ kind: "edited-run", id: elsewhere, text: latest });
      await expect(journal.editedRun(toolId, inputHash, "agent-2", tenant)).rejects.toSatisfy(tamperedWith());
      await raw.deleteRecord("edited-run", elsewhere);

      await raw.deleteRecord("edited-run", id);
      await expect(found()).rejects.toSatisfy(tamperedWith("missing"));
      expect((await verifyJournalRows(journal)).problems).toContainEqual(
        expect.objectContaining({ kind: "record", id: `edited-run:${id}`, problem: "missing" }),
      );
      // A tampered record stops the next edited run of the same call too: nothing written.
      const asked = (await journal.requestApproval(editableRequest("r3", { input: { text: "same" }, inputHash }))).request;
      const request = (await journal.decideApproval("r3", editGrant(editOf(asked, "fixed r3"), expectOf(asked)))).request;
      const head = await journal.head();
      await expect(journal.beginIntent(editedIntent("k3", request), { grant: editCheckFor(request) })).rejects.toSatisfy(tamperedWith("missing"));
      expect(await journal.head()).toEqual(head);
      expect((await journal.getApproval("r3"))?.status).toBe("granted");
      expect(await journal.beginIntent(sampleIntent("k4"))).toMatchObject({ status: "started" });
    }),
  );
}
