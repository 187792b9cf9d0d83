import { describeToolFamily } from "@toolgate/core/testing";
import type { CalendarFixture } from "@toolgate/emulators";
import { afterAll } from "vitest";
import { createCalendarTools } from "./calendar-tools.js";
import { CALENDARS, startHarness } from "./fixtures/harness.js";

// One emulator for the file (the family needs its URL up front); every test gets fresh calendars
// and a fresh connection whose tokens came from the emulator's token endpoint.
const harness = await startHarness();
afterAll(() => harness.emulator.close());

const window = { timeMin: "2025-03-10T00:00:00-04:00", timeMax: "2025-03-17T00:00:00-04:00" };

/**
 * The starting calendars plus a secret in every place a tool reads back: a shared calendar whose id
 * and name carry it, an event whose title and description do, and an event whose id is the secret.
 */
function calendarsWithSecret(secret: string): CalendarFixture {
  const hour = (h: number) => ({ dateTime: `2025-03-12T${String(h).padStart(2, "0")}:00:00-04:00` });
  return {
    ...CALENDARS,
    calendars: [...(CALENDARS.calendars ?? []), { id: `${secret}@group.calendar.emulator.test`, summary: `Planted ${secret}`, accessRole: "reader" }],
    events: [
      ...(CALENDARS.events ?? []),
      { id: "planted0001", summary: `Code ${secret}`, description: `The code is ${secret}.`, start: hour(9), end: hour(10) },
      { id: secret, summary: "Planted by id", start: hour(11), end: hour(12) },
    ],
  };
}

describeToolFamily(createCalendarTools({ rootUrl: harness.emulator.url }), {
  makeContext: async () => {
    harness.emulator.reset();
    const { connectors, secrets } = await harness.connect();
    return { connectors, secrets };
  },
  validInputs: {
    "calendar.list_calendars": {},
    "calendar.list_events": window,
    "calendar.get_event": { eventId: "revue00001" },
    "calendar.free_busy": window,
    "calendar.create_event": {
      summary: "Lunch",
      start: { dateTime: "2025-03-12T12:00:00", timeZone: "Europe/Paris" },
      end: { dateTime: "2025-03-12T13:00:00", timeZone: "Europe/Paris" },
    },
    "calendar.update_event": { eventId: "revue00001", changes: { summary: "Design review (moved)" } },
    "calendar.delete_event": { eventId: "revue00001" },
  },
  invalidInputs: {
    "calendar.create_event": [
      { summary: "Day off", start: { date: "2025-03-12" }, end: { date: "2025-03-12" } },
      { summary: "Floating", start: { dateTime: "2025-03-12T12:00:00" }, end: { dateTime: "2025-03-12T13:00:00" } },
      {
        summary: "Bad zone",
        start: { dateTime: "2025-03-12T12:00:00", timeZone: "Mars/Olympus" },
        end: { dateTime: "2025-03-12T13:00:00", timeZone: "Mars/Olympus" },
      },
      { summary: "Backwards", start: { dateTime: "2025-03-12T13:00:00Z" }, end: { dateTime: "2025-03-12T12:00:00Z" } },
      { summary: "Mixed", start: { date: "2025-03-12" }, end: { dateTime: "2025-03-12T12:00:00Z" } },
      { summary: "Line\nbreak", start: { date: "2025-03-12" }, end: { date: "2025-03-13" } },
    ],
    "calendar.list_events": [{ timeMin: "2025-03-10T00:00:00", timeMax: "2025-03-17T00:00:00" }],
    "calendar.update_event": [{ eventId: "revue00001", changes: {} }],
  },
  // Each tool reads the secret back from the emulator's calendars; free/busy, create and delete
  // answer with the calendar id, title or event id they were given, so those carry it.
  plantSecret: (toolId, secret) => {
    harness.emulator.reset({ calendar: calendarsWithSecret(secret) });
    const inputs: Record<string, unknown> = {
      "calendar.list_calendars": {},
      "calendar.list_events": window,
      "calendar.get_event": { eventId: "planted0001" },
      "calendar.free_busy": { ...window, calendarIds: [`${secret}@group.calendar.emulator.test`] },
      "calendar.create_event": {
        summary: `Planted ${secret}`,
        start: { dateTime: "2025-03-13T12:00:00", timeZone: "Europe/Paris" },
        end: { dateTime: "2025-03-13T13:00:00", timeZone: "Europe/Paris" },
      },
      "calendar.update_event": { eventId: "planted0001", changes: { location: "Room 2" } },
      "calendar.delete_event": { eventId: secret },
    };
    return inputs[toolId];
  },
});
