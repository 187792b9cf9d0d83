import { randomBytes } from "node:crypto";
import type { calendar_v3 } from "@googleapis/calendar";
import { isRecord } from "../../is-record.js";
import { ApiError, badRequest, notFound } from "../http.js";
import { instantOf, isTimeZone, localTimeOf, parseDate, parseDateTime, rfc3339In } from "./time-zones.js";

/** A calendar in a fixture. */
export interface CalendarSeed {
  readonly id: string;
  readonly summary?: string;
  /** IANA zone; default the fixture's `timeZone`. */
  readonly timeZone?: string;
  /** Default `owner`. */
  readonly accessRole?: "owner" | "writer" | "reader" | "freeBusyReader";
}

export interface CalendarFixture {
  /** The owner's address, which is also the primary calendar's id; default `owner@example.test`. */
  readonly owner?: string;
  /** The primary calendar's zone; default `UTC`. */
  readonly timeZone?: string;
  /** Calendars besides the primary. */
  readonly calendars?: readonly CalendarSeed[];
  /** Events; `calendarId` defaults to the primary. Stored as given, with server fields filled in. */
  readonly events?: readonly (calendar_v3.Schema$Event & { readonly calendarId?: string })[];
}

/** An invitation or update the emulator would have emailed (`sendUpdates`). */
export interface CalendarNotification {
  readonly calendarId: string;
  readonly eventId: string;
  readonly kind: "invite" | "update" | "cancel";
  readonly recipients: readonly string[];
}

interface StoredEvent {
  event: calendar_v3.Schema$Event;
  startMs: number;
  endMs: number;
}

interface StoredCalendar {
  readonly entry: calendar_v3.Schema$CalendarListEntry;
  readonly events: Map<string, StoredEvent>;
}

const EVENT_ID = /^[a-v0-9]{5,1024}$/;
const MAX_INSTANCES = 2000;

/** @internal the emulated calendars of one account. */
export class CalendarStore {
  readonly owner: string;
  private readonly calendars = new Map<string, StoredCalendar>();
  private readonly notificationLog: CalendarNotification[] = [];
  private etagCounter = 3_100_000_000_000_000;

  constructor(
    fixture: CalendarFixture,
    private readonly clock: () => number,
  ) {
    this.owner = (fixture.owner ?? "owner@example.test").toLowerCase();
    const zone = fixture.timeZone ?? "UTC";
    if (!isTimeZone(zone)) throw new Error(`fixture time zone ${zone} is not an IANA zone`);
    this.addCalendar({ id: this.owner, summary: this.owner, timeZone: zone, accessRole: "owner" }, true);
    for (const c of fixture.calendars ?? []) this.addCalendar({ ...c, timeZone: c.timeZone ?? zone }, false);
    for (const { calendarId, ...event } of fixture.events ?? []) this.insert(calendarId ?? "primary", event, new URLSearchParams());
  }

  get notifications(): readonly CalendarNotification[] {
    return [...this.notificationLog];
  }

  /** Every stored event of a calendar (cancelled ones included), for tests. */
  events(calendarId = "primary"): readonly calendar_v3.Schema$Event[] {
    return [...this.calendar(calendarId).events.values()].map((e) => structuredClone(e.event));
  }

  listCalendars(): calendar_v3.Schema$CalendarListEntry[] {
    return [...this.calendars.values()].map((c) => ({ ...c.entry }));
  }

