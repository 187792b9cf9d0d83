// The paths a person takes: approve with a TTL, deny with a reason, the two-person rule; each
// decision records the signed-in operator's id and `via: session`, and the caller's retry runs once.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { pendingRequest, signedIn } from "./fixtures/browser.js";
import { call, openDesk, type Desk } from "./fixtures/desk.js";

let desk: Desk;
beforeEach(async () => {
  desk = await openDesk();
});
afterEach(() => desk.close());

const memo = { to: ["ops@example.test", "lead@example.test"], subject: "deploy", body: "deploy window moves to 18:00" };

describe("approve", () => {
  it("records the session's operator (never a typed name), and the caller's retry runs once", async () => {
    const id = await pendingRequest(desk, memo);
    const alice = await signedIn(desk, "alice", "approver");
    const csrf = await alice.csrf();
    const response = await alice.post(`/approvals/${id}/approve`, { csrf, ttl: "5", approver: "mallory", by: "owner" });
    expect(response.status).toBe(303);
    expect(response.headers.get("location")).toBe(`/approvals?done=granted&id=${id}`);
    const request = await desk.gate.approvals.get(id);
    expect(request?.status).toBe("granted");
    expect(request?.decidedBy).toBe(alice.id);
    expect(Date.parse(request!.grantExpiresAt!) - desk.now).toBe(5 * 60_000);
    const granted = (await desk.journal.readAudit()).filter((e) => e.type === "approval.granted");
    expect(granted.map((e) => [e.data.approver, e.data.via])).toEqual([[alice.id, "session"]]);
    const page = await (await alice.get(`/approvals?done=granted&id=${id}`)).text();
    expect(page).toContain("Approved.");
    expect(page).not.toContain(`data-request-id="${id}"`);

    const retried = await desk.gate.invoke("desk.send_memo", memo, call);
    expect(retried.status).toBe("ok");
    expect(desk.runs.memos).toHaveLength(1);
    // A third identical call does not run the memo again (a replay or a new request, never a second send).
    await desk.gate.invoke("desk.send_memo", memo, call);
    expect(desk.runs.memos).toHaveLength(1);
  });

  it("refuses a lifetime that is not 1 to 1440 whole minutes, and decides nothing", async () => {
    const id = await pendingRequest(desk, memo);
    const alice = await signedIn(desk, "alice", "approver");
    const csrf = await alice.csrf();
    for (const ttl of ["0", "-5", "1441", "1.5", "1e3", "ten", " 99999"]) {
      expect([ttl, (await alice.post(`/approvals/${id}/approve`, { csrf, ttl })).status]).toEqual([ttl, 400]);
    }
    expect((await desk.gate.approvals.get(id))?.status).toBe("pending");
  });

  it("a decided or unknown request gives a refusal page, not a crash", async () => {
    const id = await pendingRequest(desk, memo);
    const alice = await signedIn(desk, "alice", "approver");
    const csrf = await alice.csrf();
    expect((await alice.post(`/approvals/${id}/deny`, { csrf, reason: "no" })).status).toBe(303);
    const twice = await alice.post(`/approvals/${id}/approve`, { csrf, ttl: "10" });
    expect(twice.status).toBe(409);
    expect((await alice.post("/approvals/apr_00000000-0000-0000-0000-000000000000/approve", { csrf, ttl: "10" })).status).toBe(404);
    expect((await alice.post("/approvals/not-an-id/approve", { csrf, ttl: "10" })).status).toBe(404);
    expect((await desk.gate.approvals.get(id))?.status).toBe("denied");
  });
});

describe("scope", () => {
  it("a scoped approver is shown decision buttons only for requests inside its scope", async () => {
    const memoId = await pendingRequest(desk, memo);
    const noteId = await pendingRequest(desk, { path: "notes/a.md", before: "a", after: "b" }, "desk.write_note");
    const sam = await signedIn(desk, "sam", "approver", { tools: ["desk.write_note"] });
    const page = await (await sam.get("/approvals")).text();
    expect(page).toContain(`action="/approvals/${noteId}/approve"`);
    expect(page).not.toContain(`action="/approvals/${memoId}/approve"`);
    expect(page).toContain("Outside your scope: desk.send_memo is not among your tools.");
    const tenants = await signedIn(desk, "tia", "approver", { tenants: ["tenant-b"] });
    expect(await (await tenants.get("/approvals")).text()).not.toContain(`action="/approvals/`);
  });
});

describe("deny", () => {
  it("records the reason and the operator; the retry is refused and nothing runs", async () => {
    const id = await pendingRequest(desk, memo);
    const alice = await signedIn(desk, "alice", "admin");
    const response = await alice.post(`/approvals/${id}/deny`, { csrf: await alice.csrf(), reason: "not without the invoice" });
    expect(response.status).toBe(303);
    const request = await desk.gate.approvals.get(id);
    expect([request?.status, request?.reason, request?.decidedBy]).toEqual(["denied", "not without the invoice", alice.id]);
    const retried = await desk.gate.invoke("desk.send_memo", memo, call);
    expect(retried.status).not.toBe("ok");
    expect(desk.runs.memos).toEqual([]);
  });
});

describe("two-person rule", () => {
  it("one operator's approval leaves the request pending; a second, different operator grants it", async () => {
    const { defineProfile } = await import("@toolgate/core");
    const strict = defineProfile({ name: "strict", allow: ["desk:send", "desk:read"], maxRisk: "critical", twoPersonFrom: "high" } as never);
    const first = await desk.gate.invoke("desk.send_memo", memo, { ...call, profile: strict });
    if (first.status !== "approval_required") throw new Error(first.status);
    const alice = await signedIn(desk, "alice", "approver");
    const bob = await signedIn(desk, "bob", "approver");
    expect((await alice.post(`/approvals/${first.requestId}/approve`, { csrf: await alice.csrf(), ttl: "10" })).headers.get("location")).toContain(
      "done=needs_another",
    );
    expect((await desk.gate.approvals.get(first.requestId))?.status).toBe("pending");
    const page = await (await alice.get("/approvals")).text();
    expect(page).toContain("Approvals: 1 of 2");
    expect(page).toContain(`data-approvals="1/2"`);
    expect(page).toContain("You approved this; it needs a second, different approver.");
    expect(await (await bob.get("/approvals")).text()).toContain(`action="/approvals/${first.requestId}/approve"`);
    // The same operator again is not a second approver.
    expect((await alice.post(`/approvals/${first.requestId}/approve`, { csrf: await alice.csrf(), ttl: "10" })).status).toBe(409);
    expect((await bob.post(`/approvals/${first.requestId}/approve`, { csrf: await bob.csrf(), ttl: "10" })).headers.get("location")).toContain("done=granted");
    expect((await desk.gate.approvals.get(first.requestId))?.status).toBe("granted");
    expect(desk.runs.memos).toEqual([]);
  });
});
