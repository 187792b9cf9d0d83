/**
 * Approve with edits on the real calendar family, a real gate and the emulator: times and text may
 * be edited, ids and calendars never; refused edits write nothing; an event moved by an approver is
 * created once, at the approver's time.
 */
import { createGate, createMemoryJournal, createToolRegistry, defineProfile, ToolError, type CallOptions } from "@toolgate/core";
import { askedRequest } from "@toolgate/core/testing";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createCalendarTools } from "./calendar-tools.js";
import { CALENDAR_PERMISSIONS } from "./permissions.js";
import { startHarness, type Harness } from "./fixtures/harness.js";

const profile = defineProfile({ name: "assistant", allow: [...CALENDAR_PERMISSIONS], maxRisk: "high", egress: ["personal"] });
const call: CallOptions = { principal: "agent-1", tenant: "home", profile };
const standup = {
  summary: "Standup",
  start: { dateTime: "2025-03-12T10:00:00", timeZone: "Europe/Paris" },
  end: { dateTime: "2025-03-12T10:30:00", timeZone: "Europe/Paris" },
};
const moved = { ...standup, start: { ...standup.start, dateTime: "2025-03-12T11:00:00" }, end: { ...standup.end, dateTime: "2025-03-12T11:30:00" } };

describe("calendar: approve with edits", () => {
  let harness: Harness;
  beforeEach(async () => {
    harness = await startHarness();
  });
  afterEach(() => harness.emulator.close());

  const gateFor = () =>
    createGate({
      registry: createToolRegistry({ families: [createCalendarTools({ rootUrl: harness.emulator.url, retry: { baseDelayMs: 0 } })] }),
      journal: createMemoryJournal(),
      connectors: harness.connectors,
      secrets: harness.secrets,
    });
  const ask = (gate: ReturnType<typeof gateFor>, id: string, input: unknown) => askedRequest(gate, id, input, call);
  const code = async (promise: Promise<unknown>) => {
    const error = await promise.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(ToolError.is(error), String(error)).toBe(true);
    return [(error as ToolError).code, (error as ToolError).details];
  };

  it("refuses an edit of the calendar, of the event id, or of a deletion, and an end before the start; nothing written", async () => {
    const gate = gateFor();
    const owner = gate.authority.owner();
    const create = await ask(gate, "calendar.create_event", standup);
    const update = await ask(gate, "calendar.update_event", { eventId: "revue00001", changes: { summary: "Review (moved)" } });
    const remove = await ask(gate, "calendar.delete_event", { eventId: "revue00001" });
    expect([create.request.editable, update.request.editable, remove.request.editable]).toEqual([
      ["/summary", "/description", "/location", "/start", "/end", "/attendees", "/notifyAttendees"],
      ["/changes", "/notifyAttendees"],
      false,
    ]);
    const head = await gate.journal.head();
    const edit = (r: typeof create, input: unknown) => gate.approvals.previewEdit(r.id, { by: owner, input, expect: r.expect });
    expect(await code(edit(create, { ...standup, calendarId: "team@group.calendar.emulator.test" }))).toEqual(["edit_refused", { paths: ["/calendarId"] }]);
    expect(await code(edit(update, { eventId: "hol0000001", changes: { summary: "Review (moved)" } }))).toEqual(["edit_refused", { paths: ["/eventId"] }]);
    expect((await code(edit(remove, { eventId: "hol0000001" })))[0]).toBe("edit_refused");
    expect((await code(edit(create, { ...standup, end: { ...standup.end, dateTime: "2025-03-12T09:00:00" } })))[0]).toBe("invalid_input");
    expect(await gate.journal.head()).toEqual(head);
  });

  it("an approver moves the event an hour: the retry with the caller's own input creates it once, at the new time", async () => {
    const gate = gateFor();
    const owner = gate.authority.owner();
    const create = await ask(gate, "calendar.create_event", standup);
    const shown = await gate.approvals.previewEdit(create.id, { by: owner, input: moved, expect: create.expect });
    expect(shown.changes.map((c) => c.path)).toEqual(["/end/dateTime", "/start/dateTime"]);
    await gate.approvals.grant(create.id, { by: owner, expect: create.expect, edit: { input: shown.input, previewHash: shown.previewHash } });
    expect(await gate.invoke("calendar.create_event", standup, call)).toMatchObject({ status: "ok", edited: { requestId: create.id, version: 1 } });
    expect((await gate.invoke("calendar.create_event", standup, call)).status).toBe("ok");
    const standups = harness.emulator.calendar.events().filter((e) => e.summary === "Standup");
    expect(standups.map((e) => (e.start as { dateTime?: string }).dateTime)).toEqual([expect.stringContaining("11:00:00")]);
  });
});