  list(calendarId: string, params: URLSearchParams): { calendar: calendar_v3.Schema$CalendarListEntry; items: calendar_v3.Schema$Event[] } {
    const calendar = this.calendar(calendarId);
    const zone = calendar.entry.timeZone ?? "UTC";
    const timeMin = boundParam(params, "timeMin");
    const timeMax = boundParam(params, "timeMax");
    if (timeMin !== undefined && timeMax !== undefined && timeMax <= timeMin) throw badRequest("The specified time range is empty.", "timeRangeEmpty");
    const singleEvents = params.get("singleEvents") === "true";
    const orderBy = params.get("orderBy");
    if (orderBy !== null && orderBy !== "startTime" && orderBy !== "updated") throw badRequest(`Invalid value for orderBy: ${orderBy}`, "invalidParameter");
    if (orderBy === "startTime" && !singleEvents) throw badRequest("The requested ordering is not available for the particular query.", "badRequest");
    const showDeleted = params.get("showDeleted") === "true";
    const q = (params.get("q") ?? "").trim().toLowerCase();
    const outZone = params.get("timeZone") ?? undefined;
    if (outZone !== undefined && !isTimeZone(outZone)) throw badRequest("Invalid time zone definition.", "invalid");
    let stored = [...calendar.events.values()].filter((e) => showDeleted || e.event.status !== "cancelled");
    if (singleEvents) stored = stored.flatMap((e) => expand(e, zone, timeMin, timeMax));
    const items = stored
      .filter((e) => (timeMin === undefined || e.endMs > timeMin) && (timeMax === undefined || e.startMs < timeMax))
      .filter((e) => q === "" || q.split(/\s+/).every((word) => searchText(e.event).includes(word)))
      .sort((a, b) => (orderBy === "updated" ? (a.event.updated ?? "").localeCompare(b.event.updated ?? "") : a.startMs - b.startMs))
      .map((e) => render(e, outZone));
    return { calendar: calendar.entry, items };
  }

  get(calendarId: string, eventId: string, params: URLSearchParams): calendar_v3.Schema$Event {
    const stored = this.calendar(calendarId).events.get(eventId);
    if (!stored) throw notFound("Not Found");
    return render(stored, params.get("timeZone") ?? undefined);
  }

  insert(calendarId: string, body: unknown, params: URLSearchParams): calendar_v3.Schema$Event {
    const calendar = this.calendar(calendarId);
    this.writable(calendar);
    if (!isRecord(body)) throw badRequest("Bad Request", "badRequest");
    const input = body as calendar_v3.Schema$Event;
    const id = input.id ?? randomBytes(16).toString("hex").replace(/[w-z]/g, "v");
    if (typeof id !== "string" || !EVENT_ID.test(id)) throw badRequest("Invalid resource id value.", "invalid");
    if (calendar.events.has(id)) throw new ApiError(409, "duplicate", "The requested identifier already exists.");
    const zone = calendar.entry.timeZone ?? "UTC";
    const now = new Date(this.clock()).toISOString();
    const event: calendar_v3.Schema$Event = {
      ...structuredClone(input),
      kind: "calendar#event",
      id,
      etag: this.etag(),
      status: input.status === "tentative" ? "tentative" : "confirmed",
      htmlLink: `https://calendar.emulator.test/event?eid=${Buffer.from(`${id} ${calendar.entry.id}`).toString("base64url")}`,
      created: now,
      updated: now,
      iCalUID: input.iCalUID ?? `${id}@google.com`,
      sequence: input.sequence ?? 0,
      creator: { email: this.owner, self: true },
      organizer: input.organizer ?? { email: calendar.entry.id ?? this.owner, self: true },
      reminders: input.reminders ?? { useDefault: true },
      eventType: input.eventType ?? "default",
    };
    const times = timesOf(event, zone);
    const stored: StoredEvent = { event, ...times };
    calendar.events.set(id, stored);
    this.notify(calendar, stored, "invite", params);
    return render(stored, undefined);
  }

