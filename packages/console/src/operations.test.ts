// The operator pages: inventory, audit (filter, verify with the result shown, export), outbox
// (resolve an unknown outcome), kill switch (stops the next call, on every worker) and operators.
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { pendingRequest, signedIn } from "./fixtures/browser.js";
import { call, openDesk, skipPostgres, type Desk } from "./fixtures/desk.js";

const desks: Desk[] = [];
afterEach(async () => {
  for (const d of desks.splice(0)) await d.close();
});
async function desk(options: Parameters<typeof openDesk>[0] = {}) {
  const d = await openDesk(options);
  desks.push(d);
  return d;
}

describe("inventory", () => {
  it("lists every tool with its tokens, risk, approval and isolation", async () => {
    const d = await desk();
    const viewer = await signedIn(d, "vera", "viewer");
    const page = await (await viewer.get("/inventory")).text();
    for (const id of ["desk.send_memo", "desk.write_note", "desk.count_words", "desk.ring_bell"]) expect(page).toContain(`<code>${id}</code>`);
    expect(page).toContain("desk:send");
    expect(page).toContain("network none, files none, secrets none, subprocess none");
  });
});

describe("audit", () => {
  it("filters by tool, principal, tenant and time, and exports the same events as JSON lines", async () => {
    const d = await desk();
    await d.gate.invoke("desk.count_words", { text: "one two" }, call);
    await d.gate.invoke("desk.count_words", { text: "three" }, { ...call, principal: "agent-2", tenant: "tenant-b" });
    d.advance(24 * 60 * 60_000);
    await d.gate.invoke("desk.count_words", { text: "four" }, { ...call, principal: "agent-2" });
    const alice = await signedIn(d, "alice", "admin");
    const page = await (await alice.get("/audit?tool=desk.count_words&principal=agent-2")).text();
    expect(page).toMatch(/<p>\d+ matching events?/);
    const exported = async (query: string) =>
      (await (await alice.get(`/audit/export?${query}`)).text())
        .trim()
        .split("\n")
        .filter(Boolean)
        .map((line) => JSON.parse(line) as { toolId?: string; principal?: string; tenant?: string; at: string; seq: number });
    const byPrincipal = await exported("tool=desk.count_words&principal=agent-2");
    expect(byPrincipal.length).toBeGreaterThan(0);
    expect(byPrincipal.every((e) => e.toolId === "desk.count_words" && e.principal === "agent-2")).toBe(true);
    const byTenant = await exported("tenant=tenant-b");
    expect(new Set(byTenant.map((e) => e.tenant))).toEqual(new Set(["tenant-b"]));
    const firstDay = await exported("principal=agent-2&to=2026-12-01");
    expect(firstDay.every((e) => e.at.startsWith("2026-12-01"))).toBe(true);
    expect(firstDay.length).toBeGreaterThan(0);
    const secondDay = await exported("principal=agent-2&from=2026-12-02T00:00");
    expect(secondDay.every((e) => e.at.startsWith("2026-12-02"))).toBe(true);
    expect(secondDay.length + firstDay.length).toBe(byPrincipal.length);
    const response = await alice.get("/audit/export");
    expect(response.headers.get("content-type")).toMatch(/^application\/x-ndjson/);
    expect(response.headers.get("content-disposition")).toMatch(/^attachment/);
    const all = (await response.text()).trim().split("\n");
    expect(all.map((l) => (JSON.parse(l) as { seq: number }).seq)).toEqual(all.map((_, i) => i + 1));
    expect((await alice.get("/audit?from=yesterday")).status).toBe(200);
    expect(await (await alice.get("/audit?from=yesterday")).text()).toContain("must be dates");
    expect((await alice.get("/audit/export?to=soon")).status).toBe(400);
  });

  it("verify shows the result: verified on an intact SQLite journal, failed with the row named after an edit", async () => {
    const d = await desk({ sqlite: true });
    const alice = await signedIn(d, "alice", "admin");
    const id = await pendingRequest(d, { to: ["a@example.test"], subject: "s", body: "b" });
    const csrf = await alice.csrf();
    const good = await (await alice.post("/audit/verify", { csrf })).text();
    expect(good).toContain('id="verify-result" data-ok="true"');
    expect(good).toContain("Verified.");
    // Someone with the database file marks the request granted by hand.
    const db = new Database(d.path!);
    const row = db.prepare("SELECT request FROM approvals WHERE request_id = ?").pluck().get(id) as string;
    db.prepare("UPDATE approvals SET request = ? WHERE request_id = ?").run(row.replace('"status":"pending"', '"status":"granted"'), id);
    db.close();
    const bad = await (await alice.post("/audit/verify", { csrf })).text();
    expect(bad).toContain('id="verify-result" data-ok="false"');
    expect(bad).toContain("Verification failed.");
    expect(bad).toContain(id);
    // Verifying needs the session's CSRF token like every POST.
    expect((await alice.post("/audit/verify", {})).status).toBe(403);
  });
});

