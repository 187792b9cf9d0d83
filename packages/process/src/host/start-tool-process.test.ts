import { ToolError } from "@toolgate/core";
import { settlesWithin } from "@toolgate/core/testing";
import { afterEach, describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import { eventually, FAULT_TOOL, gateOver, marker, NODE, processesWith, startFixture, waitGone, waitNoneWith } from "../fixtures/helpers.js";
import type { ToolProcessHandle } from "./options.js";
import { startToolProcess } from "./start-tool-process.js";

const handles: ToolProcessHandle[] = [];
/** Processes a test found that nothing else will end (an unsandboxed tool's daemon): ended here, whatever the test did. */
const strays: number[] = [];
afterEach(async () => {
  // Strays first: a daemon holding a tool's pipes must not keep a failed test's stop() waiting here too.
  for (const pid of strays.splice(0)) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // gone already
    }
  }
  await Promise.all(handles.splice(0).map((h) => h.stop()));
});

async function refusal(run: () => Promise<unknown>): Promise<ToolError> {
  try {
    const handle = await run();
    handles.push(handle as ToolProcessHandle);
  } catch (error) {
    expect(error).toBeInstanceOf(ToolError);
    return error as ToolError;
  }
  throw new Error("expected start-up to be refused");
}

describe("startToolProcess refuses bad start-ups and leaves no child", () => {
  it("a missing sandbox wrapper is a clear error naming it, before anything is spawned", async () => {
    const tag = marker();
    const error = await refusal(() =>
      startToolProcess({
        name: "fx",
        command: NODE,
        args: [FAULT_TOOL, "good", tag],
        sandbox: { kind: "custom", argv: ["toolgate-no-such-wrapper", "--flag"] },
      }),
    );
    expect(error.code).toBe("config_invalid");
    expect(error.message).toBe('sandbox wrapper "toolgate-no-such-wrapper" was not found or is not executable');
    expect(await waitNoneWith(tag, 200)).toEqual([]);
  });

  it("refuses a name that is not a lower-case word", async () => {
    const error = await refusal(() => startToolProcess({ name: "Bad Name", command: NODE }));
    expect(error.code).toBe("config_invalid");
    expect(error.message).toMatch(/lower-case word/);
  });

  it("a process that exits during the handshake: tool_process_dead with its stderr, nothing left running", async () => {
    const tag = marker();
    const error = await refusal(() => startToolProcess({ name: "fx", command: NODE, args: [FAULT_TOOL, "exit-in-handshake", tag] }));
    expect(error.code).toBe("tool_process_dead");
    expect(error.message).toMatch(/^tool process exited with code 7 during the handshake; its stderr ends: recv ToolHello \| fixture: refusing to start$/);
    expect(await waitNoneWith(tag)).toEqual([]);
  });

  it("a process that never registers: handshake timeout, then killed", async () => {
    const tag = marker();
    const error = await refusal(() => startToolProcess({ name: "fx", command: NODE, args: [FAULT_TOOL, "no-register", tag], handshakeTimeoutMs: 300 }));
    expect(error.code).toBe("tool_process_dead");
    expect(error.message).toMatch(/^tool process sent no ToolRegister within 300 ms during the handshake/);
    expect(await waitNoneWith(tag)).toEqual([]);
  });

  it("a command that cannot be started is refused", async () => {
    const error = await refusal(() => startToolProcess({ name: "fx", command: "/nonexistent/toolgate-tool", sandbox: "none" }));
    expect(error.code).toBe("tool_process_dead");
    expect(error.message).toMatch(/could not be started or signalled: spawn \/nonexistent\/toolgate-tool ENOENT/);
  });

  it("a command that cannot be started inside the sandbox is refused, with the sandbox's word for it", async () => {
    const error = await refusal(() => startToolProcess({ name: "fx", command: "/nonexistent/toolgate-tool", sandbox: "bubblewrap" }));
    expect(error.code).toBe("tool_process_dead");
    expect(error.message).toMatch(/during the handshake; its stderr ends: bwrap: execvp \/nonexistent\/toolgate-tool: No such file or directory/);
  });

  it("a widening scope override refuses registration", async () => {
    const tag = marker();
    const error = await refusal(() => startToolProcess({ name: "fx", command: NODE, args: [FAULT_TOOL, "good", tag], scopeOverrides: { echo: "demo" } }));
    expect(error.code).toBe("config_invalid");
    expect(error.message).toBe('scopeOverrides.echo = "demo" widens (or is unrelated to) the declared scope "demo:echo"; an override may only narrow it');
    expect(await waitNoneWith(tag)).toEqual([]);
  });

  it("an unrelated override (a sibling prefix) is not a narrowing", async () => {
    const error = await refusal(() =>
      startToolProcess({ name: "fx", command: NODE, args: [FAULT_TOOL, "good", marker()], scopeOverrides: { echo: "demo:echoes" } }),
    );
    expect(error.message).toMatch(/widens \(or is unrelated to\)/);
  });

  it("a declared scope above its expected ceiling refuses registration", async () => {
    const error = await refusal(() =>
      startToolProcess({ name: "fx", command: NODE, args: [FAULT_TOOL, "good", marker()], expectedScopes: { echo: "demo:echo:short" } }),
    );
    expect(error).toMatchObject({ code: "config_invalid" });
    expect(error.message).toBe(
      'tool echo of process fx needs scope "demo:echo", above its expected ceiling "demo:echo:short"; narrow it with scopeOverrides or raise expectedScopes',
    );
  });

  it("a tool name that does not fit core's id pattern refuses registration", async () => {
    const tag = marker();
    const error = await refusal(() => startToolProcess({ name: "fx", command: NODE, args: [FAULT_TOOL, "bad-name", tag] }));
    expect(error.message).toMatch(/declares tool "Bad-Name": its id "fx.Bad-Name" must match/);
    expect(await waitNoneWith(tag)).toEqual([]);
  });

  it("an input_schema that cannot be converted refuses registration, naming the tool", async () => {
    const error = await refusal(() => startToolProcess({ name: "fx", command: NODE, args: [FAULT_TOOL, "bad-schema", marker()] }));
    expect(error.message).toMatch(/^tool fx.odd declares an input_schema that cannot be used: Invalid regular expression/);
  });

  it("core's rules apply: a high-risk write cannot be approval never", async () => {
    const tag = marker();
    const error = await refusal(() => startToolProcess({ name: "fx", command: NODE, args: [FAULT_TOOL, "good", tag], tools: { echo: { risk: "high" } } }));
    expect(error.code).toBe("manifest_invalid");
    expect(error.message).toMatch(/a write tool with risk high cannot declare approval "never"/);
    expect(await waitNoneWith(tag)).toEqual([]);
  });

  it("a token mapping outside the family is refused", async () => {
    const error = await refusal(() => startToolProcess({ name: "fx", command: NODE, args: [FAULT_TOOL, "good", marker()], scopeTokens: () => ["gmail:send"] }));
    expect(error.message).toMatch(/token "gmail:send" for tool \w+ must be "fx:<verb>"/);
  });
});

