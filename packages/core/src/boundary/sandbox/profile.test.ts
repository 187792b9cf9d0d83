import { spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { mkdir, mkdtemp, open, realpath, rm, symlink, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:net";
import { homedir, tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ToolError } from "../../errors.js";
import { protectPath } from "../protected-paths.js";
import { sandboxIsolation } from "./isolation.js";
import { sandboxLimits, type SandboxLimitName, type SandboxLimits } from "./limits.js";
import {
  bwrapOnPath,
  DEFAULT_SANDBOX_READ_ONLY_PATHS,
  sandboxCgroups,
  sandboxLaunch,
  SANDBOX_ARGS_FD,
  SANDBOX_SECCOMP_FD,
  type SandboxSpec,
  feedSandbox,
  sandboxStdio,
} from "./profile.js";

const bwrap = bwrapOnPath();
// In CI these tests must run (and fail if bwrap is missing); elsewhere they are skipped without it.
const runSandboxTests = bwrap !== undefined || process.env["CI"] !== undefined;
const python = "/usr/bin/python3";

let base: string;
let work: string; // the sandbox's writable workspace
let sock: string; // a host unix socket
let server: Server;

beforeAll(async () => {
  base = await realpath(await mkdtemp(path.join(tmpdir(), "toolgate-sandbox-profile-")));
  work = path.join(base, "work");
  await mkdir(path.join(work, "state"), { recursive: true });
  await writeFile(path.join(work, "README"), "readme");
  await writeFile(path.join(work, "state", "audit.key"), "k".repeat(64));
  await writeFile(path.join(work, "vault.key"), "v".repeat(64));
  await writeFile(path.join(work, "private.txt"), "private");
  await writeFile(path.join(base, "plain-file"), "not a socket");
  protectPath(path.join(work, "state"));
  protectPath(path.join(work, "vault.key"));
  sock = path.join(base, "host.sock");
  server = createServer((s) => s.end("hello from the host\n"));
  await new Promise<void>((resolve) => server.listen(sock, resolve));
});

afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
  await rm(base, { recursive: true, force: true });
});

const limits = (overrides: Partial<SandboxLimits> = {}) => sandboxLimits(overrides, "test");

const spec = (over: Partial<SandboxSpec> = {}): SandboxSpec => ({
  bwrap: bwrap ?? "/usr/bin/bwrap",
  readOnly: DEFAULT_SANDBOX_READ_ONLY_PATHS,
  writable: [work],
  cwd: work,
  limits: limits(),
  ...over,
});

interface Ran {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly hit: SandboxLimitName[];
}

/** Spawns the launch as a caller must: a pipe on fd 3 carrying the seccomp program, a minimal env. */
async function run(s: SandboxSpec, argv: readonly string[]): Promise<Ran> {
  const launch = sandboxLaunch(s, argv, "test");
  const [program, ...rest] = launch.argv as [string, ...string[]];
  const child = spawn(program, rest, { stdio: sandboxStdio(launch, ["ignore", "pipe", "pipe"]), env: { ...launch.env } });
  feedSandbox(child, launch);
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (d: Buffer) => (stdout += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
  const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) => child.on("close", (c, sig) => resolve([c, sig])));
  return { code, signal, stdout, stderr, hit: launch.finish({ code, signal }) };
}

function refusal(fn: () => unknown): { code: string; message: string } {
  try {
    fn();
  } catch (error) {
    if (!ToolError.is(error)) throw error;
    return { code: error.code, message: error.message };
  }
  return { code: "accepted", message: "" };
}

const py = (source: string) => [python, "-c", source];