describe("outbox", () => {
  it("shows an unknown outcome and an admin resolves it; the resolution names the operator", async () => {
    const d = await desk();
    const admin = await signedIn(d, "ada", "admin");
    const failed = await d.gate.invoke("desk.ring_bell", { times: 2 }, call);
    expect(failed.status).toBe("error");
    const [entry] = await d.journal.listOutbox({ states: ["unknown"] });
    expect(entry).toBeDefined();
    const page = await (await admin.get("/outbox")).text();
    expect(page).toContain(entry!.key);
    expect(page).toContain(`action="/outbox/${entry!.key}/resolve"`);
    const csrf = await admin.csrf();
    expect((await admin.post(`/outbox/${entry!.key}/resolve`, { csrf, outcome: "maybe" })).status).toBe(400);
    expect((await admin.post(`/outbox/${entry!.key}/resolve`, { csrf, outcome: "not_applied" })).status).toBe(303);
    expect((await d.journal.getIntent(entry!.key))?.state).not.toBe("unknown");
    const resolved = (await d.journal.readAudit()).filter((e) => e.type === "outbox.resolved");
    expect(resolved.map((e) => e.data.operator)).toEqual([admin.id]);
    expect((await admin.post(`/outbox/${entry!.key}/resolve`, { csrf, outcome: "applied" })).status).toBe(409);
    expect((await admin.post("/outbox/no-such-key/resolve", { csrf, outcome: "applied" })).status).toBe(404);
  });
});

describe("outbox: in flight", () => {
  it("a pending entry that may still be running is shown without resolve buttons and its resolution is refused", async () => {
    const d = await desk();
    const admin = await signedIn(d, "ada", "admin");
    const running = d.gate.invoke("desk.file_report", { times: 1 }, call);
    await new Promise((r) => setTimeout(r, 100));
    const [entry] = await d.journal.listOutbox({ states: ["pending"] });
    expect(entry?.toolId).toBe("desk.file_report");
    const page = await (await admin.get("/outbox")).text();
    expect(page).toContain("in flight");
    expect(page).not.toContain(`action="/outbox/${entry!.key}/resolve"`);
    const refused = await admin.post(`/outbox/${entry!.key}/resolve`, { csrf: await admin.csrf(), outcome: "not_applied" });
    expect(refused.status).toBe(409);
    // Untouched for longer than the window (a crashed worker's entry), it is offered.
    d.advance(6 * 60_000);
    expect(await (await admin.get("/outbox")).text()).toContain(`action="/outbox/${entry!.key}/resolve"`);
    expect((await running).status).toBe("ok");
    expect((await d.journal.getIntent(entry!.key))?.state).toBe("completed");
  });
});

describe("kill switch", () => {
  it.each([
    ["sqlite", false],
    ["postgres", skipPostgres],
  ] as const)("an admin disables a tool for every worker on the %s journal from the next call, then enables it again", async (store, skip) => {
    if (skip) return void expect(skip).toBe(true);
    const d = await desk({ store });
    const worker = await d.worker();
    try {
      const admin = await signedIn(d, "ada", "admin");
      const csrf = await admin.csrf();
      expect((await worker.gate.invoke("desk.count_words", { text: "a b" }, call)).status).toBe("ok");
      const set = await admin.post("/switches/disable", { csrf, target: "tool:desk.count_words", reason: "counting wrong" });
      expect([set.status, set.headers.get("location")]).toEqual([303, "/switches"]);
      const refused = await worker.gate.invoke("desk.count_words", { text: "a b c" }, call);
      expect(refused).toMatchObject({ status: "denied", code: "tool_disabled" });
      expect(worker.runs.counts).toHaveLength(1);
      const page = await (await admin.get("/switches")).text();
      expect(page).toContain("tool:desk.count_words");
      expect(page).toContain("counting wrong");
      expect(page).toContain(admin.id);
      expect((await admin.post("/switches/enable", { csrf, target: "tool:desk.count_words" })).status).toBe(303);
      expect((await worker.gate.invoke("desk.count_words", { text: "a b c" }, call)).status).toBe("ok");
    } finally {
      await worker.close();
    }
  });

  it("a whole family at once; a misspelt or malformed target disables nothing", async () => {
    const d = await desk();
    const admin = await signedIn(d, "ada", "admin");
    const csrf = await admin.csrf();
    for (const target of ["tool:desk.count_word", "family:des", "desk.count_words", "tool:", "family:desk extra", ""])
      expect([target, (await admin.post("/switches/disable", { csrf, target, reason: "x" })).status]).toEqual([target, 400]);
    expect((await admin.post("/switches/disable", { csrf, target: "family:desk", reason: "" })).status).toBe(400);
    expect(await d.gate.authority.switches.list()).toEqual([]);
    expect((await admin.post("/switches/disable", { csrf, target: "family:desk", reason: "all of it" })).status).toBe(303);
    expect(await d.gate.invoke("desk.count_words", { text: "x" }, call)).toMatchObject({ code: "tool_disabled" });
    expect(await d.gate.invoke("desk.send_memo", { to: ["a@example.test"], subject: "s", body: "b" }, call)).toMatchObject({ code: "tool_disabled" });
  });
});

describe("operators", () => {
  it("an admin sees every operator with role, scope and status", async () => {
    const d = await desk();
    const admin = await signedIn(d, "ada", "admin");
    await signedIn(d, "sam", "approver", { tools: ["desk.*"] });
    await d.gate.authority.operators.disable("sam", d.gate.authority.owner());
    const page = await (await admin.get("/operators")).text();
    expect(page).toContain("ada");
    expect(page).toContain("sam");
    expect(page).toContain("disabled");
    expect(page).toContain("desk.*");
  });
});
