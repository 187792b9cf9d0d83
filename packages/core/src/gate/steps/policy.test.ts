import { describe, expect, it } from "vitest";
import { z } from "zod";
import { defineProfile } from "../../profile.js";
import { defineTool } from "../../manifest.js";
import { setup, base, full } from "../fixtures/gate-harness.js";

describe("gate step: policy", () => {
  it("4. policy: missing any one token is refused, naming it, before approval or any journal write", async () => {
    const { gate, calls, writes, journal } = setup();
    const partial = defineProfile({ name: "writer-only", allow: ["notes:write"], maxRisk: "critical" });
    const result = await gate.invoke("notes.delete_note", { id: "a" }, { ...base, profile: partial });
    expect(result).toMatchObject({ status: "denied", code: "permission_denied", boundary: "pre_effect_refusal", details: { missing: ["notes:delete"] } });
    expect(calls("notes.delete_note")).toBe(0);
    expect(writes()).toEqual([]);
    expect((await journal.listApprovals()).length).toBe(0);
    expect((await journal.readAudit()).at(-1)?.type).toBe("call.refused");
  });

  it("4. policy: risk above the profile's ceiling is refused", async () => {
    const { gate, calls } = setup();
    const low = defineProfile({ name: "low", allow: full.allow, maxRisk: "medium" });
    expect(await gate.invoke("notes.delete_note", { id: "a" }, { ...base, profile: low })).toMatchObject({ status: "denied", code: "risk_exceeded" });
    expect(calls("notes.delete_note")).toBe(0);
  });

  it("4. policy: consent and egress are enforced", async () => {
    const egressTool = defineTool({
      id: "notes.publish_note",
      title: "Publish",
      description: "Publish a note to a provider.",
      input: z.object({ id: z.string() }),
      output: z.object({ ok: z.boolean() }),
      actionType: "notes-write",
      effect: "write",
      requiredAllowlist: ["notes:write"],
      risk: "low",
      approval: "never",
      idempotent: true,
      retryable: true,
      reversible: false,
      provider: "example",
      dataEgress: true,
      dataClass: "personal",
      requiredConsent: ["publish-notes"],
      runtimeIsolation: { network: "provider", filesystem: "none", secrets: "none", subprocess: "none" },
      untrustedOutput: false,
      handler: () => ({ ok: true }),
    });
    const { gate } = setup({ extraTools: [egressTool] });
    const noConsent = defineProfile({ name: "p1", allow: ["notes:write"], maxRisk: "low", egress: ["personal"] });
    expect(await gate.invoke("notes.publish_note", { id: "a" }, { ...base, profile: noConsent })).toMatchObject({ status: "denied", code: "consent_required" });
    const noEgress = defineProfile({ name: "p2", allow: ["notes:write"], maxRisk: "low", consents: ["publish-notes"], egress: ["public"] });
    expect(await gate.invoke("notes.publish_note", { id: "a" }, { ...base, profile: noEgress })).toMatchObject({ status: "denied", code: "egress_denied" });
    const ok = defineProfile({ name: "p3", allow: ["notes:write"], maxRisk: "low", consents: ["publish-notes"], egress: ["personal"] });
    expect(await gate.invoke("notes.publish_note", { id: "a" }, { ...base, profile: ok })).toMatchObject({ status: "ok" });
  });
});
