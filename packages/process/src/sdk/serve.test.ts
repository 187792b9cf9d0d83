import { afterEach, describe, expect, it } from "vitest";
import {
  eventually,
  fenced,
  gateOver,
  logCollector,
  marker,
  NODE,
  PYTHON_TOOL,
  realPython,
  PROBE_READ_ONLY,
  SDK_TOOL,
  waitGone,
  waitNoneWith,
  FAULT_TOOL,
} from "../fixtures/helpers.js";
import { startToolProcess } from "../host/start-tool-process.js";
import type { ToolProcessHandle } from "../host/options.js";
import { runConformance } from "../conformance/run-conformance.js";
import { runConformanceCli } from "../conformance/cli.js";

const handles: ToolProcessHandle[] = [];
afterEach(async () => {
  await Promise.all(handles.splice(0).map((h) => h.stop()));
});

describe("a tool process written with the SDK", () => {
  it("refuses bad input itself, reports failures and escalations, and honours cancellation", async () => {
    const logs = logCollector();
    const handle = await startToolProcess({
      name: "sdk",
      command: NODE,
      args: [SDK_TOOL],
      // Node finds zod and the SDK's build at the workspace's root: bound for it, read-only.
      readOnlyPaths: PROBE_READ_ONLY,
      onLog: logs.onLog,
      tools: { shout: { effect: "none", risk: "low" } },
    });
    handles.push(handle);
    expect(handle.declared.map((t) => t.name)).toEqual(["shout", "wait", "guarded", "broken"]);
    const { gate, call } = gateOver(handle);

    const broken = await gate.invoke("sdk.broken", {}, call);
    expect(broken).toMatchObject({
      status: "error",
      code: "handler_failed",
      message: fenced("sdk.broken failed: it broke"),
      details: { wireCode: "invocation_failed" },
    });

    const guarded = await gate.invoke("sdk.guarded", { what: "publish" }, call);
    expect(guarded).toMatchObject({
      status: "approval_required",
      preview: { details: { escalation: { claimedBy: "tool process sdk", verified: false, text: "wants to publish" } } },
    });

    const controller = new AbortController();
    const waited = await gate.invoke("sdk.wait", { ms: 600_000 }, { ...call, signal: controller.signal, onProgress: () => controller.abort() });
    expect(waited).toMatchObject({ status: "error", code: "cancelled" });
    await eventually(
      () => handle.status().pendingCalls,
      (n) => n === 0,
    );
    expect(handle.status()).toMatchObject({ state: "ready", restarts: 0 });

    const progress: unknown[] = [];
    const shout = await gate.invoke("sdk.shout", { text: "quiet" }, { ...call, onProgress: (e) => progress.push(e) });
    expect(shout).toMatchObject({ status: "ok", output: { verified: "Verified", output: { text: "QUIET" } } });
    expect(progress).toEqual([{ message: "shouting", data: { kind: "Status" }, untrusted: true }]);
    expect(handle.stderrTail()).toContain("sdk fixture starting");
  });

  it("exits on ToolShutdown", async () => {
    const handle = await startToolProcess({ name: "sdk", command: NODE, args: [SDK_TOOL], readOnlyPaths: PROBE_READ_ONLY, onLog: () => undefined });
    const pid = handle.status().pid!;
    await handle.stop();
    expect(await waitGone(pid)).toBe(true);
    expect(handle.stderrTail()).toContain("sdk fixture done");
  });

  it("passes the conformance kit", async () => {
    const lines: string[] = [];
    const report = await runConformance({
      command: NODE,
      args: [SDK_TOOL],
      slow: { tool: "wait", input: { ms: 600_000 } },
      inputs: { shout: { text: "hi" } },
      onLine: (l) => lines.push(l),
    });
    expect(lines.filter((l) => l.startsWith("FAIL"))).toEqual([]);
    expect(report).toMatchObject({ passed: 8, failed: 0 });
  });
});

