// Negative tests first: every state change the console offers, tried the ways an attacker (or a
// confused browser) would, and the journal checked afterwards: nothing decided, nothing disabled.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ORIGIN, pendingRequest, person, signedIn } from "./fixtures/browser.js";
import { call, openDesk, type Desk } from "./fixtures/desk.js";

let desk: Desk;
beforeEach(async () => {
  desk = await openDesk();
});
afterEach(() => desk.close());

const memo = { to: ["ops@example.test"], subject: "deploy", body: "deploy window moves to 18:00" };

async function statusOf(id: string) {
  return (await desk.gate.approvals.get(id))?.status;
}
async function decisionEvents() {
  return (await desk.journal.readAudit()).filter((e) => e.type === "approval.granted" || e.type === "approval.denied");
}

describe("without a session", () => {
  it("every page redirects to the sign-in page, and every change is refused", async () => {
    const id = await pendingRequest(desk, memo);
    const anon = person(desk);
    for (const path of ["/", "/approvals", "/inventory", "/audit", "/audit/export", "/outbox", "/switches", "/operators", "/events"]) {
      const page = await anon.get(path);
      expect([path, page.status, page.headers.get("location")]).toEqual([path, 303, "/login"]);
    }
    expect((await anon.post(`/approvals/${id}/approve`, { csrf: "x", ttl: "10" })).status).toBe(403);
    expect((await anon.post(`/approvals/${id}/deny`, { csrf: "x", reason: "no" })).status).toBe(403);
    expect((await anon.post("/switches/disable", { csrf: "x", target: "tool:desk.count_words", reason: "r" })).status).toBe(403);
    expect(await statusOf(id)).toBe("pending");
    expect(await decisionEvents()).toEqual([]);
    expect(await desk.gate.authority.switches.list()).toEqual([]);
  });

  it("a session cookie of the wrong shape or one the authority never issued is no session", async () => {
    const id = await pendingRequest(desk, memo);
    const forged = person(desk);
    for (const value of ["owner", "tgs_" + "A".repeat(43), "tgs_x; tg_session=tgs_y", "../../x"]) {
      forged.cookies.set("tg_session", value);
      expect((await forged.get("/approvals")).status).toBe(303);
      expect((await forged.post(`/approvals/${id}/approve`, { csrf: "x", ttl: "10" })).status).toBe(403);
    }
    expect(await statusOf(id)).toBe("pending");
  });
});

