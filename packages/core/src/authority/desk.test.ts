/** The desk decides only as an authenticated approver, checked at decision time: every way around it, refused. */
import { describe, expect, it } from "vitest";
import { ToolError } from "../errors.js";
import { asked, base, twoPerson, worker, workers } from "./fixtures/gates.js";
import type { Approver } from "./types.js";

const refusedWith = async (promise: Promise<unknown>, code: string) => {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(ToolError.is(error), String(error)).toBe(true);
  expect((error as ToolError).code).toBe(code);
};

describe("the desk refuses anything but an authenticated approver", () => {
  it("a typed name, in the old form or as `by`, decides nothing and leaves the request pending", async () => {
    const { gate } = worker();
    const id = await asked(gate, "notes.add_note", { id: "n", text: "hello" });
    for (const options of [{ approver: "human" }, { by: "owner" }, { by: "op_0123456789abcdef" }, {}, undefined]) {
      await refusedWith(gate.approvals.grant(id, options as never), "approver_invalid");
      await refusedWith(gate.approvals.deny(id, { ...(options as object), reason: "x" } as never), "approver_invalid");
    }
    expect(await gate.approvals.get(id)).toMatchObject({ status: "pending" });
  });

  it("a look-alike of a real approver is refused: same fields, a spread copy, a JSON round trip, a proxy, a prototype child", async () => {
    const { gate } = worker();
    const id = await asked(gate, "notes.add_note", { id: "n", text: "hello" });
    const owner = gate.authority.owner();
    const forged: unknown[] = [
      { kind: "operator", id: "owner", name: "owner", role: "admin", via: "owner" },
      { ...owner },
      JSON.parse(JSON.stringify(owner)),
      new Proxy(owner, {}),
      Object.create(owner),
      Object.freeze(Object.assign(Object.create(null), owner)),
    ];
    for (const by of forged) {
      await refusedWith(gate.approvals.grant(id, { by: by as Approver }), "approver_invalid");
      expect(gate.authority.can(by as Approver, "view")).toBe(false);
    }
    expect(await gate.approvals.get(id)).toMatchObject({ status: "pending" });
    // The real one works, and the decision names it.
    const decided = await gate.approvals.grant(id, { by: owner });
    expect(decided.status).toBe("granted");
    expect(await gate.approvals.get(id)).toMatchObject({ status: "granted", approvals: [{ by: "owner", via: "owner" }] });
  });

  it("a viewer may not decide; an approver-role operator may not administer", async () => {
    const { gate } = worker();
    const owner = gate.authority.owner();
    await gate.authority.operators.add("vera", { role: "viewer" }, owner);
    await gate.authority.operators.add("alma", { role: "approver" }, owner);
    const id = await asked(gate, "notes.add_note", { id: "n", text: "hello" });
    const viewer = await gate.authority.actingAs("vera");
    expect(gate.authority.can(viewer, "view")).toBe(true);
    expect(gate.authority.can(viewer, "decide")).toBe(false);
    await refusedWith(gate.approvals.grant(id, { by: viewer }), "approver_forbidden");
    await refusedWith(gate.approvals.deny(id, { by: viewer, reason: "no" }), "approver_forbidden");
    const approver = await gate.authority.actingAs("alma");
    await refusedWith(gate.authority.operators.add("mallory", { role: "admin" }, approver), "approver_forbidden");
    await refusedWith(gate.authority.switches.disable("tool:notes.add_note", "stop", approver), "approver_forbidden");
    await refusedWith(gate.authority.clients.add("bot", { profile: "full", elicitation: true }, approver), "approver_forbidden");
    await refusedWith(gate.authority.operators.disable("vera", viewer), "approver_forbidden");
    expect(await gate.approvals.get(id)).toMatchObject({ status: "pending" });
    expect((await gate.authority.operators.list()).map((o) => o.name)).toEqual(["vera", "alma"]);
  });

  it("an operator disabled (or removed) after its session began decides nothing, and its session ends", async () => {
    const { gate } = worker();
    const owner = gate.authority.owner();
    const { loginToken } = await gate.authority.operators.add("alma", { role: "approver" }, owner);
    const signedIn = await gate.authority.login(loginToken);
    expect(signedIn?.approver).toMatchObject({ kind: "operator", name: "alma", role: "approver", via: "session" });
    const host = await gate.authority.actingAs("alma");
    const id = await asked(gate, "notes.add_note", { id: "n", text: "hello" });
    await gate.authority.operators.disable("alma", owner);
    await refusedWith(gate.approvals.grant(id, { by: signedIn!.approver }), "approver_forbidden");
    await refusedWith(gate.approvals.grant(id, { by: host }), "approver_forbidden");
    expect(await gate.authority.session(signedIn!.session)).toBeUndefined();
    await refusedWith(gate.authority.actingAs("alma"), "operator_disabled");
    const link = await gate.authority.operators.issueLogin("alma", owner).catch((e: unknown) => e);
    expect(ToolError.is(link, "operator_disabled")).toBe(true);
    await gate.authority.operators.enable("alma", owner);
    // Enabled again: the sessions it had before stay closed (a disable is how a leaked session is stopped).
    await refusedWith(gate.approvals.grant(id, { by: signedIn!.approver }), "approver_invalid");
    expect(await gate.authority.session(signedIn!.session)).toBeUndefined();
    expect((await gate.approvals.grant(id, { by: await gate.authority.actingAs("alma") })).status).toBe("granted");
    await gate.authority.operators.remove("alma", owner);
    const second = await asked(gate, "notes.add_note", { id: "m", text: "other" });
    await refusedWith(gate.approvals.grant(second, { by: host }), "approver_forbidden");
    await refusedWith(gate.authority.operators.enable("alma", owner), "operator_unknown");
    await refusedWith(gate.authority.actingAs("nobody"), "operator_unknown");
  });

  it("a session that was logged out decides nothing", async () => {
    const { gate } = worker();
    const { loginToken } = await gate.authority.operators.add("alma", { role: "approver" }, gate.authority.owner());
    const signedIn = (await gate.authority.login(loginToken))!;
    await gate.authority.logout(signedIn.session);
    const id = await asked(gate, "notes.add_note", { id: "n", text: "hello" });
    await refusedWith(gate.approvals.grant(id, { by: signedIn.approver }), "approver_invalid");
    expect(await gate.authority.session(signedIn.session)).toBeUndefined();
  });

  it("an approver outside its scope is refused: another tool, a riskier tool, another tenant; inside it, allowed", async () => {
    const { gate } = worker();
    const owner = gate.authority.owner();
    const add = async (name: string, scope: object) => {
      await gate.authority.operators.add(name, { role: "approver", scope }, owner);
      return gate.authority.actingAs(name);
    };
    const toolScoped = await add("tess", { tools: ["notes.delete_note"] });
    const riskScoped = await add("rita", { maxRisk: "medium" });
    const tenantScoped = await add("tina", { tenants: ["tenant-b"] });
    const family = await add("fay", { tools: ["notes.*"], maxRisk: "high", tenants: ["tenant-a"] });
    const addNote = await asked(gate, "notes.add_note", { id: "n", text: "hello" }); // medium
    const deleteNote = await asked(gate, "notes.delete_note", { id: "n" }); // high
    await refusedWith(gate.approvals.grant(addNote, { by: toolScoped }), "approver_forbidden");
    await refusedWith(gate.approvals.grant(deleteNote, { by: riskScoped }), "approver_forbidden");
    await refusedWith(gate.approvals.grant(addNote, { by: tenantScoped }), "approver_forbidden");
    await refusedWith(gate.approvals.deny(addNote, { by: tenantScoped, reason: "no" }), "approver_forbidden");
    expect((await gate.approvals.grant(addNote, { by: riskScoped })).status).toBe("granted");
    expect((await gate.approvals.grant(deleteNote, { by: family })).status).toBe("granted");
  });

  it("an operator row edited behind the journal's back (a viewer made admin) is journal_tampered, never trusted", async () => {
    const [a, b] = workers(2);
    const owner = a!.gate.authority.owner();
    const { operator } = await a!.gate.authority.operators.add("vera", { role: "viewer" }, owner);
    const viewer = await b!.gate.authority.actingAs("vera");
    const rows = a!.driver.tables.records;
    const row = rows.get(`operator:${operator.id}`)!;
    rows.set(`operator:${operator.id}`, { ...row, text: row.text.replace('"viewer"', '"admin"') });
    expect(rows.get(`operator:${operator.id}`)!.text).toContain('"admin"');
    const id = await asked(b!.gate, "notes.add_note", { id: "n", text: "hello" });
    await refusedWith(b!.gate.approvals.grant(id, { by: viewer }), "journal_tampered");
    await refusedWith(b!.gate.authority.actingAs(operator.id), "journal_tampered");
    expect(await b!.gate.approvals.get(id)).toMatchObject({ status: "pending" });
  });

  it("a bad scope is refused when the operator is added", async () => {
    const { gate } = worker();
    const owner = gate.authority.owner();
    for (const scope of [{ tools: [] }, { tools: ["notes"] }, { tools: ["*"] }, { maxRisk: "extreme" }, { tenants: [""] }, "all"]) {
      await refusedWith(gate.authority.operators.add("x", { role: "approver", scope: scope as never }, owner), "config_invalid");
    }
    for (const name of ["owner", "op_1", "mcp:x", "", "a b", "x".repeat(65)]) {
      await refusedWith(gate.authority.operators.add(name, { role: "viewer" }, owner), "config_invalid");
    }
    await refusedWith(gate.authority.operators.add("x", { role: "root" as never }, owner), "config_invalid");
    expect(await gate.authority.operators.list()).toEqual([]);
  });
});

