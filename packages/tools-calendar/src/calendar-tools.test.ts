import { createGate, createMemoryJournal, createToolRegistry, defineProfile, type CallOptions, type ConnectorRuntime, type Journal } from "@toolgate/core";
import { recoverOutbox } from "@toolgate/core/operator";
import { createCrashingJournal, grantAsOwner } from "@toolgate/core/testing";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createCalendarTools } from "./calendar-tools.js";
import { CALENDAR_PERMISSIONS, CALENDAR_SCOPES } from "./permissions.js";
import type { CalendarToolsOptions } from "./options.js";
import { eventIdFor } from "./events.js";
import { startHarness, type Harness } from "./fixtures/harness.js";

const profile = defineProfile({ name: "assistant", allow: [...CALENDAR_PERMISSIONS], maxRisk: "high", egress: ["personal"] });
const call: CallOptions = { principal: "agent-1", tenant: "home", profile };
const lunch = {
  summary: "Lunch with Ana",
  start: { dateTime: "2025-03-12T12:00:00", timeZone: "Europe/Paris" },
  end: { dateTime: "2025-03-12T13:30:00", timeZone: "Europe/Paris" },
  attendees: ["ana@example.test"],
};

describe("calendar family through a real gate, the real client and the emulator", () => {
  let harness: Harness;
  beforeEach(async () => {
    harness = await startHarness();
  });
  afterEach(() => harness.emulator.close());

  const gateWith = (options: CalendarToolsOptions = {}, extra: { connectors?: ConnectorRuntime; journal?: Journal; secrets?: readonly string[] } = {}) =>
    createGate({
      registry: createToolRegistry({ families: [createCalendarTools({ rootUrl: harness.emulator.url, retry: { baseDelayMs: 0 }, ...options })] }),
      journal: extra.journal ?? createMemoryJournal(),
      connectors: extra.connectors ?? harness.connectors,
      secrets: extra.secrets ?? harness.secrets,
    });
  const approved = async (gate: ReturnType<typeof gateWith>, id: string, input: unknown, options: Partial<CallOptions> = {}) => {
    const first = await gate.invoke(id, input, { ...call, ...options });
    if (first.status !== "approval_required") return first;
    const grant = await grantAsOwner(gate, first.requestId);
    return gate.invoke(id, input, { ...call, ...options, approval: grant });
  };
  const lunches = () => harness.emulator.calendar.events().filter((e) => e.summary === lunch.summary);

  // ---------- negative tests first ----------

  it("derives the event id from the idempotency key in Google's alphabet", () => {
    const id = eventIdFor("any key at all");
    expect(id).toMatch(/^[0-9a-v]{52}$/);
    expect(eventIdFor("any key at all")).toBe(id);
    expect(eventIdFor("another key")).not.toBe(id);
  });

  it("survives a drop after the insert and a crash: recovery replays with the same id and yields exactly one event", async () => {
    const journal = createCrashingJournal(createMemoryJournal());
    const before = gateWith({ retry: { maxAttempts: 1 } }, { journal });
    harness.emulator.inject({ kind: "drop_after_effect", methods: ["calendar.events.insert"] });
    journal.crashed = true;
    const first = await approved(before, "calendar.create_event", lunch, { idempotencyKey: "lunch-1" });
    expect(first.status).toBe("error");
    expect(lunches()).toHaveLength(1);
    expect((await journal.listOutbox({ states: ["pending"] })).map((e) => e.toolId)).toEqual(["calendar.create_event"]);
    journal.crashed = false;
    const after = gateWith({}, { journal }); // the restarted process
    const report = await recoverOutbox(after, { olderThanMs: 0 });
    expect(report.entries.map((e) => [e.toolId, e.action])).toEqual([["calendar.create_event", "replayed"]]);
    expect(lunches()).toHaveLength(1);
    const replay = await after.invoke("calendar.create_event", lunch, { ...call, idempotencyKey: "lunch-1" });
    expect(replay.status === "ok" && replay.replayed).toBe(true);
    expect(replay.status === "ok" && (replay.output as { alreadyExisted: boolean }).alreadyExisted).toBe(true);
    expect(lunches()).toHaveLength(1);
  });

  it("after a drop, a retry within the call (and a retry of the call) still yields one event", async () => {
    const gate = gateWith();
    harness.emulator.inject({ kind: "drop_after_effect", methods: ["calendar.events.insert"] });
    const result = await approved(gate, "calendar.create_event", lunch, { idempotencyKey: "lunch-2" });
    expect(result.status).toBe("ok");
    expect(result.status === "ok" && (result.output as { alreadyExisted: boolean }).alreadyExisted).toBe(true);
    expect(lunches()).toHaveLength(1);

    const single = gateWith({ retry: { maxAttempts: 1 } });
    harness.emulator.inject({ kind: "drop_after_effect", methods: ["calendar.events.insert"] });
    const dropped = await approved(single, "calendar.create_event", { ...lunch, summary: "Dentist" }, { idempotencyKey: "dentist" });
    expect(dropped.status === "error" && dropped.boundary).toBe("effect_failed");
    const again = await approved(single, "calendar.create_event", { ...lunch, summary: "Dentist" }, { idempotencyKey: "dentist" });
    expect(again.status).toBe("ok");
    expect(harness.emulator.calendar.events().filter((e) => e.summary === "Dentist")).toHaveLength(1);
  });

  it("maps the emulator's 403 for a token lacking calendar.events to scope_missing; nothing is created", async () => {
    const { connectors, vault, secrets } = await harness.connect([CALENDAR_SCOPES.readonly]);
    const [info] = await vault.list();
    const tokens = (await vault.readTokens(info!.id))!;
    await vault.writeTokens(info!.id, { ...tokens, scopes: [CALENDAR_SCOPES.readonly, CALENDAR_SCOPES.events] });
    const gate = gateWith({}, { connectors, secrets });
    const result = await approved(gate, "calendar.create_event", lunch);
    expect(result.status === "error" && result.code).toBe("scope_missing");
    expect(lunches()).toHaveLength(0);
    const everything = JSON.stringify([result, await gate.journal.readAudit()]);
    for (const secret of secrets) expect(everything).not.toContain(secret);
  });

  it("refuses writes to a calendar shared read-only, and an update approved for one event state once it changed", async () => {
    const gate = gateWith();
    const readOnly = await approved(gate, "calendar.create_event", { ...lunch, calendarId: "team@group.calendar.emulator.test" });
    expect(readOnly.status === "error" && readOnly.code).toBe("provider_rejected");

    const first = await gate.invoke("calendar.update_event", { eventId: "revue00001", changes: { summary: "Review (moved)" } }, call);
    expect(first.status).toBe("approval_required");
    if (first.status !== "approval_required") return;
    expect(first.preview.details?.["changes"]).toEqual([{ field: "summary", before: "Design review", after: "Review (moved)" }]);
    const grant = await grantAsOwner(gate, first.requestId);
    await approved(gate, "calendar.update_event", { eventId: "revue00001", changes: { summary: "Renamed by someone else" } });
    const stale = await gate.invoke("calendar.update_event", { eventId: "revue00001", changes: { summary: "Review (moved)" } }, { ...call, approval: grant });
    expect(stale.status === "denied" && stale.code).toBe("approval_invalid");
  });

  it("retries 429 and 5xx on reads and on the id-deduplicated insert, honouring Retry-After", async () => {
    const gate = gateWith();
    harness.emulator.inject({ kind: "rate_limit", retryAfterSeconds: 0, methods: ["calendar.events.list"] });
    const list = await gate.invoke("calendar.list_events", { timeMin: "2025-03-10T00:00:00-04:00", timeMax: "2025-03-11T00:00:00-04:00" }, call);
    expect(list.status).toBe("ok");
    harness.emulator.inject({ kind: "server_error", status: 503, methods: ["calendar.events.insert"] });
    const created = await approved(gate, "calendar.create_event", lunch);
    expect(created.status).toBe("ok");
    expect(harness.emulator.requests.filter((r) => r.endpoint === "calendar.events.insert").map((r) => r.status)).toEqual([503, 200]);
    harness.emulator.inject({ kind: "rate_limit", retryAfterSeconds: 600, methods: ["calendar.calendarList.list"] });
    const limited = await gate.invoke("calendar.list_calendars", {}, call);
    expect(limited.status === "error" && limited.code).toBe("rate_limited");
  });

  it("flags and fences an event description that tries to instruct the agent", async () => {
    const gate = gateWith();
    const result = await gate.invoke("calendar.get_event", { eventId: "inj0000001" }, call);
    expect(result.status === "ok" && result.findings.length).toBeGreaterThan(0);
    expect(result.status === "ok" && result.content).toContain("<untrusted-data");
  });

  it("fences an updated event: the fields the change left alone were written by someone else", async () => {
    const gate = gateWith();
    const result = await approved(gate, "calendar.update_event", { eventId: "inj0000001", changes: { location: "Room 2" } });
    expect(result).toMatchObject({ status: "ok", untrusted: true, output: { location: "Room 2" } });
    expect(result.status === "ok" && result.findings.length).toBeGreaterThan(0);
    expect(result.status === "ok" && result.content).toMatch(/^<untrusted-data boundary="tg-[0-9a-f]+" tool="calendar.update_event">/);
  });

  it("fences the update's preview for the model: it quotes the event someone else wrote", async () => {
    const gate = gateWith();
    const first = await gate.invoke("calendar.update_event", { eventId: "inj0000001", changes: { description: "mine now" } }, call);
    expect(first.status).toBe("approval_required");
    if (first.status !== "approval_required") return;
    expect(first.content).toMatch(/^calendar.update_event has not run: a human must approve it first/);
    expect(first.content).toContain('<untrusted-data boundary="tg-');
    expect(first.previewFindings?.length).toBeGreaterThan(0);
  });

  // ---------- every tool, time zones and all-day events ----------

  it("creates a wall-clock event in another zone and reads it back at the right instant", async () => {
    const gate = gateWith();
    const created = await approved(gate, "calendar.create_event", lunch, { idempotencyKey: "lunch-tz" });
    expect(created.status).toBe("ok");
    if (created.status !== "ok") return;
    const output = created.output as { id: string; start: { dateTime?: string; timeZone?: string }; allDay: boolean };
    expect(output.id).toBe(eventIdFor((await gate.journal.listOutbox({ states: ["completed"] }))[0]!.key));
    expect(output.start).toEqual({ dateTime: "2025-03-12T12:00:00", timeZone: "Europe/Paris" });
    expect(output.allDay).toBe(false);
    // 12:00 in Paris (UTC+1 on 12 March) is 07:00 in New York (UTC-4 after its DST change).
    const busy = await gate.invoke("calendar.free_busy", { timeMin: "2025-03-12T00:00:00Z", timeMax: "2025-03-13T00:00:00Z" }, call);
    expect(busy.status === "ok" && busy.output).toEqual({
      calendars: [{ calendarId: "primary", busy: [{ start: "2025-03-12T11:00:00Z", end: "2025-03-12T12:30:00Z" }], error: null }],
    });
    const listed = await gate.invoke(
      "calendar.list_events",
      { timeMin: "2025-03-12T06:00:00-04:00", timeMax: "2025-03-12T08:00:00-04:00", timeZone: "America/New_York" },
      call,
    );
    expect(
      listed.status === "ok" &&
        (listed.output as { events: { summary: string; start: { dateTime?: string } }[] }).events.map((e) => [e.summary, e.start.dateTime]),
    ).toEqual([["Lunch with Ana", "2025-03-12T07:00:00-04:00"]]);
    expect(harness.emulator.calendar.notifications).toHaveLength(0);
  });

  it("creates all-day events with an exclusive end date, and finds them in the owner's zone", async () => {
    const gate = gateWith();
    const created = await approved(gate, "calendar.create_event", {
      summary: "Offsite",
      start: { date: "2025-03-20" },
      end: { date: "2025-03-22" },
      notifyAttendees: true,
      attendees: ["ana@example.test"],
    });
    expect(created.status === "ok" && (created.output as { allDay: boolean; end: unknown }).allDay).toBe(true);
    expect(harness.emulator.calendar.notifications.map((n) => n.recipients)).toEqual([["ana@example.test"]]);
    // Midnight 20 March in New York is 04:00 UTC; the event covers two whole local days.
    const busy = await gate.invoke("calendar.free_busy", { timeMin: "2025-03-19T00:00:00Z", timeMax: "2025-03-23T00:00:00Z" }, call);
    expect(busy.status === "ok" && busy.output).toMatchObject({ calendars: [{ busy: [{ start: "2025-03-20T04:00:00Z", end: "2025-03-22T04:00:00Z" }] }] });
    const sameDay = await gate.invoke("calendar.create_event", { summary: "x", start: { date: "2025-03-20" }, end: { date: "2025-03-20" } }, call);
    expect(sameDay.status === "error" && sameDay.message).toContain("end date is exclusive");
  });

  it("runs every tool end to end", async () => {
    const gate = gateWith();
    const calendars = await gate.invoke("calendar.list_calendars", {}, call);
    expect(
      calendars.status === "ok" && (calendars.output as { calendars: { id: string; primary: boolean }[] }).calendars.map((c) => [c.id, c.primary]),
    ).toEqual([
      ["owner@example.test", true],
      ["team@group.calendar.emulator.test", false],
    ]);
    const found = await gate.invoke(
      "calendar.list_events",
      { timeMin: "2025-03-10T00:00:00-04:00", timeMax: "2025-03-17T00:00:00-04:00", query: "plan" },
      call,
    );
    expect(found.status === "ok" && (found.output as { events: { id: string }[] }).events.map((e) => e.id)).toEqual(["revue00001"]);
    const got = await gate.invoke("calendar.get_event", { eventId: "hol0000001" }, call);
    expect(got.status === "ok" && got.output).toMatchObject({ allDay: true, start: { date: "2025-03-14" }, end: { date: "2025-03-15" } });

    const moved = await approved(gate, "calendar.update_event", {
      eventId: "revue00001",
      changes: { start: { date: "2025-03-18" }, end: { date: "2025-03-19" }, location: "Room 4" },
    });
    expect(moved.status === "ok" && moved.output).toMatchObject({ allDay: true, start: { date: "2025-03-18" }, location: "Room 4", summary: "Design review" });
    const stored = harness.emulator.calendar.events().find((e) => e.id === "revue00001");
    expect(stored?.start).toEqual({ date: "2025-03-18" });

    const deleted = await approved(gate, "calendar.delete_event", { eventId: "revue00001" });
    expect(deleted.status === "ok" && deleted.output).toEqual({ eventId: "revue00001", deleted: true, alreadyDeleted: false });
    expect(harness.emulator.calendar.events().find((e) => e.id === "revue00001")?.status).toBe("cancelled");
    const missing = await gate.invoke("calendar.get_event", { eventId: "nope000001" }, call);
    expect(missing.status === "error" && missing.code).toBe("not_found");
  });
});
