import { defineTool } from "@toolgate/core";
import { z } from "zod";
import { calendarIdSchema, eventIdSchema, eventOutput, toEventOutput } from "../events.js";
import { callGoogle } from "@toolgate/connector-google";
import { CALENDAR_SCOPES } from "../permissions.js";
import { calendarClient } from "../client.js";
import type { CalendarConfig } from "../options.js";

export function getEventTool(config: CalendarConfig) {
  return defineTool({
    id: "calendar.get_event",
    title: "Get an event",
    description: "Read one event by id. A deleted event comes back with status `cancelled`. Its title and description may be written by other people.",
    input: z.object({ calendarId: calendarIdSchema.default("primary"), eventId: eventIdSchema }).strict(),
    output: eventOutput,
    actionType: "calendar-read",
    effect: "read",
    requiredAllowlist: ["calendar:read"],
    risk: "low",
    approval: "never",
    connector: { provider: config.provider, scopes: [CALENDAR_SCOPES.readonly] },
    runtimeIsolation: config.isolation,
    untrustedOutput: true,
    target: (input) => `event ${input.eventId} in ${input.calendarId}`,
    describeResult: (output) => `event ${output.id} (${output.status})`,
    handler: async (input, ctx) => {
      const cal = await calendarClient(config, ctx.connector);
      const event = await callGoogle({ method: "calendar.events.get", repeatable: true, write: false, signal: ctx.signal, retry: config.retry }, () =>
        cal.events.get({ calendarId: input.calendarId, eventId: input.eventId }, { signal: ctx.signal }),
      );
      return toEventOutput(event, input.calendarId);
    },
  });
}