  patch(calendarId: string, eventId: string, body: unknown, params: URLSearchParams, ifMatch: string | undefined): calendar_v3.Schema$Event {
    const calendar = this.calendar(calendarId);
    this.writable(calendar);
    const stored = calendar.events.get(eventId);
    if (!stored || stored.event.status === "cancelled") throw notFound("Not Found");
    if (ifMatch !== undefined && ifMatch !== "*" && ifMatch !== stored.event.etag)
      throw new ApiError(412, "conditionNotMet", "Precondition Failed", { location: "If-Match", locationType: "header" });
    if (!isRecord(body)) throw badRequest("Bad Request", "badRequest");
    const { id: _id, etag: _etag, kind: _kind, created: _created, iCalUID: _ical, ...changes } = body as calendar_v3.Schema$Event;
    const next = merge(structuredClone(stored.event) as Record<string, unknown>, changes as Record<string, unknown>) as calendar_v3.Schema$Event;
    const times = timesOf(next, calendar.entry.timeZone ?? "UTC");
    const moved = times.startMs !== stored.startMs || times.endMs !== stored.endMs;
    next.sequence = (stored.event.sequence ?? 0) + (moved ? 1 : 0);
    next.etag = this.etag();
    next.updated = new Date(this.clock()).toISOString();
    stored.event = next;
    stored.startMs = times.startMs;
    stored.endMs = times.endMs;
    this.notify(calendar, stored, "update", params);
    return render(stored, undefined);
  }

  delete(calendarId: string, eventId: string, params: URLSearchParams, ifMatch: string | undefined): void {
    const calendar = this.calendar(calendarId);
    this.writable(calendar);
    const stored = calendar.events.get(eventId);
    if (!stored) throw notFound("Not Found");
    if (stored.event.status === "cancelled") throw new ApiError(410, "deleted", "Resource has been deleted");
    if (ifMatch !== undefined && ifMatch !== "*" && ifMatch !== stored.event.etag)
      throw new ApiError(412, "conditionNotMet", "Precondition Failed", { location: "If-Match", locationType: "header" });
    stored.event = { ...stored.event, status: "cancelled", etag: this.etag(), updated: new Date(this.clock()).toISOString() };
    this.notify(calendar, stored, "cancel", params);
  }

  freeBusy(body: unknown): calendar_v3.Schema$FreeBusyResponse {
    const request = (isRecord(body) ? body : {}) as calendar_v3.Schema$FreeBusyRequest;
    const timeMin = parseDateTime(request.timeMin ?? "", undefined);
    const timeMax = parseDateTime(request.timeMax ?? "", undefined);
    if (timeMin === undefined) throw badRequest("Missing timeMin parameter.", "required");
    if (timeMax === undefined) throw badRequest("Missing timeMax parameter.", "required");
    if (timeMax <= timeMin) throw badRequest("The specified time range is empty.", "timeRangeEmpty");
    const items = request.items ?? [];
    if (items.length > 50) throw badRequest("Too many calendars requested.", "tooManyCalendarsRequested");
    const calendars: Record<string, calendar_v3.Schema$FreeBusyCalendar> = {};
    for (const item of items) {
      const id = item.id ?? "";
      const calendar = this.calendars.get(id === "primary" ? this.owner : id);
      if (!calendar) {
        calendars[id] = { busy: [], errors: [{ domain: "global", reason: "notFound" }] };
        continue;
      }
      const zone = calendar.entry.timeZone ?? "UTC";
      const spans = [...calendar.events.values()]
        .filter((e) => e.event.status !== "cancelled" && e.event.transparency !== "transparent")
        .flatMap((e) => expand(e, zone, timeMin, timeMax))
        .filter((e) => e.endMs > timeMin && e.startMs < timeMax)
        .map((e) => [Math.max(e.startMs, timeMin), Math.min(e.endMs, timeMax)] as [number, number])
        .sort((a, b) => a[0] - b[0]);
      const merged: [number, number][] = [];
      for (const span of spans) {
        const last = merged[merged.length - 1];
        if (last && span[0] <= last[1]) last[1] = Math.max(last[1], span[1]);
        else merged.push([...span]);
      }
      calendars[id] = {
        busy: merged.map(([s, e]) => ({ start: new Date(s).toISOString().replace(".000Z", "Z"), end: new Date(e).toISOString().replace(".000Z", "Z") })),
      };
    }
    return { kind: "calendar#freeBusy", timeMin: request.timeMin ?? null, timeMax: request.timeMax ?? null, calendars };
  }

