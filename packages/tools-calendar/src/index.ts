export { createCalendarTools } from "./calendar-tools.js";
export { CALENDAR_PERMISSIONS, CALENDAR_SCOPES } from "./permissions.js";
export type { CalendarPermission } from "./permissions.js";
export { CALENDAR_ROOT_URL } from "./options.js";
export type { CalendarToolsOptions } from "./options.js";
export { eventIdFor } from "./events.js";
export type { RetryOptions } from "@toolgate/provider-call";
