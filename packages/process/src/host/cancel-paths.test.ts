import { afterEach, describe, expect, it } from "vitest";
import { eventually, gateOver, startFixture, waitNoneWith } from "../fixtures/helpers.js";
import type { ToolProcessHandle } from "./options.js";

// The host learns of a cancel or a deadline through one ctx.onAbort subscription per call (no
// AbortController). It must reach the call wherever it waits: for a restart, before the frame is
// sent, and after (the cancel frame; faults.test.ts and gate.test.ts cover the last).

const handles: ToolProcessHandle[] = [];
const tags: string[] = [];
afterEach(async () => {
  await Promise.all(handles.splice(0).map((h) => h.stop()));
  for (const tag of tags.splice(0)) expect(await waitNoneWith(tag)).toEqual([]);
});

/** The first call crashes the process; the restart comes `backoffMs` later, and any call sent to the new process crashes it again. */
async function restartingFixture(options: Parameters<typeof startFixture>[1] = {}) {
  const started = await startFixture("crash-mid-call", { restart: { maxRestarts: 2, backoffMs: 400 }, ...options });
  handles.push(started.handle);
  tags.push(started.tag);
  const { gate, call } = gateOver(started.handle);
  expect(await gate.invoke("fx.echo", { text: "boom" }, call)).toMatchObject({ status: "error", code: "tool_process_dead" });
  await eventually(
    () => started.handle.status().state,
    (s) => s === "restarting",
  );
  return { handle: started.handle, gate, call };
}

/** The restart happened and nothing was sent to the new process since (a leaked call would have crashed it). */
async function restartedUntouched(handle: ToolProcessHandle): Promise<void> {
  await eventually(
    () => handle.status().state,
    (s) => s === "ready",
  );
  await new Promise((resolve) => setTimeout(resolve, 300));
  expect(handle.status()).toMatchObject({ state: "ready", restarts: 1, pendingCalls: 0 });
}

describe("cancellation reaches a call wherever it waits", () => {
  it("a call waiting for a restart is dropped when its caller aborts: it is never sent", async () => {
    const { handle, gate, call } = await restartingFixture();
    const controller = new AbortController();
    const pending = gate.invoke("fx.echo", { text: "waits" }, { ...call, signal: controller.signal });
    await new Promise((resolve) => setTimeout(resolve, 50));
    controller.abort();
    expect(await pending).toMatchObject({ status: "error", code: "cancelled" });
    await restartedUntouched(handle);
  });

  it("a call waiting for a restart is dropped at its deadline: it is never sent", async () => {
    const { handle, gate, call } = await restartingFixture({ tools: { echo: { timeoutMs: 100 } } });
    expect(await gate.invoke("fx.echo", { text: "waits" }, call)).toMatchObject({ status: "error", code: "timeout" });
    await restartedUntouched(handle);
  });

  it("a caller that aborted before the call: nothing is sent", async () => {
    const { handle, gate, call } = await restartingFixture();
    await eventually(
      () => handle.status().state,
      (s) => s === "ready",
    );
    const controller = new AbortController();
    controller.abort();
    expect(await gate.invoke("fx.echo", { text: "never" }, { ...call, signal: controller.signal })).toMatchObject({ status: "error", code: "cancelled" });
    await restartedUntouched(handle);
  });
});