describe("the Python example (stdlib only) runs unchanged under the host", () => {
  const python = realPython();

  it("serves its tools through the gate", async () => {
    const handle = await startToolProcess({
      name: "textstats",
      command: python,
      args: [PYTHON_TOOL],
      expectedScopes: { word_count: "text:read", convert_length: "units", slow_count: "text:read" },
      tools: { word_count: { effect: "read", risk: "low" }, convert_length: { effect: "none", risk: "low" } },
      onLog: () => undefined,
    });
    handles.push(handle);
    expect([...handle.family.permissions].sort()).toEqual(["textstats:text-read", "textstats:units-convert"]);
    const { gate, call } = gateOver(handle);
    const counted = await gate.invoke("textstats.word_count", { text: "one two three\nfour" }, call);
    expect(counted).toMatchObject({ status: "ok", untrusted: true, output: { verified: "NotApplicable", output: { words: 4, lines: 2, characters: 18 } } });
    const converted = await gate.invoke("textstats.convert_length", { value: 1, from: "mi", to: "km" }, call);
    expect(converted).toMatchObject({ status: "ok", output: { output: { value: 1.609344, unit: "km" } } });
    const refused = await gate.invoke("textstats.convert_length", { value: 1, from: "mi", to: "parsec" }, call);
    expect(refused).toMatchObject({ status: "error", code: "invalid_input" });

    const controller = new AbortController();
    const progress: unknown[] = [];
    const slow = await gate.invoke(
      "textstats.slow_count",
      { n: 10_000 },
      {
        ...call,
        signal: controller.signal,
        onProgress: (e) => {
          progress.push(e);
          controller.abort();
        },
      },
    );
    expect(slow).toMatchObject({ status: "error", code: "cancelled" });
    expect(progress[0]).toEqual({ message: "counted 1 of 10000", data: { kind: "Status" }, untrusted: true });
    await eventually(
      () => handle.status().pendingCalls,
      (n) => n === 0,
    );
    expect(handle.status()).toMatchObject({ state: "ready", restarts: 0 });
  });

  it("passes the conformance kit through the command line entry", async () => {
    const lines: string[] = [];
    const code = await runConformanceCli(["--slow", 'slow_count={"n":10000}', "--input", 'word_count={"text":"a b c"}', "--", python, PYTHON_TOOL], (l) =>
      lines.push(l),
    );
    expect(lines.filter((l) => l.startsWith("FAIL"))).toEqual([]);
    expect(lines.at(-1)).toBe("8 passed, 0 failed");
    expect(code).toBe(0);
  });
});

describe("the conformance kit fails what is broken", () => {
  it("a process that hangs fails every check after the handshake, and is killed", async () => {
    const tag = marker();
    const report = await runConformance({ command: NODE, args: [FAULT_TOOL, "hang", tag], timeoutMs: 300 });
    expect(report.checks.map((c) => `${c.name}:${c.ok}`)).toEqual([
      "handshake:true",
      "invocation:false",
      "unknown_tool:false",
      "bad_input:false",
      "cancellation:false",
      "unknown_frame:false",
      "parallel_calls:false",
      "shutdown:true",
    ]);
    expect(await waitNoneWith(tag)).toEqual([]);
  });

  it("a process that writes garbage fails with the framing problem named", async () => {
    const report = await runConformance({ command: NODE, args: [FAULT_TOOL, "garbage", marker()], timeoutMs: 300 });
    expect(report.failed).toBeGreaterThan(0);
    expect(report.checks.find((c) => c.name === "invocation")!.detail).toMatch(/stdout is not a clean frame stream: frame header announces/);
  });

  it("a frame after a terminal one is a violation", async () => {
    const report = await runConformance({ command: NODE, args: [FAULT_TOOL, "after-terminal", marker()], timeoutMs: 2000 });
    // the stray frame may land while the next check runs: it fails whichever check sees it
    const flagged = report.checks.filter((c) => /ToolEvent for call_id "conf-0" after its terminal frame/.test(c.detail));
    expect(flagged).toHaveLength(1);
    expect(flagged[0]!.ok).toBe(false);
    expect(report.failed).toBeGreaterThan(0);
  });

  it("the command line reports usage errors with exit code 2", async () => {
    const lines: string[] = [];
    expect(await runConformanceCli(["--bogus", "x", "--", NODE], (l) => lines.push(l))).toBe(2);
    expect(await runConformanceCli([], (l) => lines.push(l))).toBe(2);
    expect(lines[0]).toMatch(/^unknown option "--bogus"/);
  });

  it("the fixture that answers properly passes", async () => {
    const report = await runConformance({
      command: NODE,
      args: [FAULT_TOOL, "good", marker()],
      slow: { tool: "slow", input: { steps: 100_000 } },
      inputs: { echo: { text: "hi" } },
    });
    expect(report.checks.filter((c) => !c.ok)).toEqual([]);
  });
});
