/** Logins, sessions, MCP clients and the secrets the authority makes: spent once, redacted, never stored. */
import { describe, expect, it } from "vitest";
import { sha256Hex } from "../canonical-json.js";
import { ToolError } from "../errors.js";
import { asked, base, worker, workers } from "./fixtures/gates.js";

describe("one-time login tokens", () => {
  it("a login token works once; the second use (and a made-up or expired one) signs nobody in", async () => {
    let now = Date.parse("2026-01-01T00:00:00Z");
    const { gate } = worker({ clock: () => now });
    const owner = gate.authority.owner();
    const { loginToken, expiresAt } = await gate.authority.operators.add("alma", { role: "approver" }, owner);
    expect(loginToken).toMatch(/^tgl_[A-Za-z0-9_-]{43}$/);
    expect(Date.parse(expiresAt) - now).toBe(15 * 60_000);
    const first = await gate.authority.login(loginToken);
    expect(first?.session).toMatch(/^tgs_[A-Za-z0-9_-]{43}$/);
    expect(await gate.authority.login(loginToken)).toBeUndefined();
    for (const other of ["", "tgl_", `tgl_${"A".repeat(43)}`, loginToken.replace("tgl_", "tgs_"), 42, null]) {
      expect(await gate.authority.login(other as string)).toBeUndefined();
    }
    const late = await gate.authority.operators.issueLogin("alma", owner);
    now += 15 * 60_000;
    expect(await gate.authority.login(late.loginToken)).toBeUndefined();
    // Sessions expire (12 hours by default).
    expect(await gate.authority.session(first!.session)).toMatchObject({ name: "alma" });
    now += 12 * 60 * 60_000;
    expect(await gate.authority.session(first!.session)).toBeUndefined();
  });

  it("two workers presenting the same token at once: exactly one session", async () => {
    const [a, b] = workers(2);
    const { loginToken } = await a!.gate.authority.operators.add("alma", { role: "approver" }, a!.gate.authority.owner());
    for (let round = 0; round < 5; round++) {
      const token = round === 0 ? loginToken : (await a!.gate.authority.operators.issueLogin("alma", a!.gate.authority.owner())).loginToken;
      const results = await Promise.all([a!.gate.authority.login(token), b!.gate.authority.login(token), a!.gate.authority.login(token)]);
      expect(results.filter((r) => r !== undefined)).toHaveLength(1);
    }
  });

  it("a disabled operator's login token signs nobody in, not even once it is enabled again; no token is issued for it", async () => {
    const { gate } = worker();
    const owner = gate.authority.owner();
    const { loginToken } = await gate.authority.operators.add("alma", { role: "approver" }, owner);
    await gate.authority.operators.disable("alma", owner);
    expect(await gate.authority.login(loginToken)).toBeUndefined();
    await expect(gate.authority.operators.issueLogin("alma", owner)).rejects.toSatisfy((e) => ToolError.is(e, "operator_disabled"));
    // Enabled again, a token issued before the disable still signs nobody in.
    await gate.authority.operators.enable("alma", owner);
    const unused = await gate.authority.operators.issueLogin("alma", owner);
    await gate.authority.operators.disable("alma", owner);
    await gate.authority.operators.enable("alma", owner);
    expect(await gate.authority.login(unused.loginToken)).toBeUndefined();
    expect(await gate.authority.login(loginToken)).toBeUndefined();
    expect(await gate.authority.login((await gate.authority.operators.issueLogin("alma", owner)).loginToken)).toMatchObject({ approver: { name: "alma" } });
  });
});

