import { afterEach, describe, expect, it } from "vitest";
import { CROSSING_PEER, eventually, gateOver, marker, realPython, startCrossingPeer, waitNoneWith } from "../fixtures/helpers.js";
import { EndedCalls, MAX_NOTIFICATION_CHARS, MAX_NOTIFICATIONS_PER_SECOND, NotificationGate, type ProcessNotification } from "./after-calls.js";
import type { ProcessLogEvent, ToolProcessHandle } from "./options.js";
import { runConformance } from "../conformance/run-conformance.js";

const handles: ToolProcessHandle[] = [];
const tags: string[] = [];
afterEach(async () => {
  await Promise.all(handles.splice(0).map((h) => h.stop()));
  for (const tag of tags.splice(0)) expect(await waitNoneWith(tag)).toEqual([]);
});

/** The Python peer, with restarts allowed: a host that took a late frame for a violation would restart it. */
async function peer() {
  const tag = marker();
  const logs: ProcessLogEvent[] = [];
  const notifications: ProcessNotification[] = [];
  const handle = await startCrossingPeer(tag, {
    onLog: (e) => logs.push(e),
    onNotification: (n) => notifications.push(n),
    restart: { maxRestarts: 3, backoffMs: 10 },
  });
  handles.push(handle);
  tags.push(tag);
  return { handle, logs, notifications, ...gateOver(handle) };
}

const lateDrops = (logs: readonly ProcessLogEvent[]) =>
  logs.filter((e) => /^dropped a late (ToolError|ToolEvent) for call .*, which had already ended$/.test(e.message));

describe("a real peer's frames after a call ended", () => {
  it("a late ToolError and a late progress event after a result are logged and dropped: 5 races, no restart", async () => {
    const { handle, logs, gate, call } = await peer();
    const pid = handle.status().pid;
    for (let i = 0; i < 5; i++) {
      expect(await gate.invoke("crossing.echo", { n: i }, call)).toMatchObject({ status: "ok", output: { output: { n: i } } });
    }
    expect(
      lateDrops(
        await eventually(
          () => logs,
          (l) => lateDrops(l).length >= 10,
        ),
      ),
    ).toHaveLength(10);
    // one more call answers after the last late frames were read: the same process, never restarted
    expect(await gate.invoke("crossing.echo", { n: 5 }, call)).toMatchObject({ status: "ok" });
    expect(handle.status()).toMatchObject({ state: "ready", restarts: 0, pid, lastError: undefined });
    expect(logs.filter((e) => e.level === "warn" || e.level === "error")).toEqual([]);
  });

  it("a frame for a call id never issued is still a protocol violation", async () => {
    const { handle, logs, gate, call } = await peer();
    const pid = handle.status().pid;
    const result = await gate.invoke("crossing.stray", { n: 1 }, call);
    expect(result).toMatchObject({ status: "error", code: "protocol_error" });
    expect((result as { message: string }).message).toMatch(/tool process sent ToolResult for unknown call_id "never-issued-/);
    const status = await eventually(
      () => handle.status(),
      (s) => s.restarts === 1 && s.state === "ready",
    );
    expect(status.pid).not.toBe(pid);
    expect(lateDrops(logs)).toEqual([]);
  });

  it("a DispatchNotification reaches onNotification, naming the call it was sent during", async () => {
    const { handle, notifications, gate, call } = await peer();
    expect(await gate.invoke("crossing.notify", { n: 1 }, call)).toMatchObject({ status: "ok" });
    expect(notifications).toEqual([{ process: "crossing", callId: expect.stringMatching(/./), fields: { title: "reminder", body: "the kettle" } }]);
    expect(handle.status()).toMatchObject({ state: "ready", restarts: 0 });
  });
});

describe("the bounds after calls end", () => {
  it("ended call ids are remembered up to the bound, oldest forgotten first", () => {
    const ended = new EndedCalls(3);
    for (const id of ["a", "b", "c", "d"]) ended.add(id);
    expect(["a", "b", "c", "d"].map((id) => ended.has(id))).toEqual([false, true, true, true]);
    expect(ended.has("never")).toBe(false);
  });

  it("notifications over the rate or the size are dropped and logged; a throwing listener is ignored", () => {
    let time = 10_000;
    const got: unknown[] = [];
    const logs: string[] = [];
    const gate = new NotificationGate(
      (n) => {
        got.push(n);
        if (got.length === 1) throw new Error("listener broke");
      },
      (_level, message) => logs.push(message),
      () => time,
    );
    const known = (id: string) => id === "c1";
    for (let i = 0; i < MAX_NOTIFICATIONS_PER_SECOND + 5; i++) gate.receive({ type: "DispatchNotification", call_id: i === 0 ? "c1" : "c9", i }, known);
    expect(got).toHaveLength(MAX_NOTIFICATIONS_PER_SECOND);
    expect(got[0]).toEqual({ callId: "c1", fields: { i: 0 } });
    expect(got[1]).toEqual({ fields: { i: 1 } }); // a call id the host never issued is not passed on as one
    time += 1000;
    gate.receive({ type: "DispatchNotification", big: "x".repeat(MAX_NOTIFICATION_CHARS) }, known);
    expect(logs).toEqual([
      `dropped 5 notification(s) over the rate of ${MAX_NOTIFICATIONS_PER_SECOND} a second`,
      `dropped a notification of ${MAX_NOTIFICATION_CHARS + 10} characters (at most ${MAX_NOTIFICATION_CHARS})`,
    ]);
    expect(got).toHaveLength(MAX_NOTIFICATIONS_PER_SECOND);
  });
});

describe("the conformance kit and a cancel that crosses a result", () => {
  it("a cancelled ToolError after the result of a call the kit cancelled is late, not a violation: 8 of 8", async () => {
    const tag = marker();
    tags.push(tag);
    const report = await runConformance({ command: realPython(), args: [CROSSING_PEER, tag], inputs: { notify: { n: 1 } }, timeoutMs: 5000 });
    expect(report.checks.find((c) => c.name === "cancellation")).toMatchObject({ ok: true, detail: expect.stringMatching(/^notify answered ToolResult/) });
    expect(report.checks.filter((c) => !c.ok)).toEqual([]);
    expect(report.checks).toHaveLength(8);
  });

  it("a late frame for a call the kit never cancelled is still a violation", async () => {
    const tag = marker();
    tags.push(tag);
    const report = await runConformance({ command: realPython(), args: [CROSSING_PEER, tag], inputs: { echo: { n: 1 } }, timeoutMs: 5000 });
    // the late frames may land while a later check runs: they fail whichever check sees them
    const flagged = report.checks.filter((c) => /ToolError for call_id "conf-0" after its terminal frame/.test(c.detail));
    expect(flagged.map((c) => c.ok)).toEqual([false]);
  });
});
