// The values an approver's edit changed are part of the input as asked: the audit export shows them
// only to someone who may decide the request (as the approvals page and the edit pages do); any
// other signed-in operator gets the changed paths.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { pendingRequest, signedIn } from "./fixtures/browser.js";
import { call, openDesk, type Desk } from "./fixtures/desk.js";

let desk: Desk;
beforeEach(async () => {
  desk = await openDesk();
});
afterEach(() => desk.close());

const memo = { to: ["ops@example.test", "wrong@example.test"], subject: "deploy", body: "the body only deciders may read" };

async function editedAndRan(): Promise<string> {
  const id = await pendingRequest(desk, memo);
  const owner = desk.gate.authority.owner();
  const request = (await desk.gate.approvals.get(id))!;
  const expect0 = { version: 0, previewHash: request.previewHash };
  const edited = { ...memo, to: ["ops@example.test"], body: "the edited body only deciders may read" };
  const shown = await desk.gate.approvals.previewEdit(id, { by: owner, input: edited, expect: expect0 });
  await desk.gate.approvals.grant(id, { by: owner, expect: expect0, edit: { input: shown.input, previewHash: shown.previewHash } });
  expect((await desk.gate.invoke("desk.send_memo", memo, call)).status).toBe("ok");
  return id;
}

const editedLines = (text: string) => text.split("\n").filter((l) => l.includes('"approval.edited"'));

describe("the audit export of an edit", () => {
  it("a viewer and an approver outside the request's scope get the changed paths, not the values as asked or edited", async () => {
    await editedAndRan();
    const vera = await signedIn(desk, "vera", "viewer");
    const sam = await signedIn(desk, "sam", "approver", { tools: ["desk.write_note"] });
    for (const who of [vera, sam]) {
      const response = await who.get("/audit/export");
      expect(response.status).toBe(200);
      const text = await response.text();
      const lines = editedLines(text);
      expect(lines).toHaveLength(1);
      expect(text).not.toContain("only deciders may read");
      const data = (JSON.parse(lines[0]!) as { data: { changes: unknown; changesWithheld?: boolean } }).data;
      expect([data.changes, data.changesWithheld]).toEqual([[{ path: "/body" }, { path: "/to" }], true]);
    }
  });

  it("an approver who may decide it gets the changes whole", async () => {
    await editedAndRan();
    const alice = await signedIn(desk, "alice", "approver");
    const lines = editedLines(await (await alice.get("/audit/export")).text());
    const data = (JSON.parse(lines[0]!) as { data: { changes: { path: string; before?: unknown; after?: unknown }[]; changesWithheld?: boolean } }).data;
    expect(data.changesWithheld).toBeUndefined();
    expect(data.changes.find((c) => c.path === "/body")).toEqual({
      path: "/body",
      before: memo.body,
      after: "the edited body only deciders may read",
    });
  });
});
