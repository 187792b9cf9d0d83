import { ToolError, defineTool } from "@toolgate/core";
import { z } from "zod";
import {
  attendeeSchema,
  calendarIdSchema,
  describeTime,
  eventIdFor,
  eventOutput,
  eventTimeSchema,
  oneLine,
  timeProblem,
  toEventOutput,
  toGoogleTime,
} from "../events.js";
import { callGoogle } from "@toolgate/connector-google";
import { CALENDAR_SCOPES } from "../permissions.js";
import { calendarClient } from "../client.js";
import type { CalendarConfig } from "../options.js";

export function createEventTool(config: CalendarConfig) {
  return defineTool({
    id: "calendar.create_event",
    title: "Create an event",
    description:
      "Create an event. Timed: `{ dateTime, timeZone }` (wall-clock time in that IANA zone) or a dateTime with an offset. All-day: `{ date }`, end date exclusive " +
      "(a one-day event on the 10th ends on the 11th). Attendees are emailed only when notifyAttendees is true. A human approves each event.",
    input: z
      .object({
        calendarId: calendarIdSchema.default("primary"),
        summary: oneLine(1024).min(1),
        description: z.string().max(8000).optional(),
        location: oneLine(1024).optional(),
        start: eventTimeSchema,
        end: eventTimeSchema,
        attendees: z.array(attendeeSchema).max(config.maxAttendees).default([]),
        notifyAttendees: z.boolean().default(false),
      })
      .strict()
      .superRefine((input, ctx) => {
        const problem = timeProblem(input.start, input.end);
        if (problem) ctx.addIssue({ code: "custom", path: ["end"], message: problem });
      }),
    output: eventOutput.extend({ alreadyExisted: z.boolean() }),
    actionType: "calendar-write",
    effect: "write",
    requiredAllowlist: ["calendar:write"],
    risk: "medium",
    // What an approver may change before it runs (ids stay out: a desk preview reads them as the caller).
    edits: { fields: ["/summary", "/description", "/location", "/start", "/end", "/attendees", "/notifyAttendees"] },
    approval: "always",
    preview: (input) => ({
      summary: `Create ${JSON.stringify(input.summary)} on ${input.calendarId}: ${describeTime(input.start)} → ${describeTime(input.end)}${input.attendees.length > 0 ? `, inviting ${input.attendees.length}` : ""}`,
      details: {
        calendarId: input.calendarId,
        summary: input.summary,
        start: input.start,
        end: input.end,
        allDay: "date" in input.start,
        location: input.location ?? null,
        attendees: input.attendees,
        emailsAttendees: input.notifyAttendees && input.attendees.length > 0,
      },
      ...(input.description ? { body: input.description } : {}),
    }),
    // The event id is derived from the idempotency key: a repeat finds the event instead of adding one.
    idempotent: true,
    retryable: true,
    reversible: true,
    dataEgress: true,
    dataClass: "personal",
    connector: { provider: config.provider, scopes: [CALENDAR_SCOPES.events] },
    runtimeIsolation: config.isolation,
    provenance: { destinations: ["/calendarId", "/attendees"], fixed: ["primary"], content: ["/summary", "/description", "/location"] },
    untrustedOutput: false,
    target: (input) => `new event on ${input.calendarId}`,
    describeResult: (output) => `event ${output.id}${output.alreadyExisted ? " (already existed)" : ""}`,
    handler: async (input, ctx) => {
      const cal = await calendarClient(config, ctx.connector);
      const id = eventIdFor(ctx.idempotencyKey);
      const policy = { repeatable: true, write: true, signal: ctx.signal, retry: config.retry };
      try {
        const event = await callGoogle({ ...policy, method: "calendar.events.insert" }, () =>
          cal.events.insert(
            {
              calendarId: input.calendarId,
              sendUpdates: input.notifyAttendees ? "all" : "none",
              requestBody: {
                id,
                summary: input.summary,
                ...(input.description === undefined ? {} : { description: input.description }),
                ...(input.location === undefined ? {} : { location: input.location }),
                start: toGoogleTime(input.start),
                end: toGoogleTime(input.end),
                ...(input.attendees.length > 0 ? { attendees: input.attendees.map((email) => ({ email })) } : {}),
              },
            },
            { signal: ctx.signal },
          ),
        );
        return { ...toEventOutput(event, input.calendarId), alreadyExisted: false };
      } catch (error) {
        if (!ToolError.is(error, "conflict")) throw error;
        // 409: an earlier attempt under this key created it (or deleted it since).
        const existing = await callGoogle({ ...policy, write: false, method: "calendar.events.get" }, () =>
          cal.events.get({ calendarId: input.calendarId, eventId: id }, { signal: ctx.signal }),
        );
        if (existing.status === "cancelled") {
          throw new ToolError("conflict", `the event this call created earlier (${id}) has since been deleted; use a new idempotency key to create it again`, {
            boundary: "effect_failed",
          });
        }
        return { ...toEventOutput(existing, input.calendarId), alreadyExisted: true };
      }
    },
  });
}
