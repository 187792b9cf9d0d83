import { calendar, type calendar_v3 } from "@googleapis/calendar";
import { ToolError, type ConnectorHandle } from "@toolgate/core";
import type { CalendarConfig } from "./options.js";

/** The authorized Calendar client for a call; the library's own retries are off (the family retries). */
export async function calendarClient(config: CalendarConfig, connector: ConnectorHandle | undefined): Promise<calendar_v3.Calendar> {
  if (!connector) throw new ToolError("connector_unavailable", "the Calendar tools need a Google connector", { boundary: "effect_not_started" });
  const auth = await connector.client<NonNullable<calendar_v3.Options["auth"]>>();
  return calendar({ version: "v3", auth, rootUrl: config.rootUrl, retry: false });
}
