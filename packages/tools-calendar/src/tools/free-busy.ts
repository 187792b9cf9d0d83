import { defineTool } from "@toolgate/core";
import { z } from "zod";
import { calendarIdSchema, instantSchema, timeZoneSchema } from "../events.js";
import { callGoogle } from "@toolgate/connector-google";
import { CALENDAR_SCOPES } from "../permissions.js";
import { calendarClient } from "../client.js";
import type { CalendarConfig } from "../options.js";

export function freeBusyTool(config: CalendarConfig) {
  return defineTool({
    id: "calendar.free_busy",
    title: "Free/busy",
    description: "The busy intervals of one or more calendars between timeMin and timeMax (RFC 3339 with an offset). Free time is everything else.",
    input: z
      .object({
        timeMin: instantSchema,
        timeMax: instantSchema,
        calendarIds: z.array(calendarIdSchema).min(1).max(20).default(["primary"]),
        timeZone: timeZoneSchema.optional(),
      })
      .strict()
      .refine((i) => Date.parse(i.timeMax) > Date.parse(i.timeMin), "timeMax must be after timeMin"),
    output: z.object({
      calendars: z.array(z.object({ calendarId: z.string(), busy: z.array(z.object({ start: z.string(), end: z.string() })), error: z.string().nullable() })),
    }),
    actionType: "calendar-read",
    effect: "read",
    requiredAllowlist: ["calendar:read"],
    risk: "low",
    approval: "never",
    connector: { provider: config.provider, scopes: [CALENDAR_SCOPES.readonly] },
    runtimeIsolation: config.isolation,
    untrustedOutput: false,
    target: (input) => `free/busy of ${input.calendarIds.length} calendars`,
    describeResult: (output) => `${output.calendars.reduce((n, c) => n + c.busy.length, 0)} busy intervals`,
    handler: async (input, ctx) => {
      const cal = await calendarClient(config, ctx.connector);
      const res = await callGoogle({ method: "calendar.freebusy.query", repeatable: true, write: false, signal: ctx.signal, retry: config.retry }, () =>
        cal.freebusy.query(
          {
            requestBody: {
              timeMin: input.timeMin,
              timeMax: input.timeMax,
              items: input.calendarIds.map((id) => ({ id })),
              ...(input.timeZone ? { timeZone: input.timeZone } : {}),
            },
          },
          { signal: ctx.signal },
        ),
      );
      return {
        calendars: input.calendarIds.map((id) => {
          const entry = res.calendars?.[id];
          return {
            calendarId: id,
            busy: (entry?.busy ?? []).map((b) => ({ start: b.start ?? "", end: b.end ?? "" })),
            error: entry?.errors?.[0]?.reason ?? (entry ? null : "missing"),
          };
        }),
      };
    },
  });
}
