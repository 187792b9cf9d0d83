// The escape suite: a hostile program (escape-probe.py) tries every way out it knows — capabilities,
// remounts, unmasking, file handles, secrets, other processes' /proc files, signals, ptrace, host
// sockets, new namespaces, kernel interfaces, and the limits — first with no sandbox (where, as
// root, it must get out: a probe that silently failed would prove nothing), then inside the one
// sandbox profile: launched directly, in the verifier, in a tool process, and with the host running
// as an unprivileged user. Inside, every attempt must fail, and the host checks its own side: the
// victim alive, nothing written, no connection arrived, no process left.
import { spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { closeSync, openSync, readFileSync } from "node:fs";
import { ToolError } from "@toolgate/core";
import { settlesWithin } from "@toolgate/core/testing";
import {
  bwrapOnPath,
  createVerifier,
  DEFAULT_SANDBOX_READ_ONLY_PATHS,
  SANDBOX_SECCOMP_FD,
  sandboxLaunch,
  type SandboxLaunch,
  sandboxLimits,
  type CommandVerifier,
} from "@toolgate/core/boundary";
import { startToolProcess, type ToolProcessHandle } from "@toolgate/process";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  attempt,
  ESCAPE_GROUPS,
  expectContained,
  HostFixture,
  LIMIT_GROUPS,
  LIMITS,
  NOBODY,
  notEscaped,
  parseReport,
  processesWith,
  PROBE,
  PYTHON,
  runInTerminal,
  runUnsandboxed,
  toolCaller,
  UNPRIVILEGED_HOST,
  waitNoneWith,
  type Report,
  type Targets,
} from "./fixtures/escape-kit.js";

const BWRAP = bwrapOnPath();
const AS_ROOT = process.getuid?.() === 0;
const UNDER_CI = !["", "0", "false"].includes(process.env["CI"] ?? "");
// The suite needs bubblewrap and a root host (CI runs as root); in CI a missing one fails, elsewhere it skips.
const READY = BWRAP !== undefined && AS_ROOT;
const describeReady = READY || UNDER_CI ? describe : describe.skip;
const RUN_MS = 180_000;

/** Whether this machine lets uid 65534 make a sandbox (an unprivileged user namespace). */
function unprivilegedSandboxWorks(): boolean {
  if (!READY) return false;
  const tried = spawnSync(BWRAP!, ["--unshare-user", "--unshare-all", "--cap-drop", "ALL", "--ro-bind", "/", "/", "--", "/bin/true"], {
    uid: NOBODY,
    gid: NOBODY,
    stdio: "ignore",
    timeout: 10_000,
  });
  return tried.status === 0;
}
const UNPRIVILEGED = unprivilegedSandboxWorks();

/** The Yama ptrace scope, 0 where there is no Yama. */
function yamaScope(): number {
  try {
    return Number(readFileSync("/proc/sys/kernel/yama/ptrace_scope", "utf8").trim());
  } catch {
    return 0;
  }
}

/** Each limit attempt stopped at its limit, by count. */
function expectLimitsHeld(report: Report): void {
  const present = (name: string) => report.attempts.find((a) => a.name === name);
  const processes = present("limit-processes");
  if (processes) expect(processes.count, processes.detail).toBeLessThanOrEqual(LIMITS.processes);
  const memory = present("limit-memory");
  if (memory) expect(memory.count, memory.detail).toBeLessThanOrEqual(LIMITS.memoryBytes);
  const tmp = present("limit-tmp");
  if (tmp) expect(tmp.count, tmp.detail).toBeLessThanOrEqual(LIMITS.tmpBytes);
  const files = present("limit-open-files");
  if (files) expect(files.count, files.detail).toBeLessThanOrEqual(LIMITS.openFiles);
}

// ---------------------------------------------------------------------------------------------------
// First, the probe proves itself: with no sandbox it gets out every way it reports.

