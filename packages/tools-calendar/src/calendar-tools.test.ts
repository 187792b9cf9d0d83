import { describeToolFamily } from "@toolgate/core/testing";
import { afterAll } from "vitest";
import { createCalendarTools } from "./calendar-tools.js";
import { startHarness } from "./fixtures/harness.js";

// One emulator for the file (the family needs its URL up front); every test gets fresh calendars
// and a fresh connection whose tokens came from the emulator's token endpoint.
const harness = await startHarness();
afterAll(() => harness.emulator.close());

const window = { timeMin: "2025-03-10T00:00:00-04:00", timeMax: "2025-03-17T00:00:00-04:00" };

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
    "calendar.create_event": { summary: "Lunch", start: { dateTime: "2025-03-12T12:00:00", timeZone: "Europe/Paris" }, end: { dateTime: "2025-03-12T13:00:00", timeZone: "Europe/Paris" } },
    "calendar.update_event": { eventId: "revue00001", changes: { summary: "Design review (moved)" } },
    "calendar.delete_event": { eventId: "revue00001" },
  },
  invalidInputs: {
    "calendar.create_event": [
      { summary: "Day off", start: { date: "2025-03-12" }, end: { date: "2025-03-12" } },
      { summary: "Floating", start: { dateTime: "2025-03-12T12:00:00" }, end: { dateTime: "2025-03-12T13:00:00" } },
      { summary: "Bad zone", start: { dateTime: "2025-03-12T12:00:00", timeZone: "Mars/Olympus" }, end: { dateTime: "2025-03-12T13:00:00", timeZone: "Mars/Olympus" } },
      { summary: "Backwards", start: { dateTime: "2025-03-12T13:00:00Z" }, end: { dateTime: "2025-03-12T12:00:00Z" } },
      { summary: "Mixed", start: { date: "2025-03-12" }, end: { dateTime: "2025-03-12T12:00:00Z" } },
      { summary: "Line\nbreak", start: { date: "2025-03-12" }, end: { date: "2025-03-13" } },
    ],
    "calendar.list_events": [{ timeMin: "2025-03-10T00:00:00", timeMax: "2025-03-17T00:00:00" }],
    "calendar.update_event": [{ eventId: "revue00001", changes: {} }],
  },
});
