import { afterEach, describe, expect, it } from "vitest";
import { eventually, fenced, gateOver, pidState, startFixture, waitGone, waitNoneWith } from "../fixtures/helpers.js";
import type { ToolProcessHandle } from "./options.js";

const handles: ToolProcessHandle[] = [];
const tags: string[] = [];
afterEach(async () => {
  await Promise.all(handles.splice(0).map((h) => h.stop()));
  // no child of any test is left running, or unreaped
  for (const tag of tags.splice(0)) expect(await waitNoneWith(tag)).toEqual([]);
});

async function fixture(mode: string, options: Parameters<typeof startFixture>[1] = {}) {
  const started = await startFixture(mode, options);
  handles.push(started.handle);
  tags.push(started.tag);
  return started;
}

describe("a misbehaving process never takes the host down", () => {
  it("crash mid-call: the call fails tool_process_dead (effect unknown), the process restarts with backoff", async () => {
    const { handle, logs } = await fixture("crash-mid-call", { restart: { maxRestarts: 2, backoffMs: 10 } });
    const { gate, call } = gateOver(handle);
    const pid = handle.status().pid!;
    const result = await gate.invoke("fx.echo", { text: "boom" }, call);
    expect(result).toMatchObject({ status: "error", code: "tool_process_dead", boundary: "effect_state_unknown" });
    expect((result as { message: string }).message).toEqual(fenced("fx.echo: tool process exited with code 3"));
    expect(await waitGone(pid)).toBe(true);
    const status = await eventually(
      () => handle.status(),
      (s) => s.state === "ready" && s.restarts === 1,
    );
    expect(status.pid).not.toBe(pid);
    expect(logs.map((l) => l.message)).toContain("tool process ended (tool process exited with code 3); restart 1 of 2 in 10 ms");
  });

  it("restarts are bounded: after the last one the process is dead and calls fail at once", async () => {
    const { handle } = await fixture("crash-mid-call", { restart: { maxRestarts: 1, backoffMs: 10 } });
    const { gate, call } = gateOver(handle);
    await gate.invoke("fx.echo", { text: "1" }, call);
    await eventually(
      () => handle.status().state,
      (s) => s === "ready",
    );
    await gate.invoke("fx.echo", { text: "2" }, call);
    const status = await eventually(
      () => handle.status(),
      (s) => s.state === "dead",
    );
    expect(status).toMatchObject({ state: "dead", restarts: 1, pid: undefined, lastError: "tool process exited with code 3" });
    const after = await gate.invoke("fx.echo", { text: "3" }, call);
    expect(after).toMatchObject({ status: "error", code: "tool_process_dead", boundary: "effect_not_started" });
  });

  it("hang past the deadline: the gate times out, and the process is killed after the cancel grace", async () => {
    const { handle } = await fixture("hang", { tools: { echo: { timeoutMs: 200 } }, cancelGraceMs: 200 });
    const { gate, call } = gateOver(handle);
    const pid = handle.status().pid!;
    const result = await gate.invoke("fx.echo", { text: "never answered" }, call);
    expect(result).toMatchObject({ status: "error", code: "timeout", boundary: "effect_state_unknown" });
    expect(await waitGone(pid)).toBe(true);
    expect(
      await eventually(
        () => handle.status().lastError,
        (e) => e !== undefined,
      ),
    ).toMatch(/did not stop call c0 within 200 ms of CancelInvocation, so it was killed/);
  });

  it("garbage bytes on stdout: protocol_error, process killed", async () => {
    const { handle } = await fixture("garbage");
    const { gate, call } = gateOver(handle);
    const pid = handle.status().pid!;
    const result = await gate.invoke("fx.echo", { text: "x" }, call);
    expect(result).toMatchObject({ status: "error", code: "protocol_error" });
    expect((result as { message: string }).message).toEqual(
      fenced(/^fx.echo: tool process broke the framing: frame header announces \d+ bytes; the limit is 16777216 bytes$/),
    );
    expect(await waitGone(pid)).toBe(true);
  });

  it("an oversized length header: protocol_error without buffering the body", async () => {
    const { handle } = await fixture("oversized");
    const { gate, call } = gateOver(handle);
    const result = await gate.invoke("fx.echo", { text: "x" }, call);
    expect(result).toMatchObject({ status: "error", code: "protocol_error" });
    expect((result as { message: string }).message).toContain("frame header announces 4294967280 bytes; the limit is 16777216 bytes");
  });

  it("a result nested 100,000 levels deep (about 200 KB): protocol_error for the call, the host stays up", async () => {
    const { handle } = await fixture("deep");
    const { gate, call } = gateOver(handle);
    const result = await gate.invoke("fx.echo", { text: "x" }, call);
    expect(result).toMatchObject({ status: "error", code: "protocol_error" });
    expect((result as { message: string }).message).toMatch(/ToolResult frame holds nesting deeper than 128 levels/);
    // The host process is still here to answer: a second call gets its own answer.
    expect(await gate.invoke("fx.echo", { text: "y" }, call)).toMatchObject({ status: "error" });
  });

  it("a frame for an unknown call_id is a protocol error", async () => {
    const { handle } = await fixture("unknown-call");
    const { gate, call } = gateOver(handle);
    const result = await gate.invoke("fx.echo", { text: "x" }, call);
    expect(result).toMatchObject({ status: "error", code: "protocol_error" });
    expect((result as { message: string }).message).toEqual(fenced('fx.echo: tool process sent ToolResult for unknown call_id "nobody-sent-this"'));
  });

  it("a frame after a call's terminal frame is late, not a violation: logged and dropped, the process stays", async () => {
    const { handle, logs } = await fixture("after-terminal");
    const { gate, call } = gateOver(handle);
    const pid = handle.status().pid;
    expect(await gate.invoke("fx.echo", { text: "x" }, call)).toMatchObject({ status: "ok" });
    const late = (e: { message: string }) => e.message === "dropped a late ToolEvent for call c0, which had already ended";
    expect(
      (
        await eventually(
          () => logs,
          (l) => l.some(late),
        )
      ).filter(late),
    ).toHaveLength(1);
    expect(await gate.invoke("fx.echo", { text: "y" }, call)).toMatchObject({ status: "ok" });
    expect(handle.status()).toMatchObject({ state: "ready", pid, lastError: undefined });
  });

  it("a second ToolRegister is a protocol error", async () => {
    const { handle } = await fixture("double-register");
    const status = await eventually(
      () => handle.status(),
      (s) => s.state === "dead",
    );
    expect(status.lastError).toBe("tool process sent a second ToolRegister");
  });

  it("a stderr flood is drained and bounded; the call still succeeds", async () => {
    const { handle } = await fixture("stderr-flood", { maxStderrBytes: 4096 });
    const { gate, call } = gateOver(handle);
    const result = await gate.invoke("fx.echo", { text: "after the flood" }, call);
    expect(result.status).toBe("ok");
    // stderr is its own pipe: its bytes may trail the result
    const tail = await eventually(
      () => handle.stderrTail(),
      (t) => /e{4000}$/.test(t),
    );
    expect(tail.length).toBeLessThanOrEqual(4096);
    expect(tail).toMatch(/e{4000}$/);
    expect(handle.status()).toMatchObject({ state: "ready", restarts: 0 });
  });

  it("stop() leaves no zombie: the pid is gone from /proc entirely", async () => {
    const { handle } = await fixture("good");
    const pid = handle.status().pid!;
    // Alive, in whatever state a loaded machine has it (running, sleeping, in disk wait…): not a zombie, not gone.
    expect(pidState(pid)).toMatch(/^[^ZXx]$/);
    await handle.stop();
    expect(await waitGone(pid)).toBe(true);
    expect(pidState(pid)).toBeUndefined();
  });
});