describeReady("the escape probe with no sandbox", () => {
  let fx: HostFixture;
  let readOnly: string;
  beforeAll(async () => {
    fx = await new HostFixture().start();
    // What the probe meets with no sandbox: a read-only bind mount and the gate's state under a tmpfs.
    readOnly = fx.readOnlyMount();
    fx.maskState();
  });
  afterAll(() => fx?.close());

  it(
    "as root gets out every way it knows (its mounts in a mount namespace of its own), and the host sees the writes, the connections and the killed victim",
    { timeout: RUN_MS },
    async () => {
      // A descriptor of a host directory left open (not close-on-exec) by whoever started it.
      const directory = openSync(fx.base, "r");
      const report = await runUnsandboxed({ ...fx.targets(), readOnly: [readOnly, "/proc/sys"], writableDirs: [fx.root] }, undefined, [directory]).finally(() =>
        closeSync(directory),
      );
      const mustEscape = [
        "caps-CapEff",
        "caps-CapPrm",
        "caps-CapBnd",
        "no-new-privs",
        `secret-read:${fx.secret}`,
        `secret-via-proc-root:${fx.secret}`,
        "proc-environ-cmdline",
        "ptrace-attach",
        "ptrace-seize",
        "process_vm_readv",
        "pidfd_getfd",
        "signal-0",
        "signal-group-0",
        "signal-SIGSTOP",
        "signal-SIGUSR1",
        "signal-SIGTERM",
        "signal-SIGKILL",
        "kill-all-sees-host",
        `write:${fx.hostWrite}`,
        `write:${fx.rootWrite}`,
        `setuid-file-chmod:${fx.root}`,
        `setuid-file-fchmod:${fx.root}`,
        `setuid-file-create:${fx.root}`,
        `setuid-file-mknod:${fx.root}`,
        "inherited-fds",
        `unix-connect:${fx.hostSocket}`,
        `unix-connect:${fx.rootSocket}`,
        "unix-connect-abstract",
        "tcp-connect-loopback",
        "remount-root-rw",
        `remount-rw:${readOnly}`,
        "remount-rw:/proc/sys",
        "mount-tmpfs",
        "mount-proc",
        `unmask:${fx.state}`,
        "pivot_root",
        "chroot",
        "open_by_handle_at:/",
        "open_by_handle_at:/usr",
        `open_by_handle_at:${fx.root}`,
        "unshare-user",
        "unshare-mount",
        "unshare-pid-then-fork",
        "userns-then-mount",
        "clone-newuser",
        "clone3-newuser",
        "int80-unshare-user",
        "int80-socket-unix",
        "setns:mnt",
        "setns:net",
        "keyctl",
        "bpf",
        "perf_event_open",
        "userfaultfd",
        "io_uring_setup",
        "socket-packet",
        "sysctl-write:/proc/sys/kernel/core_pattern",
        "sysctl-write:/proc/sys/fs/pipe-max-size",
        "sysctl-open-for-write",
        "rlimit-raise",
        "limit-open-files",
        "limit-tmp",
        "limit-memory",
        "limit-processes",
      ];
      expect(notEscaped(report, mustEscape)).toEqual([]);
      // The file handle of the filesystem's root read the secret outside the directory it started from.
      expect(attempt(report, `open_by_handle_at:${fx.root}`).detail).toContain(fx.secret);
      expect(readFileSync(fx.hostWrite, "utf8")).toContain(fx.marker);
      expect(readFileSync(fx.rootWrite, "utf8")).toContain(fx.marker);
      expect(fx.connections).toEqual({ "host-socket": 1, "root-socket": 1, "abstract-socket": 1, tcp: 1 });
      expect(["Z", undefined]).toContain(fx.victimState());
    },
  );
});

describeReady("the escape probe with no sandbox, on a terminal", () => {
  it("injects input into the terminal it was given (TIOCSTI)", { timeout: 60_000 }, async () => {
    const run = await runInTerminal([PYTHON, PROBE, JSON.stringify({ only: ["kernel"] })]);
    expect(attempt(parseReport(run.stdout), "tiocsti")).toMatchObject({ escaped: true });
  });
});

describe.skipIf(!UNPRIVILEGED)("the escape probe with no sandbox, as uid 65534", () => {
  let fx: HostFixture;
  beforeAll(async () => {
    fx = await new HostFixture(NOBODY).start();
  });
  afterAll(() => fx?.close());

  it(
    "reads the secret and the victim's environment, signals and traces it, writes, connects, makes a user namespace and runs past every limit",
    { timeout: RUN_MS },
    async () => {
      const report = await runUnsandboxed(fx.targets(), NOBODY);
      const mustEscape = [
        `secret-read:${fx.secret}`,
        "proc-environ-cmdline",
        // Yama (where it is on) lets a user trace only its own descendants.
        ...(yamaScope() > 0 ? [] : ["ptrace-attach"]),
        "signal-0",
        "signal-SIGKILL",
        `write:${fx.hostWrite}`,
        `write:${fx.rootWrite}`,
        `unix-connect:${fx.hostSocket}`,
        `unix-connect:${fx.rootSocket}`,
        "unix-connect-abstract",
        "tcp-connect-loopback",
        "unshare-user",
        "userns-then-mount",
        "int80-unshare-user",
        "limit-open-files",
        "limit-tmp",
        "limit-memory",
        "limit-processes",
      ];
      expect(notEscaped(report, mustEscape)).toEqual([]);
      expect(attempt(report, "caps-CapEff").escaped).toBe(false);
      expect(readFileSync(fx.hostWrite, "utf8")).toContain(fx.marker);
    },
  );
});