describe.skipIf(!runSandboxTests)("the sandbox profile", { timeout: 60_000 }, () => {
  it("bwrap is installed", () => {
    expect(bwrap).toBeDefined();
  });

  // ---------- refused specs ----------

  it("refuses a writable path that does not exist", () => {
    const missing = path.join(base, "no-such-dir");
    expect(refusal(() => sandboxLaunch(spec({ writable: [missing] }), ["/bin/true"], "who"))).toEqual({
      code: "config_invalid",
      message: `who: ${missing} does not exist`,
    });
  });

  it("refuses a protected path as read-only, writable or socket bind", () => {
    const state = path.join(work, "state");
    for (const s of [
      spec({ readOnly: [...DEFAULT_SANDBOX_READ_ONLY_PATHS, state] }),
      spec({ writable: [work, state] }),
      spec({ unixSockets: [path.join(state, "audit.key")] }),
    ]) {
      const r = refusal(() => sandboxLaunch(s, ["/bin/true"], "who"));
      expect(r.code).toBe("config_invalid");
      expect(r.message).toMatch(/protected state/);
    }
  });

  it("refuses a named unix socket that is not a socket", () => {
    const r = refusal(() => sandboxLaunch(spec({ unixSockets: [path.join(base, "plain-file")] }), ["/bin/true"], "who"));
    expect(r).toEqual({ code: "config_invalid", message: `who: ${path.join(base, "plain-file")} is not a Unix socket` });
  });

  it("refuses a working directory outside every bind, and relative paths", () => {
    expect(refusal(() => sandboxLaunch(spec({ cwd: base }), ["/bin/true"], "who"))).toEqual({
      code: "config_invalid",
      message: `who: the working directory ${base} is not inside anything the sandbox binds`,
    });
    expect(refusal(() => sandboxLaunch(spec({ cwd: "work" }), ["/bin/true"], "who")).code).toBe("config_invalid");
    expect(refusal(() => sandboxLaunch(spec({ writable: ["work"] }), ["/bin/true"], "who")).code).toBe("config_invalid");
    // a sibling whose name only starts like a bind is not inside it
    expect(refusal(() => sandboxLaunch(spec({ cwd: `${work}-evil` }), ["/bin/true"], "who")).code).toBe("config_invalid");
  });

  // ---------- the argv ----------

  it("builds the promised flags in order", () => {
    const launch = sandboxLaunch(spec(), ["/bin/true"], "who");
    // never spawned: its cgroup (on a root host) goes now
    launch.finish({ code: 0, signal: null });
    const argv = [...launch.argv];
    const at = (flag: string, from = 0) => argv.indexOf(flag, from);
    const b = at(launch.argv.find((a) => a.endsWith("/bwrap"))!);
    expect(b).toBeGreaterThan(0);
    // the limits are set before bubblewrap starts
    const prlimit = argv.findIndex((a) => a.endsWith("/prlimit"));
    expect(prlimit).toBeGreaterThanOrEqual(0);
    expect(prlimit).toBeLessThan(b);
    expect(argv.slice(prlimit, b)).toEqual(expect.arrayContaining(["--core=0", `--nproc=${spec().limits.processes}`]));
    // The program's environment comes from a descriptor, never from the command line.
    expect(argv.slice(b + 1, b + 4)).toEqual(["--args", String(SANDBOX_ARGS_FD), "--unshare-all"]);
    expect(at("--share-net")).toBe(-1);
    const capDrop = at("--cap-drop");
    expect(argv[capDrop + 1]).toBe("ALL");
    expect(capDrop).toBeGreaterThan(b);
    expect(at("--new-session")).toBeGreaterThan(b);
    expect(at("--die-with-parent")).toBeGreaterThan(b);
    if (launch.facts.userNamespace) {
      expect(at("--unshare-user")).toBeGreaterThan(b);
      expect(at("--disable-userns")).toBeGreaterThan(b);
    }
    // a size applies to the next tmpfs: /tmp and /dev/shm are each sized, after /dev is made
    const tmpfs = (dir: string) => argv.findIndex((a, i) => a === "--tmpfs" && argv[i + 1] === dir);
    const tmpBytes = String(spec().limits.tmpBytes);
    expect(argv.slice(tmpfs("/tmp") - 2, tmpfs("/tmp") + 2)).toEqual(["--size", tmpBytes, "--tmpfs", "/tmp"]);
    expect(argv.slice(tmpfs("/dev/shm") - 2, tmpfs("/dev/shm") + 2)).toEqual(["--size", tmpBytes, "--tmpfs", "/dev/shm"]);
    expect(tmpfs("/dev/shm")).toBeGreaterThan(at("--dev"));
    const size = tmpfs("/tmp") - 2;
    expect(argv.slice(at("--proc"), at("--proc") + 2)).toEqual(["--proc", "/proc"]);
    expect(argv.slice(at("--dev"), at("--dev") + 2)).toEqual(["--dev", "/dev"]);
    // every bind comes before the root is made read-only, and /tmp's tmpfs before the binds
    const remount = argv.findIndex((a, i) => a === "--remount-ro" && argv[i + 1] === "/");
    expect(remount).toBeGreaterThan(b);
    const remountDev = argv.findIndex((a, i) => a === "--remount-ro" && argv[i + 1] === "/dev");
    expect(remountDev).toBeGreaterThan(tmpfs("/dev/shm"));
    const binds = argv.flatMap((a, i) => (a === "--ro-bind" || a === "--bind" || a === "--tmpfs" ? [i] : []));
    expect(binds.length).toBeGreaterThan(3);
    for (const i of binds) expect(i).toBeLessThan(remount);
    expect(argv.slice(at("--bind"), at("--bind") + 3)).toEqual(["--bind", work, work]);
    expect(size).toBeLessThan(at("--ro-bind"));
    expect(argv.slice(at("--add-seccomp-fd"), at("--add-seccomp-fd") + 2)).toEqual(["--add-seccomp-fd", String(SANDBOX_SECCOMP_FD)]);
    expect(launch.seccomp).toBeInstanceOf(Buffer);
    expect(argv.slice(at("--chdir"), at("--chdir") + 2)).toEqual(["--chdir", work]);
    expect(argv.slice(-2)).toEqual(["--", "/bin/true"]);
    expect(remount).toBeLessThan(at("--chdir"));
    expect(launch.facts).toMatchObject({ kind: "bubblewrap", network: "none", unixSockets: [], writable: [work], seccomp: true });
  });

  it("shares the network only when asked", () => {
    const launch = sandboxLaunch(spec({ network: true }), ["/bin/true"], "who");
    launch.finish({ code: 0, signal: null });
    const argv = [...launch.argv];
    expect(argv.indexOf("--share-net")).toBe(argv.indexOf("--unshare-all") + 1);
    expect(launch.facts.network).toBe("host");
  });

  it("the inventory's words come from the sandbox as built", () => {
    const own = path.join(base, "plain-file");
    const launch = sandboxLaunch(spec({ readOnly: [...DEFAULT_SANDBOX_READ_ONLY_PATHS, own], unixSockets: [sock] }), ["/bin/true"], "who");
    launch.finish({ code: 0, signal: null });
    const isolation = sandboxIsolation(launch.facts, "probe", "process");
    expect(isolation).toMatchObject({
      network: `none; unix sockets ${sock}`,
      filesystem: `read-only: system paths, ${own}; writable: ${work}`,
      secrets: "none",
      subprocess: "process",
    });
    expect(isolation.notes).toMatch(
      /^probe; bubblewrap: (own user namespace|no user namespace \(the kernel refused one\)), no capabilities, seccomp filter; limits: /,
    );
    const processes = launch.facts.processesBoundBy;
    expect(isolation.notes).toContain(processes === "none" ? "processes not bounded (no cgroup on this root host)" : `256 processes (${processes})`);
    expect(processes).toBe(process.getuid?.() === 0 ? (sandboxCgroups() ? "cgroup" : "none") : "rlimit");

    const shared = sandboxLaunch(spec({ network: true }), ["/bin/true"], "who");
    shared.finish({ code: 0, signal: null });
    expect(sandboxIsolation(shared.facts, "probe", "process").network).toBe("unrestricted");
    // no sandbox: said so, and why
    expect(sandboxIsolation(undefined, "probe", "process", "bwrap not found")).toEqual({
      network: "unrestricted",
      filesystem: "host",
      secrets: "none",
      subprocess: "process",
      notes: "probe; no sandbox (bwrap not found)",
    });
  });

  // ---------- inside ----------

  it("runs a program (the sandbox works at all here)", async () => {
    const r = await run(spec(), ["/bin/cat", "README"]);
    expect(r).toMatchObject({ code: 0, stdout: "readme", hit: [] });
  });

  it("hides the host's home, /root, /etc/shadow and /var", async () => {
    // (the parents of a bind exist inside, empty: bubblewrap makes them as mount points)
    const paths = [homedir(), "/root", "/etc/shadow", "/var", "/home", path.join(base, "plain-file"), sock];
    const script = `for p in "$@"; do if [ -e "$p" ]; then echo "visible $p"; else echo "absent $p"; fi; done`;
    const r = await run(spec(), ["/bin/sh", "-c", script, "sh", ...paths, work]);
    expect(r.code).toBe(0);
    expect(r.stdout.trim().split("\n")).toEqual([...paths.map((p) => `absent ${p}`), `visible ${work}`]);
    // and outside the sandbox they are there (the check above is not vacuous)
    expect(existsSync("/etc/shadow") || existsSync("/var")).toBe(true);
  });

  // On a root host the sandbox's user is root's own uid (bubblewrap maps it into the user namespace),
  // so a root-only directory on a bound system path opens for it as it does for root.
  it.skipIf(!existsSync("/etc/ssl/private"))("cannot open the host's TLS private key directory (/etc/ssl/private)", async () => {
    const r = await run(spec(), ["/bin/sh", "-c", "ls /etc/ssl/private >/dev/null 2>&1 && echo opened || echo refused"]);
    expect(r.stdout.trim()).toBe("refused");
  });

  it("hides a protected file and directory (and a hidden path) under a bind", async () => {
    const script = `cat vault.key; echo "|"; ls -A state; echo "|"; cat private.txt; echo "|"; cat README`;
    const r = await run(spec({ hidden: [path.join(work, "private.txt")] }), ["/bin/sh", "-c", script]);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe("|\n|\n|\nreadme");
  });

  it("follows a link to protected state before its checks and masks: a link to the state is refused, a link to its parent masks it", async () => {
    const toState = path.join(base, "link-to-state");
    const toWork = path.join(base, "link-to-work");
    await symlink(path.join(work, "state"), toState).catch(() => undefined);
    await symlink(work, toWork).catch(() => undefined);
    expect(() => sandboxLaunch(spec({ readOnly: [...DEFAULT_SANDBOX_READ_ONLY_PATHS, toState], writable: [] }), ["/bin/true"], "who")).toThrow(
      /protected state/,
    );
    const r = await run(spec({ readOnly: [...DEFAULT_SANDBOX_READ_ONLY_PATHS, toWork], writable: [], cwd: toWork }), [
      "/bin/sh",
      "-c",
      `ls -A ${toWork}/state; echo "|"; cat ${toWork}/vault.key; echo "|"; cat README`,
    ]);
    expect(r.stdout).toBe("|\n|\nreadme");
  });

  it("refuses to bind the filesystem root", () => {
    for (const over of [{ readOnly: ["/"] }, { writable: ["/"] }]) {
      expect(() => sandboxLaunch(spec(over), ["/bin/true"], "who")).toThrow(/filesystem root/);
    }
  });

  it("keeps a mask read-only and small: nothing is stored in the place of the hidden state", async () => {
    const r = await run(spec({ writable: [], readOnly: [...DEFAULT_SANDBOX_READ_ONLY_PATHS, work] }), [
      "/bin/sh",
      "-c",
      "touch state/x 2>/dev/null && echo wrote || echo refused",
    ]);
    expect(r.stdout.trim()).toBe("refused");
  });

  it("hands the program its environment and nothing of it to what starts the sandbox", async () => {
    const marker = path.join(base, "host-ran-bash-env");
    const bashEnv = path.join(base, "bash-env.sh");
    await writeFile(bashEnv, `touch ${marker}\n`);
    const env = { PATH: "/usr/bin:/bin", BASH_ENV: bashEnv, LD_PRELOAD: "/nonexistent/preload.so", SECRET_TOKEN: "tok-123" };
    const launch = sandboxLaunch(spec({ env }), ["/bin/sh", "-c", "echo $SECRET_TOKEN; echo $LD_PRELOAD"], "test");
    expect(launch.env).toEqual({ PATH: "/usr/bin:/bin" });
    expect(launch.argv.join(" ")).not.toContain("tok-123");
    const child = spawn(launch.argv[0]!, launch.argv.slice(1), { stdio: sandboxStdio(launch, ["ignore", "pipe", "pipe"]), env: { ...launch.env } });
    feedSandbox(child, launch);
    let stdout = "";
    child.stdout!.on("data", (d: Buffer) => (stdout += d.toString()));
    const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) => child.on("close", (c, sig) => resolve([c, sig])));
    launch.finish({ code, signal });
    expect(stdout).toBe("tok-123\n/nonexistent/preload.so\n");
    expect(existsSync(marker)).toBe(false);
  });

  it("hides the memory of the namespace's init, and refuses datagram socket pairs", async () => {
    const source = [
      "import socket",
      "for p in ['/proc/1/mem', '/proc/1/task/1/mem']:",
      "    try:",
      "        open(p, 'r+b'); print(p, 'open')",
      "    except OSError as e: print(p, 'refused')",
      "try:",
      "    socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM); print('dgram pair')",
      "except OSError as e: print('dgram refused', e.errno)",
      "socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM); print('stream pair')",
    ].join("\n");
    const r = await run(spec(), [python, "-c", source]);
    expect(r.stdout).toBe("/proc/1/mem refused\n/proc/1/task/1/mem refused\ndgram refused 1\nstream pair\n");
  });

  it("keeps the root read-only and writes only to the writable bind and /tmp", async () => {
    const script = [
      `mkdir /made 2>/dev/null && echo root-writable`,
      `touch /usr/made 2>/dev/null && echo usr-writable`,
      `touch /dev/made 2>/dev/null && echo dev-writable`,
      `echo x > /tmp/t && echo tmp-ok`,
      `echo x > /dev/shm/t && echo shm-ok`,
      `echo x > out.txt && echo work-ok`,
    ].join("; ");
    const r = await run(spec(), ["/bin/sh", "-c", script]);
    expect(r.stdout.trim().split("\n")).toEqual(["tmp-ok", "shm-ok", "work-ok"]);
    expect(existsSync(path.join(work, "out.txt"))).toBe(true);
    expect(existsSync("/made")).toBe(false);
    await rm(path.join(work, "out.txt"));
  });

  it("has no capabilities and its own pid namespace", async () => {
    const r = await run(spec(), ["/bin/sh", "-c", `grep -E '^(CapEff|CapPrm|CapBnd|NoNewPrivs|Seccomp):' /proc/self/status; ls /proc | grep -cE '^[0-9]+$'`]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/CapPrm:\s+0000000000000000/);
    expect(r.stdout).toMatch(/CapEff:\s+0000000000000000/);
    expect(r.stdout).toMatch(/CapBnd:\s+0000000000000000/);
    expect(r.stdout).toMatch(/Seccomp:\s+2/);
    // bubblewrap's init, the shell, grep/ls: a handful, never the host's processes
    expect(Number(r.stdout.trim().split("\n").at(-1))).toBeLessThan(8);
  });

  // A root host's sandbox user is root's own uid: the procfs files that check only the user must not take its writes.
  it("cannot write the kernel's sysctls or the sysrq trigger, and the kernel's memory and key files are hidden", async () => {
    const check = [
      "import os",
      // access(2) only: nothing is written, whatever the outcome
      "for p in ['/proc/sys/kernel/core_pattern', '/proc/sys/kernel/modprobe', '/proc/sysrq-trigger']:",
      "  print(p, 'writable' if os.access(p, os.W_OK) else 'read-only')",
      "for p in ['/proc/kcore', '/proc/keys', '/proc/timer_list']:",
      "  try:",
      "    with open(p, 'rb') as f: print(p, 'content' if f.read(1) else 'empty')",
      "  except OSError as e: print(p, 'refused')",
    ].join("\n");
    const r = await run(spec(), py(check));
    expect(r.stderr).toBe("");
    const seen = Object.fromEntries(
      r.stdout
        .trim()
        .split("\n")
        .map((l) => l.split(" ") as [string, string]),
    );
    expect(seen["/proc/sys/kernel/core_pattern"]).toBe("read-only");
    expect(seen["/proc/sys/kernel/modprobe"]).toBe("read-only");
    expect(seen["/proc/sysrq-trigger"]).toBe("read-only");
    for (const p of ["/proc/kcore", "/proc/keys", "/proc/timer_list"]) if (existsSync(p)) expect([p, seen[p]]).not.toEqual([p, "content"]);
  });

  it("a descriptor the caller left open does not reach the program", async () => {
    const secret = path.join(base, "held-open.txt");
    await writeFile(secret, "held open by the host");
    const held = await open(secret, "r");
    try {
      const launch = sandboxLaunch(spec(), ["/bin/sh", "-c", "cat <&5 2>/dev/null || echo closed; ls /proc/self/fd | tr '\\n' ' '"], "test");
      const [program, ...rest] = launch.argv as [string, ...string[]];
      const child = spawn(program, rest, { stdio: ["ignore", "pipe", "pipe", "pipe", "pipe", held.fd], env: { ...launch.env } });
      feedSandbox(child, launch);
      let stdout = "";
      child.stdout!.on("data", (d: Buffer) => (stdout += d.toString()));
      const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) => child.on("close", (c, sig) => resolve([c, sig])));
      launch.finish({ code, signal });
      expect(stdout).not.toContain("held open by the host");
      expect(stdout.split("\n")[0]).toBe("closed");
      // the standard three and ls's own directory
      expect(stdout.split("\n")[1]!.trim().split(" ").map(Number)).toEqual([0, 1, 2, 3]);
    } finally {
      await held.close();
    }
  });

  it("reaches a named unix socket, and no other", async () => {
    const connect = (p: string) =>
      py(
        `import socket\ntry:\n  s = socket.socket(socket.AF_UNIX)\n  s.connect(${JSON.stringify(p)}); print(s.recv(100).decode().strip())\nexcept OSError as e:\n  print("errno", e.errno)`,
      );
    const without = await run(spec({ readOnly: [...DEFAULT_SANDBOX_READ_ONLY_PATHS] }), connect(sock));
    expect(without.stdout.trim()).toBe("errno 97"); // EAFNOSUPPORT: no unix sockets at all
    const named = await run(spec({ unixSockets: [sock] }), connect(sock));
    expect(named.stdout.trim()).toBe("hello from the host");
  });

  // ---------- limits ----------

  it("a fork bomb is bounded by a process limit of 16, and finish() says so", async () => {
    const bomb = py(
      [
        "import os, time",
        "n = 0",
        "for i in range(64):",
        "  try:",
        "    pid = os.fork()",
        "  except OSError as e:",
        "    print('refused', e.errno); break",
        "  if pid == 0:",
        "    time.sleep(3); os._exit(0)",
        "  n += 1",
        "print('forked', n)",
      ].join("\n"),
    );
    const r = await run(spec({ limits: limits({ processes: 16 }) }), bomb);
    const forked = Number(/forked (\d+)/.exec(r.stdout)?.[1]);
    expect(r.stdout).toMatch(/refused 11/); // EAGAIN
    expect(forked).toBeLessThan(16);
    if (sandboxCgroups()) expect(r.hit).toContain("processes");
  });

  it("a busy loop past cpuSeconds 1 ends, and finish() reports cpuSeconds", async () => {
    const started = Date.now();
    const r = await run(spec({ limits: limits({ cpuSeconds: 1 }) }), py("while True: pass"));
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(r.code).not.toBe(0);
    expect(r.hit).toEqual(["cpuSeconds"]);
  });

  it("a write past fileBytes fails, and finish() reports fileBytes", async () => {
    const r = await run(spec({ limits: limits({ fileBytes: 4096 }) }), ["/bin/dd", "if=/dev/zero", "of=/tmp/big", "bs=1024", "count=64"]);
    expect(r.code).not.toBe(0);
    expect(r.hit).toEqual(["fileBytes"]);
  });

  it("/tmp and /dev/shm are sized by tmpBytes", async () => {
    const fill = (dir: string) => `dd if=/dev/zero of=${dir}/fill bs=1024 count=512 2>/dev/null && echo ${dir}-filled || echo ${dir}-full`;
    const r = await run(spec({ limits: limits({ tmpBytes: 128 * 1024 }) }), ["/bin/sh", "-c", `${fill("/tmp")}; ${fill("/dev/shm")}; ${fill(".")}`]);
    expect(r.stdout.trim().split("\n")).toEqual(["/tmp-full", "/dev/shm-full", ".-filled"]);
    await rm(path.join(work, "fill"));
  });

  it("a small write under fileBytes hits nothing", async () => {
    const r = await run(spec({ limits: limits({ fileBytes: 65536 }) }), ["/bin/dd", "if=/dev/zero", "of=/tmp/small", "bs=1024", "count=8"]);
    expect(r).toMatchObject({ code: 0, hit: [] });
  });
});

