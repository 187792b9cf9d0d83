import type { calendar_v3 } from "@googleapis/calendar";
import { intParam, offsetOf, pageTokenOf } from "../http.js";
import { ok, type Route } from "../routes.js";
import type { CalendarStore } from "./calendar-store.js";

const SEG = "([^/]+)";
const ifMatchOf = (value: string | string[] | undefined): string | undefined => (Array.isArray(value) ? value[0] : value);

/** Calendar v3 routes over one account's calendars. */
export function calendarRoutes(current: () => CalendarStore): Route[] {
  return [
    {
      verb: "GET",
      pattern: /^\/calendar\/v3\/users\/me\/calendarList$/,
      id: "calendar.calendarList.list",
      handle: (r) => {
        const all = current().listCalendars();
        const size = Math.max(1, intParam(r.url.searchParams, "maxResults", 100, 250));
        const offset = offsetOf(r.url.searchParams.get("pageToken"));
        const body: calendar_v3.Schema$CalendarList = {
          kind: "calendar#calendarList",
          etag: `"${all.length}"`,
          items: all.slice(offset, offset + size),
          ...(offset + size < all.length ? { nextPageToken: pageTokenOf(offset + size) } : {}),
        };
        return ok(body);
      },
    },
    {
      verb: "GET",
      pattern: new RegExp(`^/calendar/v3/calendars/${SEG}/events$`),
      id: "calendar.events.list",
      handle: (r) => {
        const { calendar, items } = current().list(r.params[0]!, r.url.searchParams);
        const size = Math.max(1, intParam(r.url.searchParams, "maxResults", 250, 2500));
        const offset = offsetOf(r.url.searchParams.get("pageToken"));
        const body: calendar_v3.Schema$Events = {
          kind: "calendar#events",
          etag: `"${items.length}"`,
          summary: calendar.summary ?? null,
          timeZone: r.url.searchParams.get("timeZone") ?? calendar.timeZone ?? null,
          accessRole: calendar.accessRole ?? null,
          updated: new Date(0).toISOString(),
          defaultReminders: [],
          items: items.slice(offset, offset + size),
          ...(offset + size < items.length ? { nextPageToken: pageTokenOf(offset + size) } : {}),
        };
        return ok(body);
      },
    },
    {
      verb: "POST",
      pattern: new RegExp(`^/calendar/v3/calendars/${SEG}/events$`),
      id: "calendar.events.insert",
      handle: (r) => ok(current().insert(r.params[0]!, r.body, r.url.searchParams) satisfies calendar_v3.Schema$Event),
    },
    {
      verb: "GET",
      pattern: new RegExp(`^/calendar/v3/calendars/${SEG}/events/${SEG}$`),
      id: "calendar.events.get",
      handle: (r) => ok(current().get(r.params[0]!, r.params[1]!, r.url.searchParams) satisfies calendar_v3.Schema$Event),
    },
    {
      verb: "PATCH",
      pattern: new RegExp(`^/calendar/v3/calendars/${SEG}/events/${SEG}$`),
      id: "calendar.events.patch",
      handle: (r) =>
        ok(current().patch(r.params[0]!, r.params[1]!, r.body, r.url.searchParams, ifMatchOf(r.headers["if-match"])) satisfies calendar_v3.Schema$Event),
    },
    {
      verb: "DELETE",
      pattern: new RegExp(`^/calendar/v3/calendars/${SEG}/events/${SEG}$`),
      id: "calendar.events.delete",
      handle: (r) => {
        current().delete(r.params[0]!, r.params[1]!, r.url.searchParams, ifMatchOf(r.headers["if-match"]));
        return { status: 204 };
      },
    },
    {
      verb: "POST",
      pattern: /^\/calendar\/v3\/freeBusy$/,
      id: "calendar.freebusy.query",
      handle: (r) => ok(current().freeBusy(r.body) satisfies calendar_v3.Schema$FreeBusyResponse),
    },
  ];
}