describe("the two-person rule", () => {
  it("a call at or above twoPersonFrom needs two distinct approvers; the same one twice is refused", async () => {
    const { gate, store } = worker();
    const owner = gate.authority.owner();
    await gate.authority.operators.add("alma", { role: "approver" }, owner);
    const alma = await gate.authority.actingAs("alma");
    store.notes.set("n", "x");
    const call = { ...base, profile: twoPerson };
    const id = await asked(gate, "notes.delete_note", { id: "n" }, call);
    expect(await gate.approvals.get(id)).toMatchObject({ approvalsNeeded: 2 });
    const first = await gate.approvals.grant(id, { by: alma });
    expect(first).toMatchObject({ status: "needs_another", request: { status: "pending" } });
    await refusedWith(gate.approvals.grant(id, { by: alma }), "approval_invalid");
    await refusedWith(gate.approvals.grant(id, { by: await gate.authority.actingAs("alma") }), "approval_invalid");
    // One approval is not enough: the retry asks again, on the same request.
    expect(await gate.invoke("notes.delete_note", { id: "n" }, call)).toMatchObject({ status: "approval_required", requestId: id });
    expect(store.notes.has("n")).toBe(true);
    const second = await gate.approvals.grant(id, { by: owner });
    expect(second.status).toBe("granted");
    expect((await gate.approvals.get(id))?.approvals?.map((a) => a.by)).toEqual([alma.id, "owner"]);
    expect(await gate.invoke("notes.delete_note", { id: "n" }, call)).toMatchObject({ status: "ok" });
    expect(store.notes.has("n")).toBe(false);
    // Below the threshold, one approver is enough.
    const low = await asked(gate, "notes.add_note", { id: "m", text: "x" }, call);
    expect((await gate.approvals.grant(low, { by: alma })).status).toBe("granted");
  });

  it("two people: an admin who approved first cannot finish through a session it issued the sign-in link of; owner-issued links are two people", async () => {
    const { gate, store } = worker();
    store.notes.set("n", "keep");
    const owner = gate.authority.owner();
    const ada = await gate.authority.operators.add("ada", { role: "admin" }, owner);
    await gate.authority.operators.add("bob", { role: "approver" }, owner);
    const carol = await gate.authority.operators.add("carol", { role: "approver" }, owner);
    const adaSession = (await gate.authority.login(ada.loginToken))!;
    const call = { ...base, profile: twoPerson };
    const id = await asked(gate, "notes.delete_note", { id: "n" }, call);
    expect((await gate.approvals.grant(id, { by: adaSession.approver })).status).toBe("needs_another");
    const minted = await gate.authority.operators.issueLogin("bob", adaSession.approver);
    const asBob = (await gate.authority.login(minted.loginToken))!;
    await refusedWith(gate.approvals.grant(id, { by: asBob.approver }), "approval_invalid");
    // An MCP client Ada added and enabled for in-band approval is not a second person either.
    const { client } = await gate.authority.clients.add(
      "ui",
      { profile: "full", elicitation: true, principal: base.principal, tenant: base.tenant },
      adaSession.approver,
    );
    await refusedWith(gate.approvals.grant(id, { by: gate.authority.clients.approver(client) }), "approval_invalid");
    expect(await gate.invoke("notes.delete_note", { id: "n" }, call)).toMatchObject({ status: "approval_required", requestId: id });
    // Carol signed in with the link the owner issued: a second person.
    const asCarol = (await gate.authority.login(carol.loginToken))!;
    expect((await gate.approvals.grant(id, { by: asCarol.approver })).status).toBe("granted");
    expect((await gate.approvals.get(id))?.approvals?.map((a) => a.by)).toEqual([ada.operator.id, carol.operator.id]);
  });

  it("a grant from a one-approver request does not run a call whose profile asks for two", async () => {
    const { gate, store } = worker();
    store.notes.set("n", "x");
    const id = await asked(gate, "notes.delete_note", { id: "n" });
    const decided = await gate.approvals.grant(id, { by: gate.authority.owner() });
    if (decided.status !== "granted") throw new Error("expected a grant");
    const call = { ...base, profile: twoPerson };
    expect(await gate.invoke("notes.delete_note", { id: "n" }, { ...call, approval: decided.grant })).toMatchObject({
      status: "denied",
      code: "approval_invalid",
    });
    // Without a grant, the retry does not take the one-approver grant: it asks for two, on a new request.
    const again = await gate.invoke("notes.delete_note", { id: "n" }, call);
    expect(again).toMatchObject({ status: "approval_required" });
    expect(again.status === "approval_required" && again.requestId).not.toBe(id);
    expect(store.notes.has("n")).toBe(true);
  });
});