  private addCalendar(seed: CalendarSeed, primary: boolean): void {
    const timeZone = seed.timeZone ?? "UTC";
    if (!isTimeZone(timeZone)) throw new Error(`calendar ${seed.id} has an unknown time zone ${timeZone}`);
    this.calendars.set(seed.id, {
      entry: {
        kind: "calendar#calendarListEntry",
        etag: this.etag(),
        id: seed.id,
        summary: seed.summary ?? seed.id,
        timeZone,
        accessRole: seed.accessRole ?? "owner",
        ...(primary ? { primary: true } : {}),
      },
      events: new Map(),
    });
  }

  private calendar(calendarId: string): StoredCalendar {
    const calendar = this.calendars.get(calendarId === "primary" ? this.owner : calendarId);
    if (!calendar) throw notFound("Not Found");
    return calendar;
  }

  private writable(calendar: StoredCalendar): void {
    if (calendar.entry.accessRole !== "owner" && calendar.entry.accessRole !== "writer")
      throw new ApiError(403, "requiredAccessLevel", "You need to have writer access to this calendar.");
  }

  private etag(): string {
    return `"${(this.etagCounter += 1000).toString()}"`;
  }

  private notify(calendar: StoredCalendar, stored: StoredEvent, kind: CalendarNotification["kind"], params: URLSearchParams): void {
    const mode = params.get("sendUpdates") ?? (params.get("sendNotifications") === "true" ? "all" : "none");
    if (mode !== "all" && mode !== "externalOnly") return;
    const recipients = (stored.event.attendees ?? [])
      .filter((a) => !a.self && a.email && a.email.toLowerCase() !== this.owner)
      .map((a) => a.email!.toLowerCase());
    if (recipients.length > 0) this.notificationLog.push({ calendarId: calendar.entry.id ?? "", eventId: stored.event.id ?? "", kind, recipients });
  }
}

function boundParam(params: URLSearchParams, name: string): number | undefined {
  const raw = params.get(name);
  if (raw === null) return undefined;
  const ms = parseDateTime(raw, undefined);
  if (ms === undefined) throw badRequest("Bad Request", "badRequest");
  return ms;
}

/** Start and end instants; all-day dates are midnights in the calendar's zone, end exclusive. */
function timesOf(event: calendar_v3.Schema$Event, calendarZone: string): { startMs: number; endMs: number } {
  const start = event.start;
  const end = event.end;
  if (!start || (!start.date && !start.dateTime)) throw badRequest("Missing start time.", "required");
  if (!end || (!end.date && !end.dateTime)) throw badRequest("Missing end time.", "required");
  if (Boolean(start.date) !== Boolean(end.date)) throw badRequest("Start and end times must either both be date or both be dateTime.", "invalid");
  for (const [which, t] of [
    ["start", start],
    ["end", end],
  ] as const) {
    if (t.timeZone && !isTimeZone(t.timeZone)) throw badRequest(`Invalid time zone definition for ${which} time.`, "invalid");
    if (t.date && t.dateTime) throw badRequest(`Invalid ${which} time.`, "invalid");
  }
  const at = (t: calendar_v3.Schema$EventDateTime, which: string): number => {
    const ms = t.date ? parseDate(t.date, calendarZone) : parseDateTime(t.dateTime ?? "", t.timeZone ?? calendarZone);
    if (ms === undefined) throw badRequest(`Invalid ${which} time.`, "invalid");
    return ms;
  };
  const startMs = at(start, "start");
  const endMs = at(end, "end");
  if (endMs < startMs || (start.date && endMs === startMs)) throw badRequest("The specified time range is empty.", "timeRangeEmpty");
  return { startMs, endMs };
}

function render(stored: StoredEvent, zone: string | undefined): calendar_v3.Schema$Event {
  const event = structuredClone(stored.event);
  if (zone !== undefined && event.start?.dateTime && event.end?.dateTime) {
    event.start = { ...event.start, dateTime: rfc3339In(stored.startMs, zone) };
    event.end = { ...event.end, dateTime: rfc3339In(stored.endMs, zone) };
  }
  return event;
}

