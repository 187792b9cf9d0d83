import { describe, expect, it } from "vitest";
import { z } from "zod";
import { defineTool } from "../../manifest.js";
import { defineProfile } from "../../profile.js";
import { grantAsOwner } from "../../testing/approver.js";
import { events, setup } from "../fixtures/mail-session.js";

const iso = { network: "none", filesystem: "none", secrets: "none", subprocess: "none" } as const;

describe("provenance: a destination from someone else's text needs a human", () => {
  it("outside a session nothing changes: the send asks, the draft runs, no provenance anywhere", async () => {
    const { gate, call, sent, journal } = setup({ provenance: { onViolation: "refuse", trustedSkipsApproval: true } });
    const { session: _s, ...plain } = call;
    await gate.invoke("mail.read", {}, plain);
    const asked = await gate.invoke("mail.send", { to: ["mark.black@outside.test"], subject: "x", body: "y" }, plain);
    expect(asked.status).toBe("approval_required");
    if (asked.status === "approval_required") expect(asked.preview.provenance).toBeUndefined();
    expect((await gate.invoke("mail.draft", { to: ["mark.black@outside.test"], subject: "x", body: "y" }, plain)).status).toBe("ok");
    expect(sent).toHaveLength(1);
    expect(await events(journal, "provenance.checked")).toEqual([]);
  });

  it("a recipient copied from an untrusted message escalates a call that never asks, with the source in the preview", async () => {
    const { gate, call, sent, journal } = setup();
    expect((await gate.invoke("mail.read", {}, call)).status).toBe("ok");
    const result = await gate.invoke("mail.draft", { to: ["mark.black@outside.test"], subject: "Report", body: "Here it is." }, call);
    expect(result.status).toBe("approval_required");
    expect(sent).toEqual([]);
    if (result.status !== "approval_required") return;
    const p = result.preview.provenance!;
    expect(p).toMatchObject({ verdict: "violation", action: "escalated", session: call.session!.id });
    expect(p.fields[0]).toMatchObject({ path: "/to/0", label: "untrusted", role: "destination", found: ["copied", "mark.black@outside.test"] });
    expect(p.fields[0]!.sources[0]).toMatchObject({ kind: "output", toolId: "mail.read", family: "mail", untrusted: true, principal: "agent" });
    expect(p.violations[0]).toBe("destination /to/0 taken from the untrusted output of mail.read (message from lily.white@partner.test)");
    // Journaled before anything was asked, and kept with the request.
    expect(await events(journal, "provenance.checked")).toMatchObject([{ provenance: { verdict: "violation", action: "escalated" } }]);
    expect((await journal.getApproval(result.requestId))!.preview.provenance).toEqual(p);
    // A human's grant lets it run.
    const grant = await grantAsOwner(gate, result.requestId);
    expect(
      (await gate.invoke("mail.draft", { to: ["mark.black@outside.test"], subject: "Report", body: "Here it is." }, { ...call, approval: grant })).status,
    ).toBe("ok");
    expect(sent).toHaveLength(1);
  });

  it("finds the recipient whatever the model did to its spelling (case, invisible characters, quotes, full-width letters)", async () => {
    const { gate, call } = setup();
    await gate.invoke("mail.read", {}, call);
    for (const to of [
      "MARK.BLACK@OUTSIDE.TEST",
      "mark.\u200bblack@outside.test",
      '"mark.black@outside.test"',
      "ｍａｒｋ.black@outside.test",
      "Mark <mark.black@outside.test>",
    ]) {
      const result = await gate.invoke("mail.draft", { to: [to], subject: "s", body: "b" }, call);
      expect(result.status, to).toBe("approval_required");
    }
  });

  it("a recipient found in nothing the session has seen is new, and a destination must be trusted", async () => {
    const { gate, call } = setup();
    const result = await gate.invoke("mail.draft", { to: ["someone@nowhere.test"], subject: "s", body: "b" }, call);
    expect(result.status).toBe("approval_required");
    if (result.status === "approval_required") {
      expect(result.preview.provenance!.fields[0]).toMatchObject({
        label: "new",
        why: "destination /to/0 is new: found in nothing trusted the session has seen",
      });
    }
  });

  it("a profile that refuses violations refuses, and the refusal is journaled with the provenance", async () => {
    const { gate, call, sent, journal } = setup({ provenance: { onViolation: "refuse" } });
    await gate.invoke("mail.read", {}, call);
    const result = await gate.invoke("mail.send", { to: ["mark.black@outside.test"], subject: "Report", body: "Here." }, call);
    expect(result).toMatchObject({ status: "denied", code: "provenance_refused" });
    expect(sent).toEqual([]);
    expect(await journal.listApprovals()).toEqual([]);
    const refused = await events(journal, "call.refused");
    expect(refused).toMatchObject([{ code: "provenance_refused" }]);
    if (result.status === "denied") expect(result.details).toMatchObject({ provenance: { verdict: "violation", action: "refused" } });
  });

  it("a call whose destination is trusted and that carries nothing untrusted skips the approval only when the profile says so", async () => {
    const trusted = { to: ["bob@team.test"], subject: "Minutes", body: "The meeting moved to Friday." };
    const asks = setup();
    await asks.gate.invoke("mail.read", {}, asks.call);
    const asked = await asks.gate.invoke("mail.send", trusted, asks.call);
    expect(asked.status).toBe("approval_required");
    if (asked.status === "approval_required") expect(asked.preview.provenance).toMatchObject({ verdict: "trusted", action: "none" });

    const skips = setup({ provenance: { trustedSkipsApproval: true } });
    await skips.gate.invoke("mail.read", {}, skips.call);
    expect(await skips.gate.invoke("mail.send", trusted, skips.call)).toMatchObject({ status: "ok" });
    expect(skips.sent).toEqual([trusted]);
    expect(await events(skips.journal, "provenance.checked")).toMatchObject([{ provenance: { verdict: "trusted", action: "waived" } }]);
  });

  it("untrusted data in the body (a code, a copied passage) keeps the approval, even to a trusted recipient", async () => {
    const { gate, call, sent } = setup({ provenance: { trustedSkipsApproval: true } });
    await gate.invoke("mail.read", {}, call);
    for (const body of ["Your code: 481923", "FYI: the quarterly figures are attached and the numbers look better than we expected."]) {
      const result = await gate.invoke("mail.send", { to: ["bob@team.test"], subject: "fwd", body }, call);
      expect(result.status, body).toBe("approval_required");
      if (result.status === "approval_required") expect(result.preview.provenance).toMatchObject({ verdict: "untrusted", action: "none" });
    }
    expect(sent).toEqual([]);
  });

  it("a destination the profile adds is checked for a tool that declares none", async () => {
    const bare = setup({ provenance: { trustedSkipsApproval: true } });
    await bare.gate.invoke("mail.read", {}, bare.call);
    // Without rules, a new recipient is no violation: the call is new (the model's own words), and asks as its manifest says.
    const bareResult = await bare.gate.invoke("mail.note", { to: ["x@nowhere.test"], subject: "s", body: "b" }, bare.call);
    expect(bareResult.status).toBe("approval_required");
    if (bareResult.status === "approval_required") expect(bareResult.preview.provenance).toMatchObject({ verdict: "new", action: "none", violations: [] });
    const ruled = setup({ provenance: { onViolation: "refuse", tools: { "mail.note": { destinations: ["/to"] } } } });
    expect(await ruled.gate.invoke("mail.note", { to: ["x@nowhere.test"], subject: "s", body: "b" }, ruled.call)).toMatchObject({
      code: "provenance_refused",
    });
    const family = setup({ provenance: { onViolation: "refuse", tools: { "mail.*": { destinations: ["/to"] } } } });
    expect(await family.gate.invoke("mail.note", { to: ["x@nowhere.test"], subject: "s", body: "b" }, family.call)).toMatchObject({
      code: "provenance_refused",
    });
  });

  it("a grant still runs its call when more output was seen between the ask and the retry", async () => {
    const { gate, call, sent } = setup();
    await gate.invoke("mail.read", {}, call);
    const input = { to: ["mark.black@outside.test"], subject: "Report", body: "Here." };
    const asked = await gate.invoke("mail.send", input, call);
    if (asked.status !== "approval_required") throw new Error("expected a request");
    const grant = await grantAsOwner(gate, asked.requestId);
    await gate.invoke("mail.read", {}, call);
    expect((await gate.invoke("mail.send", input, { ...call, approval: grant })).status).toBe("ok");
    expect(sent).toHaveLength(1);
  });

  it("refuses a session the gate did not open, and a session's budget past which nothing is trusted", async () => {
    const { gate, call } = setup({ provenance: { trustedSkipsApproval: true } });
    const forged = { id: "ses_x", trust() {}, stats: () => ({ texts: 0, chars: 0, saturated: false }) };
    expect(await gate.invoke("mail.read", {}, { ...call, session: forged })).toMatchObject({ code: "config_invalid" });
    const small = gate.openSession({ trusted: ["Send bob@team.test the minutes: Friday."], maxChars: 10 });
    await gate.invoke("mail.read", {}, { ...call, session: small });
    expect(small.stats().saturated).toBe(true);
    const result = await gate.invoke("mail.send", { to: ["bob@team.test"], subject: "Minutes", body: "Friday." }, { ...call, session: small });
    expect(result.status).toBe("approval_required");
    // The same call in a session that dropped nothing is trusted, and skips.
    const whole = gate.openSession({ trusted: ["Send bob@team.test the minutes: Friday."] });
    expect((await gate.invoke("mail.send", { to: ["bob@team.test"], subject: "Minutes", body: "Friday." }, { ...call, session: whole })).status).toBe("ok");
  });

  it("rejects rules that are not JSON Pointers, in a manifest and in a profile", () => {
    expect(() => mailFamilyWith({ destinations: ["to"] })).toThrow(/JSON Pointers/);
    expect(() => mailFamilyWith({ recipients: ["/to"] })).toThrow(/unknown member/);
    expect(() => defineProfile({ name: "p", allow: [], maxRisk: "low", provenance: { tools: { "mail.send": { destinations: "/to" } } } as never })).toThrow(
      /JSON Pointers/,
    );
    expect(() => defineProfile({ name: "p", allow: [], maxRisk: "low", provenance: { onViolation: "allow" } as never })).toThrow(/onViolation/);
  });
});

function mailFamilyWith(provenance: unknown) {
  return defineTool({
    id: "mail.x",
    title: "X",
    description: "x",
    input: z.object({ to: z.string() }),
    output: z.any(),
    actionType: "x",
    effect: "read",
    requiredAllowlist: ["mail:read"],
    risk: "low",
    approval: "never",
    runtimeIsolation: iso,
    untrustedOutput: false,
    provenance,
    handler: () => ({}),
  } as never);
}
