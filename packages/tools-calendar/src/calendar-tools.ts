import { defineFamily } from "@toolgate/core";
import { resolveOptions, type CalendarToolsOptions } from "./options.js";
import { CALENDAR_PERMISSIONS } from "./permissions.js";
import { createEventTool } from "./tools/create-event.js";
import { deleteEventTool } from "./tools/delete-event.js";
import { freeBusyTool } from "./tools/free-busy.js";
import { getEventTool } from "./tools/get-event.js";
import { listCalendarsTool } from "./tools/list-calendars.js";
import { listEventsTool } from "./tools/list-events.js";
import { updateEventTool } from "./tools/update-event.js";

/**
 * The Google Calendar family, for `createToolRegistry({ families })`.
 *
 * | tool | token | Google scope | approval |
 * |---|---|---|---|
 * | `calendar.list_calendars`, `calendar.list_events`, `calendar.get_event`, `calendar.free_busy` | `calendar:read` | `calendar.readonly` | never |
 * | `calendar.create_event`, `calendar.update_event` | `calendar:write` | `calendar.events` | always |
 * | `calendar.delete_event` | `calendar:write` | `calendar.events` | always (cannot be undone) |
 *
 * `create_event` derives the event id from the call's idempotency key, so a retry or a recovery
 * replay after a lost answer finds the event instead of creating a second one.
 */
export function createCalendarTools(options: CalendarToolsOptions = {}) {
  const config = resolveOptions(options);
  return defineFamily({
    name: "calendar",
    description: "Google Calendar: list and read events and free/busy; create, update and delete events with approval.",
    tools: [
      listCalendarsTool(config),
      listEventsTool(config),
      getEventTool(config),
      freeBusyTool(config),
      createEventTool(config),
      updateEventTool(config),
      deleteEventTool(config),
    ],
    permissions: CALENDAR_PERMISSIONS,
  });
}