function searchText(event: calendar_v3.Schema$Event): string {
  return [event.summary, event.description, event.location, event.organizer?.email, ...(event.attendees ?? []).flatMap((a) => [a.email, a.displayName])]
    .filter((s): s is string => typeof s === "string")
    .join("\n")
    .toLowerCase();
}

/** Instances of a recurring event (RRULE FREQ=DAILY|WEEKLY with INTERVAL, COUNT, UNTIL) inside the window. */
function expand(stored: StoredEvent, calendarZone: string, timeMin: number | undefined, timeMax: number | undefined): StoredEvent[] {
  const rule = (stored.event.recurrence ?? []).find((r) => r.startsWith("RRULE:"));
  if (!rule) return [stored];
  const fields = Object.fromEntries(
    rule
      .slice(6)
      .split(";")
      .map((kv) => kv.split("=") as [string, string]),
  );
  const stepDays = (fields["FREQ"] === "WEEKLY" ? 7 : fields["FREQ"] === "DAILY" ? 1 : 0) * Math.max(1, Number(fields["INTERVAL"] ?? 1));
  if (stepDays === 0) return [stored];
  const count = fields["COUNT"] ? Number(fields["COUNT"]) : Infinity;
  const until = fields["UNTIL"]
    ? Date.parse(
        fields["UNTIL"].replace(
          /^(\d{4})(\d{2})(\d{2})(T(\d{2})(\d{2})(\d{2})Z)?$/,
          (_, y, m, d, t, hh, mm, ss) => `${y}-${m}-${d}T${t ? `${hh}:${mm}:${ss}` : "23:59:59"}Z`,
        ),
      )
    : Infinity;
  const zone = stored.event.start?.timeZone ?? calendarZone;
  const first = localTimeOf(stored.startMs, zone);
  const duration = stored.endMs - stored.startMs;
  const out: StoredEvent[] = [];
  for (let n = 0; n < count && out.length < MAX_INSTANCES; n++) {
    const day = new Date(Date.UTC(first.year, first.month - 1, first.day + n * stepDays));
    const startMs = instantOf({ ...first, year: day.getUTCFullYear(), month: day.getUTCMonth() + 1, day: day.getUTCDate() }, zone);
    if (startMs > until || (timeMax !== undefined && startMs >= timeMax)) break;
    const endMs = startMs + duration;
    if (timeMin !== undefined && endMs <= timeMin) continue;
    const allDay = Boolean(stored.event.start?.date);
    const stamp = allDay
      ? day.toISOString().slice(0, 10).replace(/-/g, "")
      : new Date(startMs)
          .toISOString()
          .replace(/[-:]/g, "")
          .replace(/\.\d{3}/, "");
    const { recurrence: _r, ...rest } = stored.event;
    const time = (ms: number): calendar_v3.Schema$EventDateTime =>
      allDay
        ? { date: ymd(localTimeOf(ms, zone)) }
        : { dateTime: rfc3339In(ms, zone), ...(stored.event.start?.timeZone ? { timeZone: stored.event.start.timeZone } : {}) };
    out.push({
      event: {
        ...structuredClone(rest),
        id: `${stored.event.id}_${stamp}`,
        recurringEventId: stored.event.id ?? null,
        originalStartTime: time(startMs),
        start: time(startMs),
        end: time(endMs),
      },
      startMs,
      endMs,
    });
  }
  return out;
}

/** Patch semantics: objects merge, arrays and scalars replace, `null` clears. */
function merge(target: Record<string, unknown>, changes: Record<string, unknown>): Record<string, unknown> {
  for (const [key, value] of Object.entries(changes)) {
    if (value === null) delete target[key];
    else if (isRecord(value) && isRecord(target[key])) target[key] = merge(target[key] as Record<string, unknown>, value);
    else target[key] = structuredClone(value);
  }
  return target;
}

function ymd(l: { year: number; month: number; day: number }): string {
  return `${String(l.year).padStart(4, "0")}-${String(l.month).padStart(2, "0")}-${String(l.day).padStart(2, "0")}`;
}