describe("CSRF and origin", () => {
  it("a POST without the CSRF token, with an empty one, or with another session's is refused and decides nothing", async () => {
    const id = await pendingRequest(desk, memo);
    const alice = await signedIn(desk, "alice", "admin");
    const bob = await signedIn(desk, "bob", "admin");
    const bobs = await bob.csrf();
    expect(await alice.csrf()).not.toBe(bobs);
    for (const fields of [{ ttl: "10" }, { csrf: "", ttl: "10" }, { csrf: bobs, ttl: "10" }, { csrf: `${bobs}x`, ttl: "10" }]) {
      expect((await alice.post(`/approvals/${id}/approve`, fields)).status).toBe(403);
      expect((await alice.post(`/approvals/${id}/deny`, { ...fields, reason: "forged" })).status).toBe(403);
      expect((await alice.post("/switches/disable", { ...fields, target: "tool:desk.count_words", reason: "forged" })).status).toBe(403);
      expect((await alice.post("/logout", fields)).status).toBe(403);
    }
    // The token in the query string instead of the form is not the form's token either.
    expect((await alice.post(`/approvals/${id}/approve?csrf=${await alice.csrf()}`, { ttl: "10" })).status).toBe(403);
    // A JSON body is not a form: no token is read from it.
    const json = await desk.app.request(`/approvals/${id}/approve`, {
      method: "POST",
      headers: { host: "127.0.0.1:7878", origin: ORIGIN, cookie: `tg_session=${alice.cookies.get("tg_session")}`, "content-type": "application/json" },
      body: JSON.stringify({ csrf: await alice.csrf(), ttl: "10" }),
    });
    expect(json.status).toBe(403);
    expect(await statusOf(id)).toBe("pending");
    expect(await decisionEvents()).toEqual([]);
    expect(await desk.gate.authority.switches.list()).toEqual([]);
    expect((await alice.get("/approvals")).status).toBe(200); // still signed in
  });

  it("a POST from another origin, or marked cross-site, is refused even with the right token", async () => {
    const id = await pendingRequest(desk, memo);
    const alice = await signedIn(desk, "alice", "admin");
    const csrf = await alice.csrf();
    for (const headers of [
      { origin: "http://evil.test" },
      { origin: "http://127.0.0.1:9999" },
      { origin: "null", "sec-fetch-site": "cross-site" }, // a sandboxed page; the console's own forms send null with same-origin
      { origin: "null", "sec-fetch-site": "same-site" },
      { origin: "https://127.0.0.1:7878" },
      { "sec-fetch-site": "cross-site" },
      { "sec-fetch-site": "same-site" },
    ]) {
      expect((await alice.post(`/approvals/${id}/approve`, { csrf, ttl: "10" }, headers)).status).toBe(403);
      expect((await alice.post("/switches/disable", { csrf, target: "tool:desk.count_words", reason: "x" }, headers)).status).toBe(403);
    }
    expect(await statusOf(id)).toBe("pending");
    expect(await desk.gate.authority.switches.list()).toEqual([]);
  });

  it("GET never changes state: the decision routes have no GET, and a sign-in link shown is not spent", async () => {
    const id = await pendingRequest(desk, memo);
    const alice = await signedIn(desk, "alice", "admin");
    expect((await alice.get(`/approvals/${id}/approve?ttl=10`)).status).toBe(404);
    expect((await alice.get(`/approvals/${id}/deny`)).status).toBe(404);
    expect((await alice.get("/switches/disable?target=tool:desk.count_words&reason=x")).status).toBe(404);
    expect(await statusOf(id)).toBe("pending");
    const { loginToken } = await desk.gate.authority.operators.issueLogin("alice", desk.gate.authority.owner());
    const bob = person(desk);
    await bob.get(`/login?token=${loginToken}`);
    await bob.get(`/login?token=${loginToken}`);
    const page = await (await bob.get(`/login?token=${loginToken}`)).text();
    const csrf = /name="csrf" value="([^"]+)"/.exec(page)![1]!;
    expect((await bob.post("/login", { csrf, token: loginToken })).status).toBe(303);
  });

  it("other methods are refused", async () => {
    const id = await pendingRequest(desk, memo);
    const alice = await signedIn(desk, "alice", "admin");
    for (const method of ["PUT", "DELETE", "PATCH"]) {
      const r = await desk.app.request(`/approvals/${id}/approve`, {
        method,
        headers: { host: "127.0.0.1:7878", origin: ORIGIN, cookie: `tg_session=${alice.cookies.get("tg_session")}` },
      });
      expect(r.status).toBe(405);
    }
    expect(await statusOf(id)).toBe("pending");
  });
});

