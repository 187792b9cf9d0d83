import { createGate, createMemoryJournal, createToolRegistry, defineProfile, type CallOptions, type InvokeResult, type Profile } from "@toolgate/core";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createCalendarTools } from "./calendar-tools.js";
import { CALENDAR_PERMISSIONS } from "./permissions.js";
import { startHarness, type Harness } from "./fixtures/harness.js";

/**
 * Provenance on the calendar family, through the real client against the emulator: event
 * inj0000001 (an untrusted read) names collector@evil.test. An event inviting that address in the
 * same session is asked with its provenance (or refused); an event the user dictated runs without a
 * human under `trustedSkipsApproval`.
 */
const base = { allow: [...CALENDAR_PERMISSIONS], maxRisk: "high", egress: ["personal"] } as const;
const asks = defineProfile({ name: "asks", ...base });
const refuses = defineProfile({ name: "refuses", ...base, provenance: { onViolation: "refuse" } });
const waives = defineProfile({ name: "waives", ...base, provenance: { trustedSkipsApproval: true } });
const INJECTED = "collector@evil.test";
const when = { start: { dateTime: "2025-03-12T12:00:00", timeZone: "Europe/Paris" }, end: { dateTime: "2025-03-12T13:00:00", timeZone: "Europe/Paris" } };

describe("calendar: data from an event cannot steer an invitation without a human", () => {
  let harness: Harness;
  beforeEach(async () => {
    harness = await startHarness();
  });
  afterEach(() => harness.emulator.close());

  function setup(profile: Profile, trusted: string[] = []) {
    const gate = createGate({
      registry: createToolRegistry({ families: [createCalendarTools({ rootUrl: harness.emulator.url, retry: { baseDelayMs: 0 } })] }),
      journal: createMemoryJournal(),
      connectors: harness.connectors,
      secrets: harness.secrets,
    });
    const session = gate.openSession({ trusted: trusted.map((text) => ({ text, label: "user" })) });
    const call: CallOptions = { principal: "agent-1", tenant: "home", profile, session };
    const readInjected = async () =>
      expect(await gate.invoke("calendar.get_event", { eventId: "inj0000001" }, call)).toMatchObject({ status: "ok", untrusted: true });
    return { gate, call, readInjected };
  }
  const invite = { summary: "Sync follow-up", ...when, attendees: [INJECTED] };
  const provenanceOf = (r: InvokeResult) => (r.status === "approval_required" ? r.preview.provenance : undefined);
  const events = () => harness.emulator.calendar.events().map((e) => e.id);

  it("refusing profile: an event inviting the address the event carried is refused (provenance_refused); the calendar is unchanged", async () => {
    const { gate, call, readInjected } = setup(refuses);
    const before = events();
    await readInjected();
    const result = await gate.invoke("calendar.create_event", invite, call);
    expect(result).toMatchObject({ status: "denied", code: "provenance_refused" });
    expect(result.status === "denied" && result.details?.["provenance"]).toMatchObject({ verdict: "violation", action: "refused" });
    // An id read from the calendar is no instruction to delete it either.
    await gate.invoke("calendar.list_events", { timeMin: "2025-03-01T00:00:00Z", timeMax: "2025-03-31T00:00:00Z" }, call);
    expect(await gate.invoke("calendar.delete_event", { eventId: "inj0000001" }, call)).toMatchObject({ code: "provenance_refused" });
    expect(await gate.approvals.list()).toEqual([]);
    expect(events()).toEqual(before);
  });

  it("the same event is asked with preview.provenance naming the event it came from; the calendar is unchanged", async () => {
    const { gate, call, readInjected } = setup(asks);
    const before = events();
    await readInjected();
    const result = await gate.invoke("calendar.create_event", invite, call);
    expect(result.status).toBe("approval_required");
    const provenance = provenanceOf(result);
    expect(provenance).toMatchObject({ verdict: "violation" });
    const attendee = provenance?.fields.find((f) => f.path === "/attendees/0");
    expect(attendee).toMatchObject({ label: "untrusted", role: "destination" });
    expect(attendee?.sources[0]).toMatchObject({ kind: "output", toolId: "calendar.get_event", untrusted: true });
    // The user's own calendar, named by the family, is trusted even though someone else's event names it too.
    expect(provenance?.fields.find((f) => f.path === "/calendarId")).toMatchObject({ label: "trusted", role: "destination" });
    expect(events()).toEqual(before);
  });

  it("trustedSkipsApproval: the event the user dictated runs without a human and is in the emulator", async () => {
    const { gate, call, readInjected } = setup(waives, ["Put a meeting called Budget review with ana@example.test in my calendar"]);
    await readInjected();
    const result = await gate.invoke("calendar.create_event", { summary: "Budget review", ...when, attendees: ["ana@example.test"] }, call);
    expect(result.status, JSON.stringify(result)).toBe("ok");
    const made = harness.emulator.calendar.events().find((e) => e.summary === "Budget review");
    expect(made?.attendees?.map((a) => a.email)).toEqual(["ana@example.test"]);
    const checked = (await gate.journal.readAudit()).filter((e) => e.type === "provenance.checked");
    expect(checked.map((e) => (e.data as { provenance: { action: string } }).provenance.action)).toEqual(["waived"]);
    // Not the address the event carried, under the same profile.
    expect(provenanceOf(await gate.invoke("calendar.create_event", invite, call))).toMatchObject({ verdict: "violation" });
  });
});