// ---------------------------------------------------------------------------------------------------
// The profile itself, as every sandbox uses it.

/** Run a launch as sandboxLaunch built it: its descriptors (seccomp, environment), the report from stdout. */
function runLaunched(launch: SandboxLaunch, leaked: number): Promise<{ stdout: string; stderr: string; code: number | null; signal: NodeJS.Signals | null }> {
  return new Promise((resolve, reject) => {
    const stdio: ("ignore" | "pipe" | number)[] = ["ignore", "pipe", "pipe", ...launch.descriptors.map(() => "pipe" as const)];
    // A host directory's descriptor the host leaked to its child: the sandbox must not pass it on.
    stdio.push(leaked);
    const child = spawn(launch.argv[0]!, launch.argv.slice(1), { env: { ...launch.env }, stdio });
    launch.descriptors.forEach((content, i) => (child.stdio[SANDBOX_SECCOMP_FD + i] as NodeJS.WritableStream | null)?.end(content));
    let stdout = "";
    let stderr = "";
    child.stdout!.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
    child.on("error", reject);
    child.on("close", (code, signal) => resolve({ stdout, stderr, code, signal }));
  });
}

describeReady("inside the sandbox profile (sandboxLaunch), as root", () => {
  let fx: HostFixture;
  beforeAll(async () => {
    fx = await new HostFixture().start();
  });
  afterAll(() => fx?.close());

  for (const write of [false, true]) {
    it(
      `${write ? "its root bound writable" : "its root bound read-only"}: every escape is refused and every limit holds; the host sees nothing`,
      { timeout: RUN_MS },
      async () => {
        const entries = fx.rootEntries();
        const launch = sandboxLaunch(
          {
            bwrap: BWRAP!,
            readOnly: write ? [...DEFAULT_SANDBOX_READ_ONLY_PATHS] : [...DEFAULT_SANDBOX_READ_ONLY_PATHS, fx.root],
            writable: write ? [fx.root] : [],
            cwd: fx.root,
            limits: sandboxLimits(LIMITS, "escape suite"),
          },
          [PYTHON, "escape-probe.py", JSON.stringify(fx.targets({ write }))],
          "escape suite",
        );
        const leaked = openSync(fx.base, "r");
        const run = await runLaunched(launch, leaked).finally(() => closeSync(leaked));
        const hit = launch.finish({ code: run.code, signal: run.signal });
        const report = parseReport(run.stdout, run.stderr);
        expectContained(report);
        expectLimitsHeld(report);
        fx.expectUntouched(entries);
        // The host observes the limits it can (processes and memory, through a root host's cgroup), nothing else.
        expect(hit.filter((h) => !["processes", "memoryBytes"].includes(h))).toEqual([]);
      },
    );
  }
});

describeReady("inside the sandbox profile (sandboxLaunch), started on a terminal", () => {
  it("cannot inject input into the terminal (a new session has no controlling terminal)", { timeout: 60_000 }, async () => {
    const fx = await new HostFixture().start();
    try {
      const launch = sandboxLaunch(
        { bwrap: BWRAP!, readOnly: [...DEFAULT_SANDBOX_READ_ONLY_PATHS, fx.root], cwd: fx.root, limits: sandboxLimits(LIMITS, "escape suite") },
        [PYTHON, "escape-probe.py", JSON.stringify({ only: ["kernel"] })],
        "escape suite",
      );
      const run = await runInTerminal(launch.argv, launch.descriptors);
      launch.finish({ code: run.code, signal: null });
      const tiocsti = attempt(parseReport(run.stdout), "tiocsti");
      // The probe did find a terminal on its descriptors: the refusal is the sandbox's, not a missing tty.
      expect(tiocsti.detail).toMatch(/0: refused/);
      expect(tiocsti.escaped).toBe(false);
    } finally {
      await fx.close();
    }
  });
});

// ---------------------------------------------------------------------------------------------------
// The verifier: a declared command runs the probe in the verifier's sandbox.

type Outcome = { report: Report; exitCode: number | null } | { error: ToolError };

async function verifierProbe(verifier: CommandVerifier, command: string, targets: Targets): Promise<Outcome> {
  try {
    const run = await verifier.run({ command, args: [JSON.stringify(targets)] });
    return { report: parseReport(run.stdout, run.stderr), exitCode: run.exitCode };
  } catch (error) {
    if (error instanceof ToolError) return { error };
    throw error;
  }
}

