import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { startGoogleEmulator, type GoogleEmulator } from "./google-emulator.js";
import { connect, SCOPE, statusOf } from "./fixtures/test-clients.js";

describe("google emulator: Calendar v3 through @googleapis/calendar", () => {
  let emulator: GoogleEmulator;
  beforeEach(async () => {
    emulator = await startGoogleEmulator({
      calendar: {
        owner: "owner@example.test",
        timeZone: "America/New_York",
        calendars: [{ id: "team@group.calendar.emulator.test", summary: "Team", timeZone: "Europe/Berlin", accessRole: "reader" }],
        events: [
          {
            id: "stand00001",
            summary: "Standup",
            start: { dateTime: "2025-03-07T09:00:00", timeZone: "America/New_York" },
            end: { dateTime: "2025-03-07T09:15:00", timeZone: "America/New_York" },
            recurrence: ["RRULE:FREQ=DAILY;COUNT=5"],
          },
          { id: "holid00001", summary: "Holiday", start: { date: "2025-03-10" }, end: { date: "2025-03-11" }, transparency: "transparent" },
          {
            id: "revue00001",
            summary: "Design review",
            description: "Bring the plan",
            start: { dateTime: "2025-03-10T14:00:00-04:00" },
            end: { dateTime: "2025-03-10T15:00:00-04:00" },
            attendees: [{ email: "ana@example.test" }],
          },
        ],
      },
    });
  });
  afterEach(() => emulator.close());

  it("lists calendars", async () => {
    const { cal } = await connect(emulator, [SCOPE.calendarReadonly]);
    const list = await cal.calendarList.list();
    expect(list.data.items?.map((c) => [c.id, c.primary ?? false, c.timeZone])).toEqual([
      ["owner@example.test", true, "America/New_York"],
      ["team@group.calendar.emulator.test", false, "Europe/Berlin"],
    ]);
  });

  it("lists events in a window, expands recurrences across a DST change, searches and pages", async () => {
    const { cal } = await connect(emulator, [SCOPE.calendarReadonly]);
    const window = {
      calendarId: "primary",
      timeMin: "2025-03-08T00:00:00-05:00",
      timeMax: "2025-03-11T00:00:00-04:00",
      singleEvents: true,
      orderBy: "startTime",
    };
    const events = (await cal.events.list(window)).data.items ?? [];
    expect(events.map((e) => e.summary)).toEqual(["Standup", "Standup", "Holiday", "Standup", "Design review"]);
    // 9:00 local on each side of the 2025-03-09 change: -05:00 then -04:00.
    expect(events.filter((e) => e.summary === "Standup").map((e) => e.start?.dateTime)).toEqual([
      "2025-03-08T09:00:00-05:00",
      "2025-03-09T09:00:00-04:00",
      "2025-03-10T09:00:00-04:00",
    ]);
    expect(events[0]?.recurringEventId).toBe("stand00001");
    expect((await cal.events.list({ ...window, q: "plan" })).data.items?.map((e) => e.id)).toEqual(["revue00001"]);
    const page = await cal.events.list({ ...window, maxResults: 2 });
    expect(page.data.items).toHaveLength(2);
    const rest = await cal.events.list({ ...window, maxResults: 10, pageToken: page.data.nextPageToken ?? "" });
    expect(rest.data.items).toHaveLength(3);
    await expect(cal.events.list({ calendarId: "primary", orderBy: "startTime" })).rejects.toSatisfy((e) => statusOf(e) === 400);
    await expect(cal.events.list({ calendarId: "primary", timeMin: "2025-03-08T00:00:00" })).rejects.toSatisfy((e) => statusOf(e) === 400);
  });

  it("inserts honouring a client-supplied id (a second insert with it is 409), gets, patches and deletes", async () => {
    const { cal } = await connect(emulator, [SCOPE.calendarEvents]);
    const body = {
      id: "abcdefv0123",
      summary: "Lunch",
      start: { dateTime: "2025-03-12T12:00:00", timeZone: "Europe/Paris" },
      end: { dateTime: "2025-03-12T13:00:00", timeZone: "Europe/Paris" },
    };
    const created = await cal.events.insert({ calendarId: "primary", requestBody: body });
    expect(created.data.id).toBe("abcdefv0123");
    const dup: unknown = await cal.events.insert({ calendarId: "primary", requestBody: body }).catch((e: unknown) => e);
    expect(statusOf(dup)).toBe(409);
    await expect(cal.events.insert({ calendarId: "primary", requestBody: { ...body, id: "UPPER_case" } })).rejects.toSatisfy((e) => statusOf(e) === 400);
    await expect(cal.events.insert({ calendarId: "primary", requestBody: { ...body, id: "wxyz0" } })).rejects.toSatisfy((e) => statusOf(e) === 400);
    await expect(cal.events.insert({ calendarId: "primary", requestBody: { summary: "x", start: body.start } })).rejects.toSatisfy((e) => statusOf(e) === 400);
    const etag = created.data.etag ?? "";
    const patched = await cal.events.patch(
      { calendarId: "primary", eventId: "abcdefv0123", requestBody: { summary: "Long lunch", end: { dateTime: "2025-03-12T14:00:00" } } },
      { headers: { "If-Match": etag } },
    );
    expect(patched.data.summary).toBe("Long lunch");
    expect(patched.data.end).toEqual({ dateTime: "2025-03-12T14:00:00", timeZone: "Europe/Paris" });
    expect(patched.data.sequence).toBe(1);
    await expect(
      cal.events.patch({ calendarId: "primary", eventId: "abcdefv0123", requestBody: { summary: "stale" } }, { headers: { "If-Match": etag } }),
    ).rejects.toSatisfy((e) => statusOf(e) === 412);
    expect((await cal.events.get({ calendarId: "primary", eventId: "abcdefv0123" })).data.summary).toBe("Long lunch");
    await cal.events.delete({ calendarId: "primary", eventId: "abcdefv0123" });
    await expect(cal.events.delete({ calendarId: "primary", eventId: "abcdefv0123" })).rejects.toSatisfy((e) => statusOf(e) === 410);
    await expect(cal.events.get({ calendarId: "primary", eventId: "missing000" })).rejects.toSatisfy((e) => statusOf(e) === 404);
    const again: unknown = await cal.events.insert({ calendarId: "primary", requestBody: body }).catch((e: unknown) => e);
    expect(statusOf(again)).toBe(409);
  });

  it("refuses writes to a read-only calendar and writes with a read-only token", async () => {
    const { cal } = await connect(emulator, [SCOPE.calendarEvents]);
    const body = { summary: "x", start: { date: "2025-03-12" }, end: { date: "2025-03-13" } };
    await expect(cal.events.insert({ calendarId: "team@group.calendar.emulator.test", requestBody: body })).rejects.toSatisfy((e) => statusOf(e) === 403);
    const { cal: reader } = await connect(emulator, [SCOPE.calendarReadonly]);
    await expect(reader.events.insert({ calendarId: "primary", requestBody: body })).rejects.toSatisfy((e) => statusOf(e) === 403);
    expect(emulator.calendar.events().filter((e) => e.summary === "x")).toHaveLength(0);
  });

  it("answers freebusy with merged busy spans, skipping transparent events and naming unknown calendars", async () => {
    const { cal } = await connect(emulator, [SCOPE.calendarReadonly]);
    const res = await cal.freebusy.query({
      requestBody: { timeMin: "2025-03-10T00:00:00-04:00", timeMax: "2025-03-11T00:00:00-04:00", items: [{ id: "primary" }, { id: "nobody@example.test" }] },
    });
    expect(res.data.calendars?.["primary"]?.busy).toEqual([
      { start: "2025-03-10T13:00:00Z", end: "2025-03-10T13:15:00Z" },
      { start: "2025-03-10T18:00:00Z", end: "2025-03-10T19:00:00Z" },
    ]);
    expect(res.data.calendars?.["nobody@example.test"]?.errors?.[0]?.reason).toBe("notFound");
  });

  it("records notifications only when sendUpdates asks for them", async () => {
    const { cal } = await connect(emulator, [SCOPE.calendarEvents]);
    const body = {
      summary: "Sync",
      attendees: [{ email: "ana@example.test" }],
      start: { dateTime: "2025-03-12T10:00:00Z" },
      end: { dateTime: "2025-03-12T10:30:00Z" },
    };
    await cal.events.insert({ calendarId: "primary", requestBody: body });
    expect(emulator.calendar.notifications).toHaveLength(0);
    await cal.events.insert({ calendarId: "primary", sendUpdates: "all", requestBody: body });
    expect(emulator.calendar.notifications.map((n) => n.recipients)).toEqual([["ana@example.test"]]);
  });
});