describe("scopes and tokens", () => {
  it("expectedScopes is the tool allowlist; narrowing overrides change the token; unchecked tools warn", async () => {
    const { handle, logs } = await startFixture("good", {
      expectedScopes: { echo: "demo", slow: "demo:slow", escalate: "demo:escalate" },
      scopeOverrides: { echo: "demo:echo:short" },
    });
    handles.push(handle);
    expect([...handle.toolIds].sort()).toEqual(["fx.echo", "fx.escalate", "fx.slow"]);
    expect(handle.declared.map((t) => t.name)).toContain("env");
    expect(handle.family.kind).toBe("process");
    expect([...handle.family.permissions].sort()).toEqual(["fx:demo-echo-short", "fx:demo-escalate", "fx:demo-slow"]);
    expect(logs.filter((l) => l.level === "warn").map((l) => l.message)).toEqual(
      expect.arrayContaining([
        'tool "env" is not in expectedScopes, so it was not registered',
        'tool "pid" is not in expectedScopes, so it was not registered',
      ]),
    );
  });

  it("without overrides or ceilings every tool registers with a warning and the default token", async () => {
    const { handle, logs } = await startFixture("good");
    handles.push(handle);
    expect(handle.toolIds).toHaveLength(6);
    expect(handle.family.tools.find((t) => t.id === "fx.env")!.requiredAllowlist).toEqual(["fx:system-env"]);
    expect(logs.filter((l) => /unchecked/.test(l.message))).toHaveLength(6);
    const env = handle.family.tools.find((t) => t.id === "fx.env")!;
    expect(env).toMatchObject({ effect: "write", risk: "medium", untrustedOutput: true, actionType: "process-call", idempotent: false });
  });
});

