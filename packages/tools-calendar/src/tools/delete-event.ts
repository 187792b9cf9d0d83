import { ToolError, defineTool } from "@toolgate/core";
import { z } from "zod";
import { calendarIdSchema, describeTime, eventIdSchema } from "../events.js";
import { callGoogle } from "@toolgate/connector-google";
import { CALENDAR_SCOPES } from "../permissions.js";
import { calendarClient } from "../client.js";
import type { CalendarConfig } from "../options.js";

const MAX_APPROVED = 256;

export function deleteEventTool(config: CalendarConfig) {
  const approved = new Map<string, string>();
  return defineTool({
    id: "calendar.delete_event",
    title: "Delete an event",
    description: "Delete an event. This cannot be undone. Attendees are told only when notifyAttendees is true. A human approves each deletion.",
    input: z.object({ calendarId: calendarIdSchema.default("primary"), eventId: eventIdSchema, notifyAttendees: z.boolean().default(false) }).strict(),
    output: z.object({ eventId: z.string(), deleted: z.literal(true), alreadyDeleted: z.boolean() }),
    actionType: "calendar-write",
    effect: "destructive",
    requiredAllowlist: ["calendar:write"],
    risk: "high",
    // An approver approves or denies this call as asked; nothing in it is edited.
    edits: false,
    approval: "always",
    preview: async (input, ctx) => {
      const cal = await calendarClient(config, ctx.connector);
      const event = await callGoogle({ method: "calendar.events.get", repeatable: true, write: false, signal: ctx.signal, retry: config.retry }, () =>
        cal.events.get({ calendarId: input.calendarId, eventId: input.eventId }, { signal: ctx.signal }),
      );
      approved.delete(ctx.effect.invocationId);
      approved.set(ctx.effect.invocationId, event.etag ?? "");
      while (approved.size > MAX_APPROVED) approved.delete(approved.keys().next().value!);
      return {
        summary: `Delete ${JSON.stringify(event.summary ?? "")} (${describeTime(event.start)}) from ${input.calendarId}; this cannot be undone`,
        details: {
          calendarId: input.calendarId,
          eventId: input.eventId,
          summary: event.summary ?? "",
          start: describeTime(event.start),
          end: describeTime(event.end),
          attendees: (event.attendees ?? []).map((a) => a.email ?? ""),
          emailsAttendees: input.notifyAttendees,
          alreadyDeleted: event.status === "cancelled",
        },
      };
    },
    // Deleting twice leaves the same state (Google answers 410 the second time).
    idempotent: true,
    retryable: false,
    reversible: false,
    connector: { provider: config.provider, scopes: [CALENDAR_SCOPES.events] },
    runtimeIsolation: config.isolation,
    provenance: { destinations: ["/calendarId", "/eventId"], fixed: ["primary"] },
    untrustedOutput: false,
    target: (input) => `event ${input.eventId} in ${input.calendarId}`,
    describeResult: (output) => `event ${output.eventId} deleted`,
    handler: async (input, ctx) => {
      const cal = await calendarClient(config, ctx.connector);
      const etag = approved.get(ctx.effect.invocationId);
      approved.delete(ctx.effect.invocationId);
      try {
        await callGoogle({ method: "calendar.events.delete", repeatable: etag === undefined, write: true, signal: ctx.signal, retry: config.retry }, () =>
          cal.events.delete(
            { calendarId: input.calendarId, eventId: input.eventId, sendUpdates: input.notifyAttendees ? "all" : "none" },
            { signal: ctx.signal, ...(etag ? { headers: { "If-Match": etag } } : {}) },
          ),
        );
        return { eventId: input.eventId, deleted: true as const, alreadyDeleted: false };
      } catch (error) {
        if (ToolError.is(error, "not_found") && error.details?.["status"] === 410)
          return { eventId: input.eventId, deleted: true as const, alreadyDeleted: true };
        throw error;
      }
    },
  });
}
