export { createCalendarTools, CALENDAR_PERMISSIONS } from "./calendar-tools.js";
export { CALENDAR_ROOT_URL, CALENDAR_SCOPES } from "./options.js";
export type { CalendarToolsOptions } from "./options.js";
export { eventIdFor } from "./events.js";
export type { RetryOptions } from "@toolgate/provider-call";