describe("roles", () => {
  it("a viewer sees the queue without decision buttons and gets 403 on every change", async () => {
    const id = await pendingRequest(desk, memo);
    const viewer = await signedIn(desk, "vera", "viewer");
    const page = await (await viewer.get("/approvals")).text();
    expect(page).toContain(`data-request-id="${id}"`);
    expect(page).not.toContain(">Approve<");
    expect(page).not.toContain(">Deny<");
    const csrf = await viewer.csrf();
    // Refused by the console before the desk or the authority is asked (each would refuse too).
    const refused = async (r: Response) => [r.status, /Your role cannot|Only an admin/.test(await r.text())];
    expect(await refused(await viewer.post(`/approvals/${id}/approve`, { csrf, ttl: "10" }))).toEqual([403, true]);
    expect(await refused(await viewer.post(`/approvals/${id}/deny`, { csrf, reason: "no" }))).toEqual([403, true]);
    expect(await refused(await viewer.post("/switches/disable", { csrf, target: "tool:desk.count_words", reason: "x" }))).toEqual([403, true]);
    expect(await refused(await viewer.post("/switches/enable", { csrf, target: "tool:desk.count_words" }))).toEqual([403, true]);
    expect((await viewer.post("/outbox/some-key/resolve", { csrf, outcome: "applied" })).status).toBe(403);
    expect((await viewer.get("/operators")).status).toBe(403);
    for (const path of ["/inventory", "/audit", "/outbox", "/switches"]) expect((await viewer.get(path)).status).toBe(200);
    expect(await statusOf(id)).toBe("pending");
    expect(await decisionEvents()).toEqual([]);
    expect(await desk.gate.authority.switches.list()).toEqual([]);
  });

  it("an approver decides but cannot set the kill switch, resolve the outbox or list operators", async () => {
    const approver = await signedIn(desk, "ann", "approver");
    const csrf = await approver.csrf();
    expect((await approver.post("/switches/disable", { csrf, target: "tool:desk.count_words", reason: "x" })).status).toBe(403);
    expect((await approver.post("/outbox/k/resolve", { csrf, outcome: "not_applied" })).status).toBe(403);
    expect((await approver.get("/operators")).status).toBe(403);
    expect(await desk.gate.authority.switches.list()).toEqual([]);
  });

  it("an approver scoped to other tools is refused by the authority and the request stays pending", async () => {
    const id = await pendingRequest(desk, memo);
    const scoped = await signedIn(desk, "sam", "approver", { tools: ["desk.write_note"] });
    const response = await scoped.post(`/approvals/${id}/approve`, { csrf: await scoped.csrf(), ttl: "10" });
    expect(response.status).toBe(403);
    expect(await response.text()).toContain("approver_forbidden");
    expect(await statusOf(id)).toBe("pending");
  });
});