/** A limit run either reports (and held) or ends with `limit_exceeded` naming the limit. */
function expectLimitOutcome(outcome: Outcome, limit: string): void {
  if ("error" in outcome) {
    expect(outcome.error.code, outcome.error.message).toBe("limit_exceeded");
    expect(JSON.stringify(outcome.error.details ?? {}) + outcome.error.message).toMatch(new RegExp(limit === "memoryBytes" ? "memory" : limit, "i"));
    return;
  }
  expectContained(outcome.report);
  expectLimitsHeld(outcome.report);
}

const LIMIT_NAMES: Record<string, string> = {
  "limit-processes": "processes",
  "limit-memory": "memoryBytes",
  "limit-tmp": "tmpBytes",
  "limit-open-files": "openFiles",
};

describeReady("inside the verifier's sandbox, as root", () => {
  let fx: HostFixture;
  let verifier: CommandVerifier;
  beforeAll(async () => {
    fx = await new HostFixture().start();
    verifier = createVerifier({
      root: fx.root,
      commands: {
        probe: { argv: [PYTHON, "escape-probe.py"], args: { max: 1 } },
        probeWrite: { argv: [PYTHON, "escape-probe.py"], args: { max: 1 }, sandbox: { write: true } },
      },
      sandbox: { kind: "bubblewrap", limits: LIMITS },
      timeoutMs: RUN_MS - 10_000,
    });
  });
  afterAll(() => fx?.close());

  it("a read-only command: every escape is refused; the host sees nothing", { timeout: RUN_MS }, async () => {
    const entries = fx.rootEntries();
    const outcome = await verifierProbe(verifier, "probe", fx.targets({ only: ESCAPE_GROUPS }));
    if ("error" in outcome) throw outcome.error;
    expectContained(outcome.report);
    fx.expectUntouched(entries);
  });

  it("a command that may write its root: every escape beyond the root is refused; the host sees nothing outside it", { timeout: RUN_MS }, async () => {
    const entries = fx.rootEntries();
    const outcome = await verifierProbe(verifier, "probeWrite", fx.targets({ write: true, only: ESCAPE_GROUPS }));
    if ("error" in outcome) throw outcome.error;
    expectContained(outcome.report);
    // The root was writable: the probe's own temporary files are gone, and the host's file outside it is untouched.
    fx.expectUntouched(entries);
  });

  for (const group of LIMIT_GROUPS) {
    it(`${group}: stopped at the limit (or the run ends with limit_exceeded)`, { timeout: RUN_MS }, async () => {
      const outcome = await verifierProbe(verifier, "probe", fx.targets({ only: [group] }));
      expectLimitOutcome(outcome, LIMIT_NAMES[group]!);
    });
  }
});

// ---------------------------------------------------------------------------------------------------
// A tool process: the probe speaks the protocol, and its tools run the same attempts from inside.

describeReady("inside a tool process's sandbox, as root", () => {
  let fx: HostFixture;
  const handles: ToolProcessHandle[] = [];
  const leftovers: string[] = [];
  beforeAll(async () => {
    fx = await new HostFixture().start();
  });
  afterEach(async () => {
    // Leftovers first: a daemon holding a tool's pipes must not keep a failed test's stop() waiting here too.
    for (const marker of leftovers.splice(0)) for (const pid of processesWith(marker)) process.kill(pid, "SIGKILL");
    await Promise.all(handles.splice(0).map((h) => h.stop()));
  });
  afterAll(() => fx?.close());

  const start = (sandbox: "bubblewrap" | "none", shutdownGraceMs = 2_000) =>
    startToolProcess({
      name: "escape",
      command: PYTHON,
      args: [fx.probe, "--tool"],
      cwd: fx.root,
      sandbox,
      ...(sandbox === "bubblewrap" ? { limits: LIMITS } : {}),
      callTimeoutMs: RUN_MS - 10_000,
      shutdownGraceMs,
      expectedScopes: { try: "sandbox:probe", daemon: "sandbox:probe" },
      tools: { try: { effect: "none", risk: "low" }, daemon: { effect: "none", risk: "low" } },
      restart: { maxRestarts: 0 },
      onLog: () => undefined,
    }).then((handle) => {
      handles.push(handle);
      return handle;
    });

  it("escape.try: every escape is refused and every limit holds; the host sees nothing", { timeout: RUN_MS }, async () => {
    const entries = fx.rootEntries();
    const handle = await start("bubblewrap");
    const report = (await toolCaller(handle)("try", fx.targets())) as Report;
    expectContained(report);
    expectLimitsHeld(report);
    fx.expectUntouched(entries);
  });

  it(
    "with no sandbox, a daemon the tool leaves holding its stdout outlives stop() (what the sandboxed test below must not see)",
    { timeout: 60_000 },
    async () => {
      const marker = `tg-daemon-${randomBytes(6).toString("hex")}`;
      leftovers.push(marker);
      const handle = await start("none");
      expect(await toolCaller(handle)("daemon", { marker })).toEqual({ daemon: "started", marker });
      expect(processesWith(marker).length).toBeGreaterThan(0);
      await handle.stop();
      await new Promise((r) => setTimeout(r, 500));
      expect(processesWith(marker).length).toBeGreaterThan(0);
    },
  );

  it("escape.daemon: stop() returns, and no process with the daemon's marker is left on the host", { timeout: 60_000 }, async () => {
    const marker = `tg-daemon-${randomBytes(6).toString("hex")}`;
    leftovers.push(marker);
    const grace = 2_000;
    const handle = await start("bubblewrap", grace);
    expect(await toolCaller(handle)("daemon", { marker })).toEqual({ daemon: "started", marker });
    // The daemon is there, seen from the host, before the stop.
    expect(processesWith(marker).length).toBeGreaterThan(0);
    // It returns after its grace period and the kill, not when the daemon lets go of the pipe (never).
    expect(await settlesWithin(handle.stop()), "stop() waited for pipes the daemon holds").toBe(true);
    expect(await waitNoneWith(marker, 20_000)).toEqual([]);
  });
});

