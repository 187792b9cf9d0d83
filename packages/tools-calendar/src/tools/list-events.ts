import { defineTool } from "@toolgate/core";
import { z } from "zod";
import { calendarIdSchema, eventOutput, instantSchema, oneLine, timeZoneSchema, toEventOutput } from "../events.js";
import { callGoogle } from "@toolgate/connector-google";
import { CALENDAR_SCOPES } from "../permissions.js";
import { calendarClient } from "../client.js";
import type { CalendarConfig } from "../options.js";

export function listEventsTool(config: CalendarConfig) {
  return defineTool({
    id: "calendar.list_events",
    title: "List events",
    description:
      "List events between timeMin and timeMax (RFC 3339 with an offset), recurring events expanded into their instances and ordered by start. " +
      "Optional free-text `query`. Give `timeZone` to get times rendered in that zone. Titles and descriptions may be written by other people.",
    input: z
      .object({
        calendarId: calendarIdSchema.default("primary"),
        timeMin: instantSchema,
        timeMax: instantSchema,
        query: oneLine(500).optional(),
        maxResults: z.number().int().min(1).max(100).default(25),
        pageToken: z.string().max(512).optional(),
        timeZone: timeZoneSchema.optional(),
      })
      .strict()
      .refine((i) => Date.parse(i.timeMax) > Date.parse(i.timeMin), "timeMax must be after timeMin"),
    output: z.object({ events: z.array(eventOutput), nextPageToken: z.string().nullable(), timeZone: z.string() }),
    actionType: "calendar-read",
    effect: "read",
    requiredAllowlist: ["calendar:read"],
    risk: "low",
    approval: "never",
    connector: { provider: config.provider, scopes: [CALENDAR_SCOPES.readonly] },
    runtimeIsolation: config.isolation,
    untrustedOutput: true,
    target: (input) => `calendar ${input.calendarId} ${input.timeMin}..${input.timeMax}`,
    describeResult: (output) => `${output.events.length} events`,
    handler: async (input, ctx) => {
      const cal = await calendarClient(config, ctx.connector);
      const res = await callGoogle({ method: "calendar.events.list", repeatable: true, write: false, signal: ctx.signal, retry: config.retry }, () =>
        cal.events.list(
          {
            calendarId: input.calendarId,
            timeMin: input.timeMin,
            timeMax: input.timeMax,
            singleEvents: true,
            orderBy: "startTime",
            maxResults: input.maxResults,
            ...(input.query ? { q: input.query } : {}),
            ...(input.pageToken ? { pageToken: input.pageToken } : {}),
            ...(input.timeZone ? { timeZone: input.timeZone } : {}),
          },
          { signal: ctx.signal },
        ),
      );
      return {
        events: (res.items ?? []).map((e) => toEventOutput(e, input.calendarId)),
        nextPageToken: res.nextPageToken ?? null,
        timeZone: res.timeZone ?? "",
      };
    },
  });
}