describe("secrets the authority makes", () => {
  it("login tokens, sessions and client tokens are redacted while they live, and only their hashes reach the journal", async () => {
    const { gate, journal } = worker();
    const owner = gate.authority.owner();
    const { loginToken } = await gate.authority.operators.add("alma", { role: "admin" }, owner);
    expect(gate.redactor.contains(loginToken)).toBe(true);
    const { session, approver } = (await gate.authority.login(loginToken))!;
    expect(gate.redactor.contains(loginToken)).toBe(false); // spent: it no longer opens anything
    expect(gate.redactor.contains(session)).toBe(true);
    const { token } = await gate.authority.clients.add("desk-bot", { profile: "full", elicitation: true }, approver);
    expect(token).toMatch(/^tgc_[A-Za-z0-9_-]{43}$/);
    expect(gate.redactor.contains(token)).toBe(true);
    const audit = JSON.stringify(await journal.readAudit());
    const records = JSON.stringify([await journal.listRecords("operator"), await journal.listRecords("client"), await journal.listRecords("session")]);
    for (const secret of [loginToken, session, token]) {
      expect(audit).not.toContain(secret);
      expect(records).not.toContain(secret);
      expect(audit).not.toContain(secret.slice(4, 20));
    }
    expect(records).toContain(sha256Hex(token));
    // Every change names who made it.
    const events = (await journal.readAudit()).filter((e) => /^(operator|client|session)\./.test(e.type));
    expect(events.map((e) => [e.type, e.data["by"] ?? null])).toEqual([
      ["operator.added", "owner"],
      ["operator.login_issued", "owner"],
      ["operator.login", null],
      ["session.started", null],
      ["client.added", approver.id],
    ]);
    await gate.authority.logout(session);
    expect(gate.redactor.contains(session)).toBe(false);
    await gate.authority.clients.remove("desk-bot", owner);
    expect(gate.redactor.contains(token)).toBe(false);
  });
});

describe("MCP clients", () => {
  it("authenticates its own token only, until removed; another worker sees the same clients", async () => {
    const [a, b] = workers(2);
    const owner = a!.gate.authority.owner();
    const { client, token } = await a!.gate.authority.clients.add("desk-bot", { profile: "full" }, owner);
    expect(client).toMatchObject({ name: "desk-bot", profile: "full", principal: "mcp:desk-bot", tenant: "default", elicitation: false });
    expect(client).not.toHaveProperty("tokenHash");
    expect(await b!.gate.authority.clients.authenticate(token)).toEqual(client);
    for (const wrong of [`tgc_${"A".repeat(43)}`, token.slice(0, -1), `${token}x`, "", `Bearer ${token}`, token.replace("tgc_", "tgl_")]) {
      expect(await b!.gate.authority.clients.authenticate(wrong)).toBeUndefined();
    }
    await b!.gate.authority.clients.remove(client.id, owner);
    expect(await a!.gate.authority.clients.authenticate(token)).toBeUndefined();
  });

  it("decides in band only when an operator enabled it, only its own principal's calls, and not after removal", async () => {
    const { gate } = worker();
    const owner = gate.authority.owner();
    const quiet = (await gate.authority.clients.add("quiet", { profile: "full" }, owner)).client;
    expect(() => gate.authority.clients.approver(quiet)).toThrow(expect.objectContaining({ code: "approver_forbidden" }));
    // A look-alike client object with elicitation on gets an approver that the record then refuses.
    const forgedApprover = gate.authority.clients.approver({ ...quiet, elicitation: true });
    const own = await asked(gate, "notes.add_note", { id: "n", text: "x" }, { ...base, principal: "mcp:quiet", tenant: "default" });
    await expect(gate.approvals.grant(own, { by: forgedApprover })).rejects.toSatisfy((e) => ToolError.is(e, "approver_forbidden"));
    const { client } = await gate.authority.clients.add("human-ui", { profile: "full", elicitation: true, principal: "agent-1", tenant: "tenant-a" }, owner);
    const inBand = gate.authority.clients.approver(client);
    expect(inBand).toMatchObject({ kind: "client", id: `mcp:${client.id}`, via: "elicitation", role: "approver" });
    expect(gate.authority.can(inBand, "admin")).toBe(false);
    await expect(gate.approvals.grant(own, { by: inBand })).rejects.toSatisfy((e) => ToolError.is(e, "approver_forbidden"));
    const mine = await asked(gate, "notes.add_note", { id: "m", text: "x" });
    expect((await gate.approvals.grant(mine, { by: inBand })).status).toBe("granted");
    expect(await gate.approvals.get(mine)).toMatchObject({ approvals: [{ by: `mcp:${client.id}`, via: "elicitation" }] });
    await gate.authority.clients.remove("human-ui", owner);
    const later = await asked(gate, "notes.add_note", { id: "k", text: "x" });
    await expect(gate.approvals.grant(later, { by: inBand })).rejects.toSatisfy((e) => ToolError.is(e, "approver_forbidden"));
  });
});