// ---------------------------------------------------------------------------------------------------
// The host as an unprivileged user: the same runs, started by a node process running as uid 65534.

/** Run the unprivileged host script as uid 65534 and read its one line. */
function asNobody(
  request: object,
): Promise<{ report?: Report; stdout?: string; stderr?: string; error?: { code: string; message: string; details?: unknown } }> {
  return new Promise((resolve, reject) => {
    // Started as root, the script drops to uid 65534 once its modules are loaded (the checkout may be private).
    const child = spawn(process.execPath, [UNPRIVILEGED_HOST], {
      cwd: "/tmp",
      env: { PATH: process.env["PATH"] ?? "/usr/bin:/bin" },
      stdio: ["pipe", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.on("error", reject);
    child.on("close", () => {
      let answer: {
        uid?: unknown;
        euid?: unknown;
        report?: Report;
        stdout?: string;
        stderr?: string;
        error?: { code: string; message: string; details?: unknown };
      };
      try {
        answer = JSON.parse(stdout.trim().split("\n").pop() ?? "");
      } catch {
        reject(new Error(`the unprivileged host printed no answer; stdout: ${stdout.slice(-2000)}; stderr: ${stderr.slice(-2000)}`));
        return;
      }
      if (answer.uid !== NOBODY || answer.euid !== NOBODY) reject(new Error(`the host ran as uid ${String(answer.uid)}/${String(answer.euid)}, not ${NOBODY}`));
      else resolve(answer);
    });
    child.stdin.end(JSON.stringify(request));
  });
}

describe.skipIf(!UNPRIVILEGED)(
  UNPRIVILEGED
    ? "with the host running as uid 65534"
    : "with the host running as uid 65534 (skipped: this machine refuses uid 65534 a user namespace for bubblewrap)",
  () => {
    let fx: HostFixture;
    beforeAll(async () => {
      fx = await new HostFixture(NOBODY).start();
    });
    afterAll(() => fx?.close());

    it("the verifier: every escape is refused; the host sees nothing", { timeout: RUN_MS }, async () => {
      const entries = fx.rootEntries();
      const answer = await asNobody({ mode: "verifier", root: fx.root, protect: [fx.state], targets: fx.targets({ only: ESCAPE_GROUPS }), limits: LIMITS });
      if (answer.error) throw new Error(`${answer.error.code}: ${answer.error.message}`);
      const report = parseReport(answer.stdout ?? "", answer.stderr ?? "");
      expectContained(report);
      fx.expectUntouched(entries);
    });

    it("a tool process: every escape is refused and every limit holds; the host sees nothing", { timeout: RUN_MS }, async () => {
      const entries = fx.rootEntries();
      const answer = await asNobody({ mode: "tool", root: fx.root, protect: [fx.state], targets: fx.targets(), limits: LIMITS });
      if (answer.error) throw new Error(`${answer.error.code}: ${answer.error.message}`);
      expectContained(answer.report!);
      expectLimitsHeld(answer.report!);
      fx.expectUntouched(entries);
    });
  },
);