describe("sessions", () => {
  it("an expired session is no session: pages redirect, changes are refused", async () => {
    const id = await pendingRequest(desk, memo);
    const alice = await signedIn(desk, "alice", "admin");
    const csrf = await alice.csrf();
    desk.advance(13 * 60 * 60_000);
    expect((await alice.get("/approvals")).status).toBe(303);
    expect((await alice.post(`/approvals/${id}/deny`, { csrf, reason: "late" })).status).toBe(403);
    expect((await desk.gate.approvals.get(id))?.decidedBy).toBeUndefined();
  });

  it("a disabled operator's open session is refused at once; signing out ends the session for good", async () => {
    const id = await pendingRequest(desk, memo);
    const alice = await signedIn(desk, "alice", "approver");
    const csrf = await alice.csrf();
    await desk.gate.authority.operators.disable("alice", desk.gate.authority.owner());
    expect((await alice.post(`/approvals/${id}/approve`, { csrf, ttl: "10" })).status).toBe(403);
    expect((await alice.get("/approvals")).status).toBe(303);
    expect(await statusOf(id)).toBe("pending");

    const bob = await signedIn(desk, "bob", "approver");
    const session = bob.cookies.get("tg_session")!;
    expect((await bob.post("/logout", { csrf: await bob.csrf() })).status).toBe(303);
    expect(bob.cookies.has("tg_session")).toBe(false);
    bob.cookies.set("tg_session", session); // the old cookie, kept by hand
    expect((await bob.get("/approvals")).status).toBe(303);
    expect(await desk.gate.authority.session(session)).toBeUndefined();
  });

  it("a wrong, spent or expired sign-in token gets a plain refusal, and the login form needs its own token", async () => {
    const { loginToken } = await desk.gate.authority.operators.add("carol", { role: "approver" }, desk.gate.authority.owner());
    const tries = person(desk);
    const formToken = async (token: string) => /name="csrf" value="([^"]+)"/.exec(await (await tries.get(`/login?token=${token}`)).text())![1]!;
    // Without the form's token (a cross-site login), nothing is spent.
    expect((await tries.post("/login", { token: loginToken })).status).toBe(403);
    expect((await tries.post("/login", { token: loginToken, csrf: "x" })).status).toBe(403);
    const wrong = await tries.post("/login", { csrf: await formToken(`tgl_${"B".repeat(43)}`), token: `tgl_${"B".repeat(43)}` });
    expect(wrong.status).toBe(401);
    expect(await wrong.text()).toContain("not valid");
    expect((await tries.post("/login", { csrf: await formToken(loginToken), token: loginToken })).status).toBe(303);
    const again = person(desk);
    const csrf = /name="csrf" value="([^"]+)"/.exec(await (await again.get(`/login?token=${loginToken}`)).text())![1]!;
    const spent = await again.post("/login", { csrf, token: loginToken });
    expect(spent.status).toBe(401);
    expect(again.cookies.has("tg_session")).toBe(false);
    const { loginToken: late } = await desk.gate.authority.operators.issueLogin("carol", desk.gate.authority.owner());
    desk.advance(16 * 60_000);
    const expired = await tries.post("/login", { csrf: await formToken(late), token: late });
    expect(expired.status).toBe(401);
  });

  it("the browser's side requests while the sign-in page is open (an icon, the sign-in page again) do not void its form", async () => {
    const { loginToken } = await desk.gate.authority.operators.add("erin", { role: "viewer" }, desk.gate.authority.owner());
    const who = person(desk);
    const csrf = /name="csrf" value="([^"]+)"/.exec(await (await who.get(`/login?token=${loginToken}`)).text())![1]!;
    const icon = await who.get("/favicon.ico");
    expect([icon.status, icon.headers.getSetCookie()]).toEqual([204, []]);
    await who.get("/login");
    expect((await who.post("/login", { csrf, token: loginToken })).status).toBe(303);
  });

  it("the session cookie is HttpOnly, SameSite=Strict, Path=/ and carries no login token", async () => {
    const { loginToken } = await desk.gate.authority.operators.add("dora", { role: "viewer" }, desk.gate.authority.owner());
    const who = person(desk);
    const csrf = /name="csrf" value="([^"]+)"/.exec(await (await who.get(`/login?token=${loginToken}`)).text())![1]!;
    const response = await who.post("/login", { csrf, token: loginToken });
    const cookie = response.headers.getSetCookie().find((c) => c.startsWith("tg_session="))!;
    expect(cookie).toMatch(/; HttpOnly/);
    expect(cookie).toMatch(/; SameSite=Strict/);
    expect(cookie).toMatch(/; Path=\//);
    expect(cookie).toMatch(/^tg_session=tgs_/);
    expect(cookie).not.toContain(loginToken);
    expect(response.headers.get("location")).toBe("/approvals");
  });
});

describe("the host header", () => {
  it("a request naming another host (DNS rebinding) or no host is refused before anything is read", async () => {
    const alice = await signedIn(desk, "alice", "admin");
    for (const host of ["evil.test", "evil.test:7878", "127.0.0.1.evil.test", "0.0.0.0:7878", "[::1]:7878", ""]) {
      const response = await alice.get("/approvals", { host });
      expect([host, response.status]).toEqual([host, 403]);
    }
  });

  it("with the port known, another port on the right name is refused too", async () => {
    const fixed = await openDesk({ console: { port: 7878 } });
    try {
      const r1 = await fixed.app.request("/login", { headers: { host: "127.0.0.1:7879" } });
      const r2 = await fixed.app.request("/login", { headers: { host: "127.0.0.1" } });
      const r3 = await fixed.app.request("/login", { headers: { host: "localhost:7878" } });
      expect([r1.status, r2.status, r3.status]).toEqual([403, 403, 200]);
    } finally {
      await fixed.close();
    }
  });
});

it("the call is never run by anything the console refused", async () => {
  await pendingRequest(desk, memo);
  const again = await desk.gate.invoke("desk.send_memo", memo, call);
  expect(again.status).toBe("approval_required");
  expect(desk.runs.memos).toEqual([]);
});
