// Approve with edits in the console: the form, the check page the desk recomputes, the approval of
// exactly what the check page showed. Negative cases first: who may see the input as asked, forged
// forms, fields that are not editable, JSON that does not parse, a check page whose hash moved.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { pendingRequest, signedIn, type Person } from "./fixtures/browser.js";
import { call, openDesk, type Desk } from "./fixtures/desk.js";

let desk: Desk;
beforeEach(async () => {
  desk = await openDesk();
});
afterEach(() => desk.close());

const memo = { to: ["ops@example.test", "wrong@example.test"], subject: "deploy", body: "deploy window moves to 18:00" };

/** The text of an HTML attribute value as a browser reads it. */
const unescape = (s: string) =>
  s
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">")
    .replace(/&amp;/g, "&");

/** Every hidden and textarea field of the form posting to `action`, as the browser would send it unchanged. */
function formFields(html: string, action: string): Record<string, string> {
  const at = html.indexOf(`action="${action}"`);
  if (at < 0) throw new Error(`no form posting to ${action}`);
  const form = html.slice(at, html.indexOf("</form>", at));
  const fields: Record<string, string> = {};
  for (const m of form.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) fields[unescape(m[1]!)] = unescape(m[2]!);
  for (const m of form.matchAll(/<textarea [^>]*name="([^"]+)"[^>]*>\n([\s\S]*?)<\/textarea>/g)) fields[unescape(m[1]!)] = unescape(m[2]!);
  return fields;
}

async function editForm(who: Person, id: string): Promise<Record<string, string>> {
  const page = await who.get(`/approvals/${id}/edit`);
  expect(page.status).toBe(200);
  return formFields(await page.text(), `/approvals/${id}/edit`);
}

async function chainHead(): Promise<number> {
  return (await desk.journal.head()).seq;
}

describe("who may edit", () => {
  it("a viewer gets 403 on every edit page and never sees the input as asked", async () => {
    const id = await pendingRequest(desk, { ...memo, body: "the viewer must not read this body" });
    const viewer = await signedIn(desk, "vera", "viewer");
    const csrf = await viewer.csrf();
    const form = await viewer.get(`/approvals/${id}/edit`);
    expect(form.status).toBe(403);
    expect(await form.text()).not.toContain("the viewer must not read this body");
    expect((await viewer.post(`/approvals/${id}/edit`, { csrf, version: "0", previewHash: "0".repeat(64), "f:/subject": "x" })).status).toBe(403);
    expect((await viewer.post(`/approvals/${id}/approve-edited`, { csrf, input: JSON.stringify(memo), version: "0" })).status).toBe(403);
    expect(await (await viewer.get("/approvals")).text()).not.toContain(`/approvals/${id}/edit`);
    expect((await desk.gate.approvals.get(id))?.status).toBe("pending");
  });

  it("an approver outside the request's scope gets 403 and no input; an unknown id 404", async () => {
    const id = await pendingRequest(desk, { ...memo, body: "out of scope body" });
    const sam = await signedIn(desk, "sam", "approver", { tools: ["desk.write_note"] });
    const page = await sam.get(`/approvals/${id}/edit`);
    expect(page.status).toBe(403);
    expect(await page.text()).not.toContain("out of scope body");
    expect((await sam.get("/approvals/apr_00000000-0000-0000-0000-000000000000/edit")).status).toBe(404);
    expect((await sam.get("/approvals/not-an-id/edit")).status).toBe(404);
  });

  it("a forged form (no CSRF token, another site) is refused and nothing is written", async () => {
    const id = await pendingRequest(desk, memo);
    const alice = await signedIn(desk, "alice", "approver");
    const fields = await editForm(alice, id);
    const before = await chainHead();
    const { csrf: _csrf, ...unsigned } = fields;
    expect((await alice.post(`/approvals/${id}/edit`, unsigned)).status).toBe(403);
    expect((await alice.post(`/approvals/${id}/edit`, fields, { origin: "http://evil.test", "sec-fetch-site": "cross-site" })).status).toBe(403);
    expect(await chainHead()).toBe(before);
  });
});

