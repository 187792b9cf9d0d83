/** The family's permission tokens. */
export const CALENDAR_PERMISSIONS = ["calendar:read", "calendar:write"] as const;
export type CalendarPermission = (typeof CALENDAR_PERMISSIONS)[number];

/** Google OAuth scopes the family's tools declare. */
export const CALENDAR_SCOPES = {
  readonly: "https://www.googleapis.com/auth/calendar.readonly",
  events: "https://www.googleapis.com/auth/calendar.events",
} as const;
