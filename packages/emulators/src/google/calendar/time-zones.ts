const formatters = new Map<string, Intl.DateTimeFormat>();

/** True when `zone` is an IANA time zone this runtime knows. */
export function isTimeZone(zone: string): boolean {
  try {
    formatterFor(zone);
    return true;
  } catch {
    return false;
  }
}

function formatterFor(zone: string): Intl.DateTimeFormat {
  let f = formatters.get(zone);
  if (!f) {
    f = new Intl.DateTimeFormat("en-US", {
      timeZone: zone,
      hourCycle: "h23",
      year: "numeric",
      month: "2-digit",
      day: "2-digit",
      hour: "2-digit",
      minute: "2-digit",
      second: "2-digit",
    });
    formatters.set(zone, f);
  }
  return f;
}

/** Wall-clock fields of an instant in a zone. */
export interface LocalTime {
  readonly year: number;
  readonly month: number;
  readonly day: number;
  readonly hour: number;
  readonly minute: number;
  readonly second: number;
}

export function localTimeOf(ms: number, zone: string): LocalTime {
  const parts: Record<string, number> = {};
  for (const p of formatterFor(zone).formatToParts(new Date(ms))) if (p.type !== "literal") parts[p.type] = Number(p.value);
  return { year: parts["year"]!, month: parts["month"]!, day: parts["day"]!, hour: parts["hour"]! % 24, minute: parts["minute"]!, second: parts["second"]! };
}

/** The zone's offset from UTC at an instant, in milliseconds. */
export function offsetAt(ms: number, zone: string): number {
  const l = localTimeOf(ms, zone);
  return Date.UTC(l.year, l.month - 1, l.day, l.hour, l.minute, l.second) - Math.floor(ms / 1000) * 1000;
}

/** The instant a wall-clock time in a zone names (the earlier one in a repeated hour). */
export function instantOf(local: LocalTime, zone: string): number {
  const guess = Date.UTC(local.year, local.month - 1, local.day, local.hour, local.minute, local.second);
  const first = guess - offsetAt(guess, zone);
  const second = guess - offsetAt(first, zone);
  return Math.min(first, second);
}

/** RFC 3339 with an offset, e.g. `2025-03-10T09:00:00-04:00`, for an instant in a zone. */
export function rfc3339In(ms: number, zone: string): string {
  const l = localTimeOf(ms, zone);
  const offsetMin = Math.round(offsetAt(ms, zone) / 60_000);
  const sign = offsetMin < 0 ? "-" : "+";
  const abs = Math.abs(offsetMin);
  const pad = (n: number, w = 2) => String(n).padStart(w, "0");
  return `${pad(l.year, 4)}-${pad(l.month)}-${pad(l.day)}T${pad(l.hour)}:${pad(l.minute)}:${pad(l.second)}${sign}${pad(Math.floor(abs / 60))}:${pad(abs % 60)}`;
}

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d+)?(Z|[+-]\d{2}:\d{2})?$/i;

/**
 * An RFC 3339 date-time as an instant. Without an offset it is read in `zone`; without either it
 * is undefined.
 */
export function parseDateTime(text: string, zone: string | undefined): number | undefined {
  const m = RFC3339.exec(text);
  if (!m) return undefined;
  if (m[8]) {
    const ms = Date.parse(text);
    return Number.isNaN(ms) ? undefined : ms;
  }
  if (!zone || !isTimeZone(zone)) return undefined;
  return instantOf({ year: +m[1]!, month: +m[2]!, day: +m[3]!, hour: +m[4]!, minute: +m[5]!, second: +m[6]! }, zone);
}

/** `YYYY-MM-DD` as its midnight in `zone`. */
export function parseDate(text: string, zone: string): number | undefined {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(text);
  if (!m) return undefined;
  const check = new Date(Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!));
  if (check.getUTCDate() !== +m[3]!) return undefined;
  return instantOf({ year: +m[1]!, month: +m[2]!, day: +m[3]!, hour: 0, minute: 0, second: 0 }, zone);
}