describe.skipIf(!runSandboxTests || process.getuid?.() !== 0)("the run's cgroup (root host)", { timeout: 60_000 }, () => {
  const cgroupDirs = () =>
    ["/sys/fs/cgroup/toolgate", "/sys/fs/cgroup/pids/toolgate", "/sys/fs/cgroup/memory/toolgate"]
      .filter((d) => existsSync(d))
      .flatMap((d) =>
        readdirSync(d)
          .filter((n) => n.startsWith(`run-${process.pid}-`))
          .map((n) => path.join(d, n)),
      );

  it("the root host has cgroups here", () => {
    expect(sandboxCgroups()).toBe(true);
  });

  it("is removed after finish, and nothing it held survives (a setsid daemon included)", async () => {
    const pidFile = path.join(work, "daemon.pid");
    expect(cgroupDirs()).toEqual([]);
    const launch = sandboxLaunch(spec(), ["/bin/sh", "-c", `setsid /bin/sleep 30 & echo $! > daemon.pid; echo started`], "test");
    expect(cgroupDirs().length).toBeGreaterThan(0);
    const [program, ...rest] = launch.argv as [string, ...string[]];
    const child = spawn(program, rest, { stdio: sandboxStdio(launch, ["ignore", "pipe", "ignore"]), env: { ...launch.env } });
    feedSandbox(child, launch);
    const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) => child.on("close", (c, s) => resolve([c, s])));
    expect(existsSync(pidFile)).toBe(true);
    expect(launch.finish({ code, signal })).toEqual([]);
    expect(cgroupDirs()).toEqual([]);
    // no sleep of ours left anywhere on the host
    const sleeps = readdirSync("/proc")
      .filter((e) => /^\d+$/.test(e))
      .filter((e) => {
        try {
          return readFileSync(`/proc/${e}/cmdline`, "utf8") === "/bin/sleep\u000030\u0000";
        } catch {
          return false;
        }
      });
    expect(sleeps).toEqual([]);
    await rm(pidFile, { force: true });
  });
});