describe("environment", () => {
  // bubblewrap (the default sandbox) sets PWD to the working directory: not a host variable, and not secret.
  it.each([
    ["none", []],
    ["bubblewrap", ["PWD"]],
  ] as const)("passes only the allowlist and explicit variables, never the host's secrets (sandbox %s)", async (sandbox, added) => {
    process.env["TOOLGATE_TEST_SECRET_TOKEN"] = "very-secret-value";
    try {
      const { handle } = await startFixture("good", { env: { TOOL_MODE: "test" }, sandbox });
      handles.push(handle);
      const { gate, call } = gateOver(handle);
      const result = await gate.invoke("fx.env", {}, call);
      expect(result.status).toBe("ok");
      const names = (result as { output: { output: { names: string[] } } }).output.output.names;
      expect(names).not.toContain("TOOLGATE_TEST_SECRET_TOKEN");
      expect(names).not.toContain("HOME");
      expect(names).toContain("TOOL_MODE");
      expect(names.filter((n) => ![...added, "PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TOOL_MODE"].includes(n))).toEqual([]);
    } finally {
      delete process.env["TOOLGATE_TEST_SECRET_TOKEN"];
    }
  });
});

describe("stop", () => {
  it("sends ToolShutdown, and SIGKILLs the whole group of a process that ignores it", async () => {
    const { handle } = await startFixture("ignore-shutdown", { shutdownGraceMs: 200 });
    const pid = handle.status().pid!;
    expect(pid).toBeGreaterThan(0);
    await handle.stop();
    expect(await waitGone(pid)).toBe(true);
    expect(handle.status().state).toBe("stopped");
    await handle.stop(); // idempotent
  });

  // Under bubblewrap the tool runs in a new session, outside the host's process group: killing the
  // group alone left what it started running (found in a trial; its own pid namespace fixes it).
  it.each(["none", "bubblewrap"] as const)("takes grandchildren with it (sandbox %s)", async (sandbox) => {
    const { handle, tag } = await startFixture("grandchild", { sandbox });
    const { gate, call } = gateOver(handle);
    const result = await gate.invoke("fx.pid", {}, call);
    const { grandchild } = (result as { output: { output: { pid: number; grandchild: number } } }).output.output;
    expect(grandchild).toBeGreaterThan(0);
    // Found on the host by its tag, not by the pid the tool reports (that is its namespace's).
    const grandchildren = () => processesWith(tag).filter((pid) => readFileSync(`/proc/${pid}/cmdline`, "utf8").includes("setInterval"));
    expect(grandchildren()).toHaveLength(1);
    await handle.stop();
    expect(await waitNoneWith(tag)).toEqual([]);
  });

  // A daemon of its own session, double-forked, holding the tool's stdout and stderr: the tool
  // ignores ToolShutdown, so stop() must kill it, and must not wait for pipes the daemon holds.
  it.each(["bubblewrap", "none"] as const)("returns though a setsid daemon holds the tool's stdout (sandbox %s)", async (sandbox) => {
    const graceMs = 1000;
    const { handle, tag } = await startFixture("daemon", { sandbox, shutdownGraceMs: graceMs });
    // The daemon itself, not the short-lived process that started it (whose script names it too).
    const daemons = () =>
      processesWith(tag).filter((pid) => {
        try {
          const cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8");
          return cmdline.includes("setInterval") && !cmdline.includes("child_process");
        } catch {
          return false; // gone meanwhile
        }
      });
    expect(
      await eventually(
        () => daemons().length,
        (n) => n === 1,
      ),
    ).toBe(1);
    if (sandbox === "none") strays.push(...daemons());
    // It returns after its grace period and the kill, not when the daemon lets go of the pipe (never).
    expect(await settlesWithin(handle.stop()), "stop() waited for pipes the daemon holds").toBe(true);
    if (sandbox === "bubblewrap") {
      // Its own pid namespace and cgroup: nothing it started is left on the host.
      expect(await waitNoneWith(tag)).toEqual([]);
    } else {
      // Unsandboxed, nothing on the host bounds its tree: the daemon outlives it (afterEach ends it).
      expect(daemons()).toHaveLength(1);
    }
  });

  it("calls after stop fail with tool_process_dead before anything is sent", async () => {
    const { handle } = await startFixture("good");
    const { gate, call } = gateOver(handle);
    await handle.stop();
    const result = await gate.invoke("fx.echo", { text: "late" }, call);
    expect(result).toMatchObject({ status: "error", code: "tool_process_dead", boundary: "effect_not_started" });
  });
});
