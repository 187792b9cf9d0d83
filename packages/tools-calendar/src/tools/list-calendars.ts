import { defineTool } from "@toolgate/core";
import { z } from "zod";
import { callGoogle } from "@toolgate/connector-google";
import { CALENDAR_SCOPES } from "../permissions.js";
import { calendarClient } from "../client.js";
import type { CalendarConfig } from "../options.js";

export function listCalendarsTool(config: CalendarConfig) {
  return defineTool({
    id: "calendar.list_calendars",
    title: "List calendars",
    description: "List the calendars this account can see, with ids, names, time zones and access. Names of shared calendars were chosen by other people.",
    input: z.object({}).strict(),
    output: z.object({
      calendars: z.array(z.object({ id: z.string(), summary: z.string(), primary: z.boolean(), accessRole: z.string(), timeZone: z.string() })),
    }),
    actionType: "calendar-read",
    effect: "read",
    requiredAllowlist: ["calendar:read"],
    risk: "low",
    approval: "never",
    connector: { provider: config.provider, scopes: [CALENDAR_SCOPES.readonly] },
    runtimeIsolation: config.isolation,
    untrustedOutput: true,
    target: () => "calendar list",
    describeResult: (output) => `${output.calendars.length} calendars`,
    handler: async (_input, ctx) => {
      const cal = await calendarClient(config, ctx.connector);
      const calendars = [];
      let pageToken: string | undefined;
      do {
        const page = await callGoogle({ method: "calendar.calendarList.list", repeatable: true, write: false, signal: ctx.signal, retry: config.retry }, () =>
          cal.calendarList.list({ maxResults: 250, ...(pageToken ? { pageToken } : {}) }, { signal: ctx.signal }),
        );
        for (const c of page.items ?? []) {
          calendars.push({
            id: c.id ?? "",
            summary: c.summaryOverride ?? c.summary ?? "",
            primary: c.primary === true,
            accessRole: c.accessRole ?? "",
            timeZone: c.timeZone ?? "",
          });
        }
        pageToken = page.nextPageToken ?? undefined;
      } while (pageToken && calendars.length < 1000);
      return { calendars };
    },
  });
}