describe("what may be edited", () => {
  it("a tool that refuses edits has no Edit link, and its edit pages are refused (409) without writing", async () => {
    const id = await pendingRequest(desk, { path: "notes/a.md", before: "a", after: "b" }, "desk.write_note");
    const alice = await signedIn(desk, "alice", "approver");
    expect(await (await alice.get("/approvals")).text()).not.toContain(`/approvals/${id}/edit`);
    const page = await alice.get(`/approvals/${id}/edit`);
    expect(page.status).toBe(409);
    expect(await page.text()).toContain("does not allow edits");
    const csrf = await alice.csrf();
    const before = await chainHead();
    expect((await alice.post(`/approvals/${id}/edit`, { csrf, version: "0", previewHash: "0".repeat(64), "f:/after": "c" })).status).toBe(409);
    expect(await chainHead()).toBe(before);
  });

  it("a check page's hidden input altered to change a field that is not editable is refused by the desk, nothing written", async () => {
    const id = await pendingRequest(desk, { ...memo, link: "https://docs.example.test/plan" });
    const alice = await signedIn(desk, "alice", "approver");
    const page = await (await alice.post(`/approvals/${id}/edit`, { ...(await editForm(alice, id)), "f:/subject": "deploy (moved)" })).text();
    const approve = formFields(page, `/approvals/${id}/approve-edited`);
    const before = await chainHead();
    const altered = { ...(JSON.parse(approve.input!) as object), link: "https://evil.example.test/" };
    const response = await alice.post(`/approvals/${id}/approve-edited`, { ...approve, input: JSON.stringify(altered) });
    expect(response.status).toBe(400);
    expect(await response.text()).toContain('data-code="edit_refused"');
    expect(await chainHead()).toBe(before);
    expect((await desk.gate.approvals.get(id))?.status).toBe("pending");
  });
});

describe("the form is read strictly", () => {
  it("a field that is not an editable pointer is 400 naming it, and nothing changes", async () => {
    const id = await pendingRequest(desk, memo);
    const alice = await signedIn(desk, "alice", "approver");
    const fields = await editForm(alice, id);
    const before = await chainHead();
    for (const name of ["f:/link", "f:/link/x", "f:/To", "f:/to/0", "f:", "approver"]) {
      const response = await alice.post(`/approvals/${id}/edit`, { ...fields, [name]: "x" });
      expect([name, response.status]).toEqual([name, 400]);
      expect(await response.text()).toContain(name.startsWith("f:") ? `${name.slice(2)} is not a field you may edit here` : `unexpected form member ${name}`);
    }
    expect(await chainHead()).toBe(before);
    expect((await desk.gate.approvals.get(id))?.edit).toBeUndefined();
  });

  it("a form larger than the console takes is refused (413) before it is read", async () => {
    const id = await pendingRequest(desk, memo);
    const alice = await signedIn(desk, "alice", "approver");
    const before = await chainHead();
    const response = await alice.post(`/approvals/${id}/edit`, { ...(await editForm(alice, id)), "f:/body": "x".repeat(70 * 1024) });
    expect(response.status).toBe(413);
    expect(await chainHead()).toBe(before);
  });

  it("JSON that does not parse is 400 naming the field", async () => {
    const id = await pendingRequest(desk, memo);
    const alice = await signedIn(desk, "alice", "approver");
    const response = await alice.post(`/approvals/${id}/edit`, { ...(await editForm(alice, id)), "f:/to": '["ops@example.test"' });
    expect(response.status).toBe(400);
    expect(await response.text()).toContain("/to is not JSON");
  });

  it("an edit outside the schema is refused with the schema's message, nothing granted", async () => {
    const id = await pendingRequest(desk, memo);
    const alice = await signedIn(desk, "alice", "approver");
    const before = await chainHead();
    const response = await alice.post(`/approvals/${id}/edit`, { ...(await editForm(alice, id)), "f:/to": "[]" });
    expect(response.status).toBe(400);
    const text = await response.text();
    expect(text).toContain('data-code="invalid_input"');
    expect(text).toMatch(/input for desk\.send_memo is invalid: to: /);
    expect(await chainHead()).toBe(before);
    expect((await desk.gate.approvals.get(id))?.status).toBe("pending");
  });
});

