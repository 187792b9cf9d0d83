import { ToolError, defineTool } from "@toolgate/core";
import type { calendar_v3 } from "@googleapis/calendar";
import { z } from "zod";
import {
  attendeeSchema,
  calendarIdSchema,
  describeTime,
  eventIdSchema,
  eventOutput,
  eventTimeSchema,
  oneLine,
  timeProblem,
  toEventOutput,
  toGoogleTime,
  type EventTime,
} from "../events.js";
import { callGoogle } from "@toolgate/connector-google";
import { CALENDAR_SCOPES } from "../permissions.js";
import { calendarClient } from "../client.js";
import type { CalendarConfig } from "../options.js";

const MAX_APPROVED = 256;

export function updateEventTool(config: CalendarConfig) {
  // The etag each approved preview saw, per invocation: the change applies only to that version.
  const approved = new Map<string, string>();

  const changesSchema = z
    .object({
      summary: oneLine(1024).min(1).optional(),
      description: z.string().max(8000).optional(),
      location: oneLine(1024).optional(),
      start: eventTimeSchema.optional(),
      end: eventTimeSchema.optional(),
      attendees: z.array(attendeeSchema).max(config.maxAttendees).optional(),
    })
    .strict()
    .refine((c) => Object.keys(c).length > 0, "change at least one field");

  return defineTool({
    id: "calendar.update_event",
    title: "Update an event",
    description:
      "Change fields of an existing event (summary, description, location, start, end, attendees); fields left out stay as they are. " +
      "A human approves after seeing each changed field before and after; if the event changed meanwhile, the update is refused.",
    input: z
      .object({ calendarId: calendarIdSchema.default("primary"), eventId: eventIdSchema, changes: changesSchema, notifyAttendees: z.boolean().default(false) })
      .strict()
      .superRefine((input, ctx) => {
        const { start, end } = input.changes;
        if (start && end) {
          const problem = timeProblem(start, end);
          if (problem) ctx.addIssue({ code: "custom", path: ["changes", "end"], message: problem });
        }
      }),
    output: eventOutput,
    actionType: "calendar-write",
    effect: "write",
    requiredAllowlist: ["calendar:write"],
    risk: "medium",
    // What an approver may change before it runs (ids stay out: a desk preview reads them as the caller).
    edits: { fields: ["/changes", "/notifyAttendees"] },
    approval: "always",
    preview: async (input, ctx) => {
      const cal = await calendarClient(config, ctx.connector);
      const before = await callGoogle({ method: "calendar.events.get", repeatable: true, write: false, signal: ctx.signal, retry: config.retry }, () =>
        cal.events.get({ calendarId: input.calendarId, eventId: input.eventId }, { signal: ctx.signal }),
      );
      if (before.status === "cancelled") throw new ToolError("not_found", `event ${input.eventId} was deleted`);
      approved.delete(ctx.effect.invocationId);
      approved.set(ctx.effect.invocationId, before.etag ?? "");
      while (approved.size > MAX_APPROVED) approved.delete(approved.keys().next().value!);
      const changes = Object.entries(input.changes).map(([field, after]) => ({ field, before: show(field, before), after: showValue(field, after) }));
      return {
        summary: `Update ${JSON.stringify(before.summary ?? "")} on ${input.calendarId}: ${changes.map((c) => c.field).join(", ")}`,
        details: { calendarId: input.calendarId, eventId: input.eventId, changes, emailsAttendees: input.notifyAttendees },
      };
    },
    idempotent: true,
    retryable: true,
    reversible: true,
    dataEgress: true,
    dataClass: "personal",
    connector: { provider: config.provider, scopes: [CALENDAR_SCOPES.events] },
    runtimeIsolation: config.isolation,
    // The event as Google returns it after the change: every field the change left alone (the
    // description, other attendees' text) was written by someone else.
    provenance: {
      destinations: ["/calendarId", "/eventId", "/changes/attendees"],
      fixed: ["primary"],
      content: ["/changes/summary", "/changes/description", "/changes/location"],
    },
    untrustedOutput: true,
    target: (input) => `event ${input.eventId} in ${input.calendarId}`,
    describeResult: (output) => `event ${output.id} updated`,
    handler: async (input, ctx) => {
      const cal = await calendarClient(config, ctx.connector);
      const etag = approved.get(ctx.effect.invocationId);
      approved.delete(ctx.effect.invocationId);
      const { start, end, attendees, ...plain } = input.changes;
      const body: calendar_v3.Schema$Event = {
        ...(plain.summary === undefined ? {} : { summary: plain.summary }),
        ...(plain.description === undefined ? {} : { description: plain.description }),
        ...(plain.location === undefined ? {} : { location: plain.location }),
        ...(start ? { start: toGoogleTime(start) } : {}),
        ...(end ? { end: toGoogleTime(end) } : {}),
        ...(attendees ? { attendees: attendees.map((email) => ({ email })) } : {}),
      };
      // With the approved etag, a repeat after a lost answer would hit 412: repeat only without one.
      const event = await callGoogle(
        { method: "calendar.events.patch", repeatable: etag === undefined, write: true, signal: ctx.signal, retry: config.retry },
        () =>
          cal.events.patch(
            { calendarId: input.calendarId, eventId: input.eventId, sendUpdates: input.notifyAttendees ? "all" : "none", requestBody: body },
            { signal: ctx.signal, ...(etag ? { headers: { "If-Match": etag } } : {}) },
          ),
      );
      return toEventOutput(event, input.calendarId);
    },
  });
}

function show(field: string, event: calendar_v3.Schema$Event): unknown {
  if (field === "start" || field === "end") return describeTime(event[field]);
  if (field === "attendees") return (event.attendees ?? []).map((a) => a.email ?? "");
  return (event as Record<string, unknown>)[field] ?? null;
}

function showValue(field: string, value: unknown): unknown {
  if (field === "start" || field === "end") return describeTime(value as EventTime);
  return value;
}
