import { createSocket } from "node:dgram";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readlinkSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { homedir, networkInterfaces, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { ToolError } from "@toolgate/core";
import { bwrapOnPath, DEFAULT_SANDBOX_LIMITS, DEFAULT_SANDBOX_READ_ONLY_PATHS, protectPath, sandboxCgroups } from "@toolgate/core/boundary";
import { afterEach, describe, expect, it } from "vitest";
import {
  eventually,
  FAULT_TOOL,
  gateOver,
  marker,
  NODE,
  PROBE_READ_ONLY,
  PROBE_TOOL,
  shownPath,
  startFixture,
  toolRunner,
  waitNoneWith,
} from "../fixtures/helpers.js";
import type { StartToolProcessOptions, ToolProcessHandle } from "./options.js";
import { FIREJAIL_REMOVED, resolveSandbox, spawnPlan, type SandboxOption } from "./spawn.js";
import { startToolProcess } from "./start-tool-process.js";

// The sandbox is proved with a real tool process the host starts inside it, and every probe runs
// twice: without the sandbox it must get through (so a sandbox that silently did nothing would
// fail), inside it must not. Under CI (`CI` set, as `.ci/run` does) a missing bwrap fails these
// tests; elsewhere they are skipped, and the suite's title says why.
const UNDER_CI = !["", "0", "false"].includes(process.env["CI"] ?? "");
const INSTALLED = bwrapOnPath() !== undefined;

type Probe = { ok: true; addresses?: string[]; entries?: string[]; text?: string } | { ok: false; code: string };

const handles: ToolProcessHandle[] = [];
const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  await Promise.all(handles.splice(0).map((h) => h.stop()));
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/**
 * The probe tool process, started by the host (inside `sandbox`, when given, reading what the
 * probe needs besides its own files), and a way to call its tools through the gate.
 */
async function startProbe(sandbox: SandboxOption | undefined, options: Partial<StartToolProcessOptions> = {}) {
  const handle = await startToolProcess({
    name: "probe",
    command: NODE,
    args: [PROBE_TOOL],
    // Without one, the probe runs unsandboxed by explicit choice (the default would be bubblewrap).
    sandbox: sandbox ?? "none",
    onLog: () => undefined,
    ...options,
    readOnlyPaths: [...PROBE_READ_ONLY, ...(options.readOnlyPaths ?? [])],
  });
  handles.push(handle);
  const run = toolRunner(handle);
  return { handle, run, isolation: handle.family.tools[0]!.runtimeIsolation };
}

/** TCP listeners on 127.0.0.1 and on each of the host's other IPv4 addresses, and a DNS server on 127.0.0.1 that answers every A query with 192.0.2.7; each counts who reached it. */
async function hostNetwork() {
  const addresses = [
    "127.0.0.1",
    ...Object.values(networkInterfaces()).flatMap((list) => (list ?? []).filter((a) => a.family === "IPv4" && !a.internal).map((a) => a.address)),
  ];
  let connections = 0;
  const listeners = await Promise.all(
    addresses.map(async (host) => {
      const server = createServer((socket) => {
        connections++;
        socket.destroy();
      });
      await new Promise<void>((resolve) => server.listen(0, host, resolve));
      cleanups.push(() => new Promise((resolve) => server.close(resolve)));
      return { host, port: (server.address() as { port: number }).port };
    }),
  );
  let queries = 0;
  const dns = createSocket("udp4");
  dns.on("message", (query, from) => {
    queries++;
    let end = 12; // the question: the name's labels, a zero byte, then type and class
    while (end < query.length && query[end] !== 0) end += query[end]! + 1;
    const question = query.subarray(12, end + 5);
    const header = Buffer.from([0, 0, 0x81, 0x80, 0, 1, 0, 1, 0, 0, 0, 0]);
    query.copy(header, 0, 0, 2);
    const answer = Buffer.from([0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 192, 0, 2, 7]);
    dns.send(Buffer.concat([header, question, answer]), from.port, from.address);
  });
  await new Promise<void>((resolve) => dns.bind(0, "127.0.0.1", resolve));
  cleanups.push(() => new Promise<void>((resolve) => dns.close(() => resolve())));
  return { listeners, dnsServer: `127.0.0.1:${dns.address().port}`, reached: () => ({ connections, queries }) };
}

async function networkProbe(sandbox: SandboxOption | undefined, host: Awaited<ReturnType<typeof hostNetwork>>) {
  const { run } = await startProbe(sandbox);
  const { namespace, interfaces } = (await run("network", {})) as { namespace: string; interfaces: string[] };
  const tcp: Record<string, Probe> = {};
  for (const { host: address, port } of host.listeners) tcp[address] = (await run("tcp", { host: address, port })) as Probe;
  const dns = (await run("dns", { server: host.dnsServer, name: "probe.example" })) as Probe;
  return { namespace, interfaces, tcp, dns };
}

/** A Unix socket server of the host's in a directory of its own, counting who reached it. */
async function hostSocket() {
  const dir = tempDir("toolgate-probe-unix-");
  const path = join(dir, "service.sock");
  let heard = 0;
  const server = createServer((socket) => {
    heard++;
    socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(path, resolve));
  cleanups.push(() => new Promise((resolve) => server.close(resolve)));
  return { dir, path, heard: () => heard };
}

/** Where the probe tries to write: the workspace it runs in, a directory of the host's outside it, and /tmp. */
function writeTargets() {
  const workspace = tempDir("toolgate-sandbox-workspace-");
  const targets = {
    workspace: join(workspace, "inside.txt"),
    outside: join(tempDir("toolgate-sandbox-outside-"), "outside.txt"),
    tmp: `/tmp/${marker()}.txt`,
  };
  cleanups.push(() => rmSync(targets.tmp, { force: true }));
  return { workspace, targets };
}

async function writeProbe(
  sandbox: SandboxOption | undefined,
  workspace: string,
  targets: Record<string, string>,
  options: Partial<StartToolProcessOptions> = {},
) {
  const { run, isolation } = await startProbe(sandbox, { cwd: workspace, ...options });
  const seen: Record<string, { probe: Probe; onHost: boolean }> = {};
  for (const [where, path] of Object.entries(targets)) {
    const probe = (await run("write", { path })) as Probe;
    seen[where] = { probe, onHost: existsSync(path) };
    rmSync(path, { force: true });
  }
  return { seen, isolation };
}

/** Start-up that must be refused: the ToolError, and the proof nothing tagged `tag` ran. */
async function refused(options: Partial<StartToolProcessOptions>): Promise<{ error: unknown; left: number[] }> {
  const tag = marker();
  let error: unknown;
  try {
    // The command itself is an absolute path: were the sandbox skipped, it would start.
    handles.push(await startToolProcess({ name: "fx", command: NODE, args: [FAULT_TOOL, "good", tag], onLog: () => undefined, ...options }));
  } catch (caught) {
    error = caught;
  }
  return { error, left: await waitNoneWith(tag, 200) };
}

describe("sandboxes refused at start-up, before anything runs, with a typed error that says why", () => {
  it("bubblewrap whose bwrap is missing: config_invalid naming it, and nothing runs unsandboxed", async () => {
    const outcome = await refused({ sandbox: { kind: "bubblewrap", bwrapPath: join(tempDir("toolgate-no-bwrap-"), "bwrap") } });
    expect(outcome.error).toBeInstanceOf(ToolError);
    expect(outcome.error).toMatchObject({
      code: "config_invalid",
      message: "tool process fx: the sandbox needs the bwrap program, which is not installed or not executable (install the bubblewrap package)",
    });
    expect(outcome.left).toEqual([]);
  });

  it.each([["firejail"], [{ kind: "firejail" }], [{ kind: "firejail", args: ["--net=none"] }]])(
    "firejail (%j) was removed: config_invalid saying why and what to use, and nothing runs",
    async (sandbox) => {
      const { error, left } = await refused({ sandbox: sandbox as unknown as SandboxOption });
      expect(error).toBeInstanceOf(ToolError);
      expect(error).toMatchObject({ code: "config_invalid", message: FIREJAIL_REMOVED });
      expect(FIREJAIL_REMOVED).toMatch(/^sandbox "firejail" was removed: firejail is a setuid-root wrapper, and it was never tested against the escapes/);
      expect(FIREJAIL_REMOVED).toMatch(/use "bubblewrap", or \{ kind: "custom", argv \} at your own risk$/);
      expect(left).toEqual([]);
    },
  );

  it("bubblewrap with wrapper arguments (which could undo the profile) and unknown sandboxes are refused", async () => {
    const withArgs = await refused({ sandbox: { kind: "bubblewrap", args: ["--bind", "/", "/"] } as unknown as SandboxOption });
    expect(withArgs.error).toMatchObject({
      code: "config_invalid",
      message: expect.stringMatching(/^sandbox\.args was removed: wrapper arguments could undo the profile/),
    });
    const unknown = await refused({ sandbox: "docker" as unknown as SandboxOption });
    expect(unknown.error).toMatchObject({
      code: "config_invalid",
      message: 'unknown sandbox "docker": use "auto", "none", "bubblewrap" or { kind: "custom", argv }',
    });
    expect([withArgs.left, unknown.left]).toEqual([[], []]);
  });

  it("a custom wrapper still runs the tool, and the inventory claims nothing for it: as the wrapper allows", async () => {
    const { run, isolation } = await startProbe({ kind: "custom", argv: ["env"] });
    // env(1) enforces nothing: the tool is in the host's network namespace, and the inventory does not pretend otherwise.
    expect(((await run("network", {})) as { namespace: string }).namespace).toBe(readlinkSync("/proc/self/ns/net"));
    expect(isolation).toEqual({
      network: "as the wrapper allows",
      filesystem: "as the wrapper allows",
      secrets: "none",
      subprocess: "process",
      notes: `tool process ${JSON.stringify(NODE)} inside the operator's wrapper "env", unchecked by the host; environment allowlisted`,
    });
  });
});

const reason = INSTALLED || UNDER_CI ? "" : " (skipped: bwrap is not on PATH; install bubblewrap to run these, and under CI they fail instead)";

describe.skipIf(!INSTALLED && !UNDER_CI)(`sandbox: bubblewrap, core's profile${reason}`, () => {
  it("bwrap is on PATH (CI installs bubblewrap)", () => {
    expect(bwrapOnPath(), "bwrap was not found on PATH: the bubblewrap sandbox cannot be tested; install the bubblewrap package").toBeDefined();
  });

  it("a working directory that is the home directory or / is refused: binding it would show the tool far more than its files", async () => {
    for (const [cwd, what] of [
      [homedir(), "the home directory"],
      ["/", "the root directory"],
    ] as const) {
      const { error, left } = await refused({ sandbox: "bubblewrap", cwd });
      expect(error).toMatchObject({ code: "config_invalid", message: expect.stringContaining(`: cwd ${cwd} is ${what}; `) });
      expect(left).toEqual([]);
    }
  });

  it("no network: the tool reaches no listener of the host's and no DNS server, which it does without the sandbox", async () => {
    const host = await hostNetwork();
    const hostNamespace = readlinkSync("/proc/self/ns/net");
    const everyListener = (probe: Probe) => Object.fromEntries(host.listeners.map((l) => [l.host, probe]));

    const outside = await networkProbe(undefined, host);
    expect(outside).toMatchObject({ namespace: hostNamespace, tcp: everyListener({ ok: true }), dns: { ok: true, addresses: ["192.0.2.7"] } });
    const reachedOutside = host.reached();
    expect(reachedOutside).toEqual({ connections: host.listeners.length, queries: 1 });

    // Inside: its own network namespace with nothing but loopback, so every probe fails and nothing on the host hears it.
    const inside = await networkProbe("bubblewrap", host);
    const blocked = { ok: false, code: expect.stringMatching(/^E[A-Z]+$/) };
    expect({ ...inside, namespace: inside.namespace === hostNamespace ? "the host's" : "its own", reached: host.reached() }).toEqual({
      namespace: "its own",
      interfaces: ["lo"],
      tcp: everyListener(blocked),
      dns: blocked,
      reached: reachedOutside,
    });
  });

  it("no Unix socket of the host's (in its /tmp) is reached, not even one in a directory the tool may read, which it reaches without the sandbox", async () => {
    const socket = await hostSocket();
    expect(await (await startProbe(undefined)).run("unix", { path: socket.path })).toEqual({ ok: true });
    expect(await eventually(socket.heard, (n) => n === 1)).toBe(1); // the server hears it a moment after the tool connects

    // Not bound: the socket is not there at all.
    const unbound = await startProbe("bubblewrap");
    expect(await unbound.run("unix", { path: socket.path })).toEqual({ ok: false, code: expect.stringMatching(/^E[A-Z]+$/) });
    // Its directory bound read-only: the socket is in sight, and still refused (no Unix sockets unless named).
    const bound = await startProbe("bubblewrap", { readOnlyPaths: [socket.dir] });
    expect(await bound.run("list", { path: socket.dir })).toEqual({ ok: true, entries: ["service.sock"] });
    expect(await bound.run("unix", { path: socket.path })).toEqual({ ok: false, code: expect.stringMatching(/^E[A-Z]+$/) });
    expect(bound.isolation.network).toBe("none");
    expect(socket.heard()).toBe(1);
  });

  it("a Unix socket the operator names is reached, and the inventory names it", async () => {
    const socket = await hostSocket();
    const { run, isolation } = await startProbe("bubblewrap", { unixSockets: [socket.path] });
    expect(await run("unix", { path: socket.path })).toEqual({ ok: true });
    expect(await eventually(socket.heard, (n) => n === 1)).toBe(1);
    expect(isolation.network).toBe(`none; unix sockets ${socket.path}`);
  });

  it("nothing of the host outside its binds: a vault file in the host's tmp and the host's top-level directories, which it sees without the sandbox", async () => {
    const vault = join(tempDir("toolgate-probe-vault-"), "vault.json");
    writeFileSync(vault, '{"secret":"vault-secret-value"}\n');
    // What the sandbox may show at its root: the system paths, its private mounts, and where its own binds start.
    const bound = [...DEFAULT_SANDBOX_READ_ONLY_PATHS, "/proc", "/dev", "/tmp", ...PROBE_READ_ONLY, PROBE_TOOL, process.cwd(), NODE];
    const allowed = new Set(bound.filter((p) => existsSync(p)).map((p) => p.split("/")[1]!));
    const hostOnly = readdirSync("/").filter((e) => !allowed.has(e));
    expect(hostOnly.length, "the host has top-level directories the sandbox does not bind").toBeGreaterThan(0);

    const outside = await startProbe(undefined);
    expect(await outside.run("read", { path: vault })).toEqual({ ok: true, text: '{"secret":"vault-secret-value"}\n' });
    expect(((await outside.run("list", { path: "/" })) as { entries: string[] }).entries).toEqual(expect.arrayContaining(hostOnly));

    const inside = await startProbe("bubblewrap");
    const read = (await inside.run("read", { path: vault })) as Probe;
    expect(read).toEqual({ ok: false, code: "ENOENT" });
    const root = (await inside.run("list", { path: "/" })) as { ok: true; entries: string[] };
    expect(root.entries.filter((e) => !allowed.has(e))).toEqual([]);
    expect(root.entries).not.toContain(homedir().split("/")[1]);
    // The inventory names what was bound: its working directory (which holds the probe's own file) and what it was given.
    expect(inside.isolation.filesystem).toBe(
      `read-only: system paths, ${[process.cwd(), ...PROBE_READ_ONLY.filter((p) => !p.startsWith(process.cwd() + "/"))].map(shownPath).join(", ")}`,
    );
  });

  it("the gate's own state inside a directory the tool may read is masked, which it reads without the sandbox", async () => {
    const parent = tempDir("toolgate-probe-parent-");
    const state = join(parent, "state");
    mkdirSync(state);
    const key = join(state, "audit.key");
    writeFileSync(key, "protected-audit-key\n");
    writeFileSync(join(parent, "notes.txt"), "not protected\n");
    protectPath(state);
    const read = async (sandbox: SandboxOption | undefined) => {
      const { run } = await startProbe(sandbox, { readOnlyPaths: [parent] });
      return { key: (await run("read", { path: key })) as Probe, sibling: (await run("read", { path: join(parent, "notes.txt") })) as Probe };
    };
    expect(await read(undefined)).toEqual({ key: { ok: true, text: "protected-audit-key\n" }, sibling: { ok: true, text: "not protected\n" } });
    const inside = await read("bubblewrap");
    // The directory is bound (its other file is read): the mask, not a missing bind, keeps the key out.
    expect(inside.sibling).toEqual({ ok: true, text: "not protected\n" });
    expect(inside.key.ok).toBe(false);
    expect(JSON.stringify(inside)).not.toContain("protected-audit-key");
  });

  it("state protected after the tool process started is masked from the process the host starts again after a crash", async () => {
    const parent = tempDir("toolgate-probe-late-parent-");
    const state = join(parent, "state");
    mkdirSync(state);
    const key = join(state, "audit.key");
    writeFileSync(key, "late-protected-audit-key\n");
    const { handle, run } = await startProbe("bubblewrap", { readOnlyPaths: [parent] });
    expect(await run("read", { path: key })).toEqual({ ok: true, text: "late-protected-audit-key\n" });
    protectPath(state); // a journal opened after the tool processes were started
    const pid = handle.status().pid!;
    process.kill(-pid, "SIGKILL");
    await eventually(
      () => handle.status(),
      (s) => s.restarts === 1 && s.state === "ready" && s.pid !== pid,
    );
    // A fresh gate: the first one would answer the same call from its journal.
    const inside = (await toolRunner(handle)("read", { path: key })) as Probe;
    expect(inside.ok).toBe(false);
    expect(JSON.stringify(inside)).not.toContain("late-protected-audit-key");
  });

  it("filesystem: its working directory read-only, the host's paths outside its binds absent, /tmp its own; writablePaths writable, as the inventory says", async () => {
    const { workspace, targets } = writeTargets();

    const ok = { probe: { ok: true }, onHost: true };
    expect((await writeProbe(undefined, workspace, targets)).seen).toEqual({ workspace: ok, outside: ok, tmp: ok });

    const inside = await writeProbe("bubblewrap", workspace, targets);
    expect(inside.seen).toEqual({
      workspace: { probe: { ok: false, code: "EROFS" }, onHost: false },
      outside: { probe: { ok: false, code: "ENOENT" }, onHost: false },
      // Its own /tmp, of fixed size: written there, never on the host.
      tmp: { probe: { ok: true }, onHost: false },
    });
    // Its working directory, its own file's directory, what it was given: the inventory lists exactly those.
    const given = [dirname(PROBE_TOOL), ...PROBE_READ_ONLY].map(shownPath).join(", ");
    expect(inside.isolation).toMatchObject({ network: "none", filesystem: `read-only: system paths, ${workspace}, ${given}` });

    const writable = await writeProbe("bubblewrap", workspace, targets, { writablePaths: [workspace] });
    expect(writable.seen).toEqual({
      workspace: ok,
      outside: { probe: { ok: false, code: "ENOENT" }, onHost: false },
      tmp: { probe: { ok: true }, onHost: false },
    });
    expect(writable.isolation.filesystem).toBe(`read-only: system paths, ${given}; writable: ${workspace}`);
  });
});

describe.skipIf(!INSTALLED && !UNDER_CI)("what a tool process's sandbox binds of its program", () => {
  // Built with core's real profile (not spawned); each plan is ended at once, which removes its cgroup.
  const plan = (command: string, args: string[], options: { cwd?: string } = {}) => {
    const sandbox = resolveSandbox("bubblewrap");
    const built = spawnPlan(
      {
        who: "tool process t",
        command,
        args,
        cwd: options.cwd,
        searchPath: process.env["PATH"],
        readOnlyPaths: [],
        writablePaths: [],
        unixSockets: [],
        network: false,
        limits: DEFAULT_SANDBOX_LIMITS,
        env: {},
      },
      sandbox,
    );
    built.finish?.({ code: 0, signal: null });
    return built;
  };

  it("an interpreter install outside the system paths: its prefix; a file in a shared directory (the host's tmp): the file alone; else its directory", () => {
    const install = tempDir("toolgate-install-");
    mkdirSync(join(install, "bin"));
    symlinkSync(NODE, join(install, "bin", "node"));
    const looseFile = join(tmpdir(), `${marker()}.mjs`);
    writeFileSync(looseFile, "");
    cleanups.push(() => rmSync(looseFile, { force: true }));
    const work = tempDir("toolgate-plan-cwd-");
    const script = join(tempDir("toolgate-plan-script-"), "tool.mjs");
    writeFileSync(script, "");
    const { facts, argv } = plan(join(install, "bin", "node"), [script, looseFile, "not-a-file"], { cwd: work });
    const own = facts!.readOnly.filter((p) => !DEFAULT_SANDBOX_READ_ONLY_PATHS.includes(p));
    expect(own.sort()).toEqual([install, work, dirname(script), looseFile].sort());
    expect(own).not.toContain(tmpdir());
    expect(argv.slice(-4)).toEqual([join(install, "bin", "node"), script, looseFile, "not-a-file"]);
  });

  it("without a cwd of its own and started from a shared directory, the tool starts in its private /tmp and that directory is not bound", () => {
    const saved = process.cwd();
    process.chdir(tmpdir());
    try {
      const { facts, argv } = plan(NODE, [PROBE_TOOL]);
      expect(facts!.readOnly).not.toContain(tmpdir());
      expect(argv[argv.indexOf("--chdir") + 1]).toBe("/tmp");
    } finally {
      process.chdir(saved);
    }
  });
});

describe.skipIf(!INSTALLED && !UNDER_CI)("limits: a process that dies on one ends its calls with limit_exceeded", () => {
  // The process count is observed through the run's cgroup: a root host with the pids controller (as CI is).
  it.skipIf(!sandboxCgroups() && !UNDER_CI)(
    "a fork bomb is bounded by processes: the call fails limit_exceeded (effect unknown), the tree is gone, the process restarts",
    async () => {
      const { handle, tag, logs } = await startFixture("fork-bomb", {
        sandbox: "bubblewrap",
        limits: { processes: 32 },
        restart: { maxRestarts: 1, backoffMs: 10 },
      });
      handles.push(handle);
      const { gate, call } = gateOver(handle);
      const pid = handle.status().pid!;
      const result = await gate.invoke("fx.echo", { text: "bomb" }, call);
      expect(result).toMatchObject({ status: "error", code: "limit_exceeded", boundary: "effect_state_unknown", details: { limit: "processes", value: 32 } });
      expect((result as { message: string }).message).toMatch(/fx\.echo: tool process hit its processes limit of 32 and exited with code 1/);
      const status = await eventually(
        () => handle.status(),
        (s) => s.state === "ready" && s.restarts === 1,
      );
      expect(status.pid).not.toBe(pid);
      expect(logs.map((l) => l.message)).toContainEqual(expect.stringMatching(/^tool process ended \(tool process hit its processes limit of 32/));
      await handle.stop();
      expect(await waitNoneWith(tag)).toEqual([]);
    },
  );

  it("a call that spins past cpuSeconds: limit_exceeded naming it (the kernel's SIGXCPU), effect unknown", async () => {
    const { handle, tag } = await startFixture("spin", { sandbox: "bubblewrap", limits: { cpuSeconds: 1 } });
    handles.push(handle);
    const { gate, call } = gateOver(handle);
    const result = await gate.invoke("fx.echo", { text: "spin" }, call);
    expect(result).toMatchObject({ status: "error", code: "limit_exceeded", boundary: "effect_state_unknown", details: { limit: "cpuSeconds", value: 1 } });
    await handle.stop();
    expect(await waitNoneWith(tag)).toEqual([]);
  });

  it("a crash that hits no limit stays tool_process_dead, without limit details", async () => {
    const { handle, tag } = await startFixture("crash-mid-call", { sandbox: "bubblewrap", limits: { processes: 32 } });
    handles.push(handle);
    const { gate, call } = gateOver(handle);
    const result = await gate.invoke("fx.echo", { text: "x" }, call);
    expect(result).toMatchObject({ status: "error", code: "tool_process_dead", boundary: "effect_state_unknown" });
    expect((result as { details?: unknown }).details).toBeUndefined();
    await handle.stop();
    expect(await waitNoneWith(tag)).toEqual([]);
  });
});

describe("outputBytes: the largest frame the host reads from the process", () => {
  const bigResult = (size: number) =>
    Buffer.from(
      JSON.stringify({
        pieces: [{ frame: JSON.stringify({ type: "ToolResult", call_id: "$CALL", verified: "Unverified", output: "x".repeat(size) }) }],
        cuts: [],
      }),
    ).toString("base64");

  it("a frame over limits.outputBytes is refused from its header (protocol_error naming the limit); the default reads it", async () => {
    const fine = await startFixture("emit", { sandbox: "none" });
    handles.push(fine.handle);
    const defaults = gateOver(fine.handle);
    const byDefault = await defaults.gate.invoke("fx.emit", { script: bigResult(8192) }, defaults.call);
    expect(byDefault).toMatchObject({ status: "ok", output: { output: "x".repeat(8192) } });

    const bounded = await startFixture("emit", { sandbox: "none", limits: { outputBytes: 4096 } });
    handles.push(bounded.handle);
    const { gate, call } = gateOver(bounded.handle);
    const result = await gate.invoke("fx.emit", { script: bigResult(8192) }, call);
    expect(result).toMatchObject({ status: "error", code: "protocol_error", details: { limit: "outputBytes", value: 4096 } });
    expect((result as { message: string }).message).toMatch(/the limit is 4096 bytes/);
  });

  it("limits are checked at start-up: an unknown name or a value under its floor is config_invalid", async () => {
    const unknown = await refused({ limits: { wallSeconds: 5 } as never });
    expect(unknown.error).toMatchObject({ code: "config_invalid", message: expect.stringMatching(/^tool process fx: limits: unknown limit "wallSeconds"/) });
    const low = await refused({ limits: { outputBytes: 10 } });
    expect(low.error).toMatchObject({ code: "config_invalid", message: "tool process fx: limits: limit outputBytes must be a whole number of at least 1024" });
    expect([unknown.left, low.left]).toEqual([[], []]);
  });
});