describe("edit, check, approve", () => {
  it("removes a recipient: the check page shows the change and the recomputed preview; approving it runs the edited call once", async () => {
    const id = await pendingRequest(desk, memo);
    const alice = await signedIn(desk, "alice", "approver");
    const queue = await (await alice.get("/approvals")).text();
    expect(queue).toContain(`href="/approvals/${id}/edit"`);
    const fields = await editForm(alice, id);
    expect(JSON.parse(fields["f:/to"]!)).toEqual(memo.to);
    expect(fields.version).toBe("0");

    const checked = await alice.post(`/approvals/${id}/edit`, { ...fields, "f:/to": '["ops@example.test"]' });
    expect(checked.status).toBe(200);
    const page = await checked.text();
    expect(page).toContain('<li class="del"><span class="text">wrong@example.test</span></li>');
    expect(page).toContain("to 1 recipient(s)");
    // Checking wrote nothing.
    expect((await desk.gate.approvals.get(id))?.edit).toBeUndefined();

    const approve = formFields(page, `/approvals/${id}/approve-edited`);
    expect(JSON.parse(approve.input!)).toEqual({ ...memo, to: ["ops@example.test"] });
    const done = await alice.post(`/approvals/${id}/approve-edited`, approve);
    expect(done.status).toBe(303);
    expect(done.headers.get("location")).toBe(`/approvals?done=granted&id=${id}`);
    const request = await desk.gate.approvals.get(id);
    expect([request?.status, request?.edit?.version, request?.edit?.by, request?.decidedBy]).toEqual(["granted", 1, alice.id, alice.id]);
    expect(request?.edit?.changes.map((c) => c.path)).toEqual(["/to"]);

    // The caller retries with the input it sent; the edited call runs, once.
    const retried = await desk.gate.invoke("desk.send_memo", memo, call);
    expect(retried.status).toBe("ok");
    expect(retried.status === "ok" && retried.edited?.changes.map((c) => c.path)).toEqual(["/to"]);
    expect(desk.runs.memos).toEqual([{ ...memo, to: ["ops@example.test"] }]);
    await desk.gate.invoke("desk.send_memo", memo, call);
    expect(desk.runs.memos).toHaveLength(1);
    const edited = (await desk.journal.readAudit()).filter((e) => e.type === "approval.edited");
    expect(edited.map((e) => [e.data.approver, e.data.version])).toEqual([[alice.id, 1]]);
    const audit = await (await alice.get("/audit")).text();
    expect(audit).toMatch(/approval\.edited.*version=1 changed=\/to from=[0-9a-f]{12} input=[0-9a-f]{12}/);
  });

  it("a check page whose preview hash was altered is refused (409) and nothing is written", async () => {
    const id = await pendingRequest(desk, memo);
    const alice = await signedIn(desk, "alice", "approver");
    const page = await (await alice.post(`/approvals/${id}/edit`, { ...(await editForm(alice, id)), "f:/subject": "deploy (moved)" })).text();
    const approve = formFields(page, `/approvals/${id}/approve-edited`);
    const before = await chainHead();
    const forged = await alice.post(`/approvals/${id}/approve-edited`, { ...approve, editedPreviewHash: "f".repeat(64) });
    expect(forged.status).toBe(409);
    // The input swapped for another than the check page showed: its preview differs, refused the same way.
    const swapped = await alice.post(`/approvals/${id}/approve-edited`, { ...approve, input: JSON.stringify({ ...memo, subject: "other" }) });
    expect(swapped.status).toBe(409);
    expect(await chainHead()).toBe(before);
    expect((await desk.gate.approvals.get(id))?.status).toBe("pending");
    expect(desk.runs.memos).toEqual([]);
  });

  it("a page opened before another approver's edit cannot approve: the stale version is refused", async () => {
    const { defineProfile } = await import("@toolgate/core");
    const strict = defineProfile({ name: "strict", allow: ["desk:send", "desk:read"], maxRisk: "critical", twoPersonFrom: "high" } as never);
    const first = await desk.gate.invoke("desk.send_memo", memo, { ...call, profile: strict });
    if (first.status !== "approval_required") throw new Error(first.status);
    const id = first.requestId;
    const alice = await signedIn(desk, "alice", "approver");
    const bob = await signedIn(desk, "bob", "approver");
    const bobQueue = await (await bob.get("/approvals")).text();
    const bobApprove = formFields(bobQueue, `/approvals/${id}/approve`);
    // Bob also checks an edit of his own, from version 0, before alice's lands.
    const bobCheck = await (await bob.post(`/approvals/${id}/edit`, { ...(await editForm(bob, id)), "f:/subject": "deploy (bob)" })).text();
    const page = await (await alice.post(`/approvals/${id}/edit`, { ...(await editForm(alice, id)), "f:/to": '["ops@example.test"]' })).text();
    const done = await alice.post(`/approvals/${id}/approve-edited`, formFields(page, `/approvals/${id}/approve-edited`));
    expect(done.headers.get("location")).toBe(`/approvals?done=needs_another&id=${id}`);
    // Bob's page still names version 0: refused, not counted.
    expect((await bob.post(`/approvals/${id}/approve`, bobApprove)).status).toBe(409);
    const staleEdit = await bob.post(`/approvals/${id}/approve-edited`, formFields(bobCheck, `/approvals/${id}/approve-edited`));
    expect(staleEdit.status).toBe(409);
    expect(await staleEdit.text()).toContain("changed since you looked");
    expect((await desk.gate.approvals.get(id))?.status).toBe("pending");
    // Bob's edit form starts from alice's version, not the input as asked.
    const bobForm = await editForm(bob, id);
    expect([bobForm.version, JSON.parse(bobForm["f:/to"]!)]).toEqual(["1", ["ops@example.test"]]);
    // Reloaded, bob sees the edit and approves version 1.
    const fresh = await (await bob.get("/approvals")).text();
    expect(fresh).toContain('data-version="1"');
    expect(fresh).toContain("Edited by");
    expect((await bob.post(`/approvals/${id}/approve`, formFields(fresh, `/approvals/${id}/approve`))).headers.get("location")).toBe(
      `/approvals?done=granted&id=${id}`,
    );
    const retried = await desk.gate.invoke("desk.send_memo", memo, { ...call, profile: strict });
    expect(retried.status).toBe("ok");
    expect(desk.runs.memos).toEqual([{ ...memo, to: ["ops@example.test"] }]);
  });

  it("an approval of the version as asked stops counting once another approver edits: two people must approve the version that runs", async () => {
    const { defineProfile } = await import("@toolgate/core");
    const strict = defineProfile({ name: "strict", allow: ["desk:send", "desk:read"], maxRisk: "critical", twoPersonFrom: "high" } as never);
    const first = await desk.gate.invoke("desk.send_memo", memo, { ...call, profile: strict });
    if (first.status !== "approval_required") throw new Error(first.status);
    const id = first.requestId;
    const alice = await signedIn(desk, "alice", "approver");
    const bob = await signedIn(desk, "bob", "approver");
    const asked = formFields(await (await alice.get("/approvals")).text(), `/approvals/${id}/approve`);
    expect((await alice.post(`/approvals/${id}/approve`, asked)).headers.get("location")).toContain("done=needs_another");
    const page = await (await bob.post(`/approvals/${id}/edit`, { ...(await editForm(bob, id)), "f:/to": '["ops@example.test"]' })).text();
    expect((await bob.post(`/approvals/${id}/approve-edited`, formFields(page, `/approvals/${id}/approve-edited`))).headers.get("location")).toContain(
      "done=needs_another",
    );
    const queue = await (await alice.get("/approvals")).text();
    expect(queue).toContain('<table class="changes">');
    // A viewer sees that /to changed and the previews (as before), not the input's values as asked.
    const viewer = await (await (await signedIn(desk, "vera", "viewer")).get("/approvals")).text();
    expect(viewer).toContain("Changed: <code>/to</code>");
    expect(viewer).not.toContain("changes");
    expect(viewer).not.toContain('class="before"');
    expect(queue).toContain("Approvals: 1 of 2");
    expect(queue).toContain(`data-approvals="1/2" data-version="1"`);
    expect((await alice.post(`/approvals/${id}/approve`, formFields(queue, `/approvals/${id}/approve`))).headers.get("location")).toContain("done=granted");
    expect((await desk.gate.approvals.get(id))?.status).toBe("granted");
  });

  it("an edited value is shown escaped on the check page, hidden characters as markers", async () => {
    const id = await pendingRequest(desk, memo);
    const alice = await signedIn(desk, "alice", "approver");
    const response = await alice.post(`/approvals/${id}/edit`, { ...(await editForm(alice, id)), "f:/body": "<script>alert(1)</script> pay \u202Egro.live" });
    expect(response.status).toBe(200);
    const page = await response.text();
    expect(page).not.toContain("<script>alert");
    expect(page).toContain("&lt;script&gt;alert(1)&lt;/script&gt;");
    expect(page).toContain("⟨U+202E⟩");
  });
});
