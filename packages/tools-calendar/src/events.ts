import { createHash } from "node:crypto";
import type { calendar_v3 } from "@googleapis/calendar";
import { z } from "zod";

const ONE_LINE = /^[^\u0000-\u001f\u007f]*$/;
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})?$/i;
const HAS_OFFSET = /(Z|[+-]\d{2}:\d{2})$/i;

export function isTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: zone });
    return /^[A-Za-z_+-]+(\/[A-Za-z0-9_+-]+)*$/.test(zone);
  } catch {
    return false;
  }
}

const validDate = (s: string): boolean => {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(s);
  if (!m) return false;
  const d = new Date(Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!));
  return d.getUTCMonth() === +m[2]! - 1 && d.getUTCDate() === +m[3]!;
};

export const calendarIdSchema = z
  .string()
  .min(1)
  .max(256)
  .regex(/^[^\s/\u0000-\u001f]+$/, "must be a calendar id (or primary)")
  .meta({ description: "`primary` or an id from calendar.list_calendars." });
export const eventIdSchema = z
  .string()
  .min(1)
  .max(1024)
  .regex(/^[A-Za-z0-9_.@-]+$/, "must be an event id");
export const instantSchema = z.string().regex(RFC3339, "must be RFC 3339").regex(HAS_OFFSET, "must carry an offset, e.g. 2025-03-10T09:00:00-04:00 or …Z");
export const timeZoneSchema = z.string().max(64).refine(isTimeZone, "must be an IANA time zone such as Europe/Paris");

/**
 * When an event starts or ends: an all-day `date` (end exclusive), or a `dateTime` with an offset
 * or a `timeZone` (a `dateTime` without an offset is wall-clock time in that zone).
 */
export const eventTimeSchema = z.union([
  z.object({ date: z.string().refine(validDate, "must be a date YYYY-MM-DD") }).strict(),
  z
    .object({ dateTime: z.string().regex(RFC3339, "must be RFC 3339, e.g. 2025-03-10T09:00:00"), timeZone: timeZoneSchema.optional() })
    .strict()
    .refine((t) => HAS_OFFSET.test(t.dateTime) || t.timeZone !== undefined, "a dateTime without an offset needs a timeZone"),
]);
export type EventTime = z.infer<typeof eventTimeSchema>;

/** Start strictly before end, both all-day or both timed. Undefined when it cannot be told without the zone database. */
export function timeProblem(start: EventTime, end: EventTime): string | undefined {
  if ("date" in start !== "date" in end) return "start and end must both be all-day dates or both be date-times";
  if ("date" in start && "date" in end) {
    return end.date > start.date ? undefined : `an all-day event's end date is exclusive: a one-day event on ${start.date} ends on the next day`;
  }
  if ("dateTime" in start && "dateTime" in end) {
    if (HAS_OFFSET.test(start.dateTime) && HAS_OFFSET.test(end.dateTime))
      return Date.parse(end.dateTime) > Date.parse(start.dateTime) ? undefined : "end must be after start";
    if (!HAS_OFFSET.test(start.dateTime) && !HAS_OFFSET.test(end.dateTime) && start.timeZone === end.timeZone)
      return end.dateTime > start.dateTime ? undefined : "end must be after start";
  }
  return undefined;
}

/** The Google shape of an event time; switching kinds clears the other field (patch semantics). */
export function toGoogleTime(t: EventTime): calendar_v3.Schema$EventDateTime {
  return "date" in t ? { date: t.date, dateTime: null, timeZone: null } : { dateTime: t.dateTime, date: null, timeZone: t.timeZone ?? null };
}

const timeOutput = z.object({ date: z.string().optional(), dateTime: z.string().optional(), timeZone: z.string().optional() });

/** An event as the tools return it. Titles and descriptions may be written by other people. */
export const eventOutput = z.object({
  id: z.string(),
  calendarId: z.string(),
  summary: z.string(),
  description: z.string(),
  location: z.string(),
  start: timeOutput,
  end: timeOutput,
  allDay: z.boolean(),
  status: z.string(),
  organizer: z.string(),
  attendees: z.array(z.object({ email: z.string(), responseStatus: z.string() })),
  recurringEventId: z.string().nullable(),
  htmlLink: z.string(),
});
export type EventOutput = z.infer<typeof eventOutput>;

function timeOf(t: calendar_v3.Schema$EventDateTime | undefined): z.infer<typeof timeOutput> {
  return { ...(t?.date ? { date: t.date } : {}), ...(t?.dateTime ? { dateTime: t.dateTime } : {}), ...(t?.timeZone ? { timeZone: t.timeZone } : {}) };
}

export function toEventOutput(event: calendar_v3.Schema$Event, calendarId: string): EventOutput {
  return {
    id: event.id ?? "",
    calendarId,
    summary: event.summary ?? "",
    description: event.description ?? "",
    location: event.location ?? "",
    start: timeOf(event.start),
    end: timeOf(event.end),
    allDay: Boolean(event.start?.date),
    status: event.status ?? "confirmed",
    organizer: event.organizer?.email ?? "",
    attendees: (event.attendees ?? []).map((a) => ({ email: a.email ?? "", responseStatus: a.responseStatus ?? "needsAction" })),
    recurringEventId: event.recurringEventId ?? null,
    htmlLink: event.htmlLink ?? "",
  };
}

export const oneLine = (max: number) => z.string().max(max).regex(ONE_LINE, "must be one line without control characters");

export const attendeeSchema = z
  .string()
  .max(254)
  .regex(
    /^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+$/,
    "must be a bare email address",
  );

/**
 * The event id for a create: base32hex (`0-9a-v`) of SHA-256 over the call's idempotency key, 52
 * characters — inside Google's allowed alphabet and length (5–1024). The same key always names
 * the same event, so a repeat after a crash finds it instead of creating a second one.
 */
export function eventIdFor(idempotencyKey: string): string {
  const digest = createHash("sha256").update(`toolgate.calendar.create_event:${idempotencyKey}`).digest();
  const alphabet = "0123456789abcdefghijklmnopqrstuv";
  let bits = 0;
  let value = 0;
  let out = "";
  for (const byte of digest) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += alphabet[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
    value &= (1 << bits) - 1;
  }
  if (bits > 0) out += alphabet[(value << (5 - bits)) & 31];
  return out;
}

/** How a time reads in a preview. */
export function describeTime(
  t: { date?: string | null | undefined; dateTime?: string | null | undefined; timeZone?: string | null | undefined } | undefined,
): string {
  if (!t) return "(none)";
  if (t.date) return `${t.date} (all day)`;
  return `${t.dateTime ?? "?"}${t.timeZone ? ` ${t.timeZone}` : ""}`;
}
