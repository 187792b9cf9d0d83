// Operators in the console: admins only. An added operator's one-time link is shown once and signs
// in once; a disabled operator's open session is refused at once; nobody else can do any of it.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { pendingRequest, person, signedIn, type Person } from "./fixtures/browser.js";
import { openDesk, type Desk } from "./fixtures/desk.js";

let desk: Desk;
let admin: Person & { id: string };
beforeEach(async () => {
  desk = await openDesk();
  admin = await signedIn(desk, "ada", "admin");
});
afterEach(() => desk.close());

/** Sign in with a link as shown on the page (http://127.0.0.1:7878/login?token=…). */
async function follow(link: string): Promise<{ who: Person; status: number }> {
  const path = new URL(link).pathname + new URL(link).search;
  const who = person(desk);
  const page = await (await who.get(path)).text();
  const csrf = /name="csrf" value="([^"]+)"/.exec(page)?.[1] ?? "";
  const token = new URL(link).searchParams.get("token") ?? "";
  return { who, status: (await who.post("/login", { csrf, token })).status };
}
const linkOn = (page: string) => /<code class="login-link">([^<]+)<\/code>/.exec(page)?.[1];

describe("operators", () => {
  it("an admin adds a scoped approver; its link is shown once, signs in once, and the scope holds", async () => {
    const csrf = await admin.csrf();
    const response = await admin.post("/operators/add", { csrf, name: "sam", role: "approver", tools: "desk.write_note", maxRisk: "", tenants: "" });
    expect(response.status).toBe(200);
    expect(response.headers.get("cache-control")).toBe("no-store");
    const link = linkOn(await response.text());
    expect(link).toMatch(/^http:\/\/127\.0\.0\.1:7878\/login\?token=tgl_/);
    const operators = await desk.gate.authority.operators.list();
    const sam = operators.find((o) => o.name === "sam")!;
    expect([sam.role, sam.scope, sam.createdBy]).toEqual(["approver", { tools: ["desk.write_note"] }, admin.id]);
    expect(await (await admin.get("/operators")).text()).not.toContain(new URL(link!).searchParams.get("token")!);
    const first = await follow(link!);
    expect(first.status).toBe(303);
    expect((await follow(link!)).status).toBe(401);
    const id = await pendingRequest(desk, { to: ["a@example.test"], subject: "s", body: "b" });
    const refused = await first.who.post(`/approvals/${id}/approve`, { csrf: await first.who.csrf(), ttl: "10" });
    expect(refused.status).toBe(403);
  });

  it("disabling refuses the operator's open session at once; enabling and a new link let it back", async () => {
    const vera = await signedIn(desk, "vera", "viewer");
    const csrf = await admin.csrf();
    expect((await admin.post(`/operators/${vera.id}/disable`, { csrf })).status).toBe(303);
    expect((await vera.get("/approvals")).status).toBe(303);
    expect((await admin.post(`/operators/${vera.id}/login`, { csrf })).status).toBe(403); // operator_disabled
    expect((await admin.post(`/operators/${vera.id}/enable`, { csrf })).status).toBe(303);
    const issued = await admin.post(`/operators/${vera.id}/login`, { csrf });
    expect(issued.status).toBe(200);
    expect((await follow(linkOn(await issued.text())!)).status).toBe(303);
  });

  it("nobody but an admin lists, adds or changes operators; a bad name or role is refused", async () => {
    const ann = await signedIn(desk, "ann", "approver");
    const vera = await signedIn(desk, "vera", "viewer");
    for (const who of [ann, vera]) {
      const csrf = await who.csrf();
      expect((await who.get("/operators")).status).toBe(403);
      expect((await who.post("/operators/add", { csrf, name: "eve", role: "admin" })).status).toBe(403);
      expect((await who.post(`/operators/${admin.id}/disable`, { csrf })).status).toBe(403);
      expect((await who.post(`/operators/${admin.id}/login`, { csrf })).status).toBe(403);
    }
    const csrf = await admin.csrf();
    expect((await admin.post("/operators/add", { csrf, name: "eve", role: "root" })).status).toBe(400);
    expect((await admin.post("/operators/add", { csrf, name: "<script>", role: "viewer" })).status).toBe(400);
    expect((await admin.post("/operators/add", { csrf, name: "owner", role: "admin" })).status).toBe(400);
    expect((await admin.post("/operators/op_nobody/disable", { csrf })).status).toBe(404);
    expect((await admin.post("/operators/add", { name: "eve", role: "admin" })).status).toBe(403); // no CSRF token
    expect((await desk.gate.authority.operators.list()).map((o) => o.name).sort()).toEqual(["ada", "ann", "vera"]);
  });
});
