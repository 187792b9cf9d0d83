import { existsSync } from "node:fs";
import { chmod, mkdir, mkdtemp, readdir, readFile, realpath, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { ToolError, type ToolErrorCode } from "../errors.js";
import { protectPath } from "./protected-paths.js";
import { sandboxCgroups } from "./sandbox/profile.js";
import { createVerifier, type CreateVerifierOptions, type VerifierCommand } from "./verifier.js";

const node = process.execPath;
let base: string;
let root: string;
let marker: string;

async function caught(promise: Promise<unknown>): Promise<ToolError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof ToolError) return error;
    throw new Error(`expected a ToolError, got ${String(error)}`);
  }
  throw new Error("expected a refusal, but the call succeeded");
}

/** A command that records that it ran, then prints its arguments as JSON. */
const recorder = (args?: VerifierCommand["args"]): VerifierCommand => ({
  argv: [node, "-e", 'require("fs").appendFileSync(process.env.TOOLGATE_MARKER, "spawned\\n"); console.log(JSON.stringify(process.argv.slice(1)))', "--"],
  ...(args === undefined ? {} : { args }),
});

function verifierWith(commands: CreateVerifierOptions["commands"], extra: Partial<CreateVerifierOptions> = {}) {
  return createVerifier({ root, commands, timeoutMs: 30_000, maxOutputBytes: 64 * 1024, env: { set: { TOOLGATE_MARKER: marker } }, ...extra });
}

const spawned = () => existsSync(marker);

/** Alive and not a zombie waiting for a parent to reap it. */
async function isRunning(pid: number): Promise<boolean> {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  const stat = await readFile(`/proc/${pid}/stat`, "utf8").catch(() => "");
  const state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
  return state !== "" && state !== "Z" && state !== "X";
}

/** Wait (generously, by polling) until `pid` is no longer running; false if it still is. */
async function gone(pid: number, patienceMs = 15_000): Promise<boolean> {
  const until = Date.now() + patienceMs;
  while (Date.now() < until) {
    if (!(await isRunning(pid))) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return false;
}

/** Live (non-zombie) processes whose command line holds `token`. */
async function processesWith(token: string): Promise<number[]> {
  const found: number[] = [];
  for (const entry of await readdir("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const cmdline = await readFile(`/proc/${entry}/cmdline`, "utf8").catch(() => "");
    if (cmdline.includes(token) && (await isRunning(Number(entry)))) found.push(Number(entry));
  }
  return found;
}

async function noneLeft(token: string, patienceMs = 15_000): Promise<boolean> {
  const until = Date.now() + patienceMs;
  while (Date.now() < until) {
    if ((await processesWith(token)).length === 0) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return false;
}

async function waitForFile(file: string, patienceMs = 20_000): Promise<string> {
  const until = Date.now() + patienceMs;
  while (Date.now() < until) {
    const text = await readFile(file, "utf8").catch(() => "");
    if (text.trim() !== "") return text.trim();
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`${file} never appeared`);
}

async function script(name: string, body: string): Promise<string> {
  const file = path.join(root, "bin", name);
  await writeFile(file, `#!/bin/sh\n${body}\n`);
  await chmod(file, 0o755);
  return file;
}

beforeAll(async () => {
  base = await realpath(await mkdtemp(path.join(tmpdir(), "toolgate-verifier-")));
  root = path.join(base, "repo");
  await mkdir(path.join(root, "bin"), { recursive: true });
  await mkdir(path.join(root, "src", "deep"), { recursive: true });
  await writeFile(path.join(root, "README"), "inside");
  await mkdir(path.join(base, "outside"));
  await writeFile(path.join(base, "outside", "secret.txt"), "outside secret");
  await symlink(path.join(base, "outside"), path.join(root, "escape"));
});

afterAll(async () => {
  await rm(base, { recursive: true, force: true });
});

beforeEach(async () => {
  marker = path.join(base, `spawned-${Math.random().toString(36).slice(2)}`);
});

describe("verifier refuses before spawning", () => {
  it.each(["nope", "__proto__", "constructor", "toString", "hasOwnProperty", "valueOf", "", "TEST", " test"])("the undeclared command %j", async (command) => {
    const verifier = verifierWith({ test: recorder() });
    const error = await caught(verifier.run({ command }));
    expect(error.code).toBe<ToolErrorCode>("command_denied");
    expect(error.details?.["reason"]).toBe("unknown_command");
    expect(spawned()).toBe(false);
  });

  it("a command name that is not a string", async () => {
    const verifier = verifierWith({ test: recorder() });
    for (const command of [42, null, undefined, ["test"], { toString: () => "test" }]) {
      expect((await caught(verifier.run({ command: command as unknown as string }))).code).toBe<ToolErrorCode>("command_denied");
    }
    expect(spawned()).toBe(false);
  });

  it("any argument to a command that declares none", async () => {
    const verifier = verifierWith({ test: recorder() });
    const error = await caught(verifier.run({ command: "test", args: ["src"] }));
    expect(error.details?.["reason"]).toBe("too_many_args");
    expect(spawned()).toBe(false);
  });

  it("more arguments than declared", async () => {
    const verifier = verifierWith({ test: recorder({ max: 2 }) });
    const error = await caught(verifier.run({ command: "test", args: ["a", "b", "c"] }));
    expect(error.code).toBe<ToolErrorCode>("command_denied");
    expect(error.details?.["reason"]).toBe("too_many_args");
    expect(spawned()).toBe(false);
  });

  it.each(["-rf", "--exec=touch pwned", "-", "--", "-o/tmp/out", "--config=../../etc"])("the option %j where options are forbidden", async (arg) => {
    const verifier = verifierWith({ test: recorder({ max: 4 }) });
    const error = await caught(verifier.run({ command: "test", args: ["ok", arg] }));
    expect(error.code).toBe<ToolErrorCode>("command_denied");
    expect(error.details).toMatchObject({ reason: "option_forbidden", index: 1 });
    expect(spawned()).toBe(false);
  });

  it.each([
    ["[a-z]+", "abc;rm -rf /"],
    ["[a-z]+", "abc\nsecond"],
    ["[a-z]+", ""],
    ["a|b", "ab"],
    ["a|b", "a-b"],
    ["src/[a-z]+\\.ts", "src/../../etc/passwd"],
    [/[a-z]+/, "abc def"],
    [/^[a-z]+$/m, "ok\nbad thing"],
    [/[a-z]+/g, "abc$(touch pwned)"],
    [/[a-z]+/y, "x; y"],
  ] as const)("with pattern %s, the argument %j that does not match as a whole", async (pattern, arg) => {
    const verifier = verifierWith({ test: recorder({ pattern, allowOptions: true }) });
    const error = await caught(verifier.run({ command: "test", args: [arg] }));
    expect(error.code).toBe<ToolErrorCode>("command_denied");
    expect(error.details?.["reason"]).toBe("pattern_mismatch");
    expect(spawned()).toBe(false);
  });

  it("arguments that are not strings, an args value that is not an array, NUL bytes and overlong arguments", async () => {
    const verifier = verifierWith({ test: recorder({}) });
    const bad: unknown[] = [[42], [null], [{ toString: () => "x" }], [["nested"]], "src", { length: 1, 0: "src" }, ["a\0b"], ["x".repeat(5000)]];
    for (const args of bad) {
      const error = await caught(verifier.run({ command: "test", args: args as string[] }));
      expect(error.code).toBe<ToolErrorCode>("command_denied");
    }
    expect(spawned()).toBe(false);
  });

  it("a cwd outside the root, through `..`, an absolute path or a link", async () => {
    const verifier = verifierWith({ test: recorder() });
    for (const cwd of ["..", "../outside", "src/../../outside", "/", "/etc", path.join(base, "outside"), "escape", "escape/"]) {
      expect((await caught(verifier.run({ command: "test", cwd }))).code).toBe<ToolErrorCode>("path_escape");
    }
    expect((await caught(verifier.run({ command: "test", cwd: "README" }))).code).toBe<ToolErrorCode>("command_denied");
    expect((await caught(verifier.run({ command: "test", cwd: "missing" }))).code).toBe<ToolErrorCode>("not_found");
    expect((await caught(verifier.run({ command: "test", cwd: "" }))).code).toBe<ToolErrorCode>("path_escape");
    expect(spawned()).toBe(false);
  });

  it("a run whose signal is already aborted", async () => {
    const verifier = verifierWith({ test: recorder() });
    const controller = new AbortController();
    controller.abort();
    expect((await caught(verifier.run({ command: "test", signal: controller.signal }))).code).toBe<ToolErrorCode>("cancelled");
    expect(spawned()).toBe(false);
  });

  it("a bad configuration", () => {
    const good = { test: recorder() };
    const bad: CreateVerifierOptions[] = [
      { root: "relative", commands: good },
      { root: path.join(base, "missing"), commands: good },
      { root: path.join(root, "README"), commands: good },
      { root, commands: { test: { argv: [] as unknown as [string] } } },
      { root, commands: { test: { argv: [""] } } },
      { root, commands: { test: { argv: ["-x"] } } },
      { root, commands: { test: { argv: ["node", "a\0b"] } } },
      { root, commands: { test: { argv: ["node"], args: { pattern: "(" } } } },
      { root, commands: { test: { argv: ["node"], args: { max: -1 } } } },
      { root, commands: { test: { argv: ["node"], timeoutMs: 0 } } },
      { root, commands: good, timeoutMs: 0 },
      { root, commands: good, maxOutputBytes: -1 },
      { root, commands: good, killGraceMs: 1.5 },
      { root, commands: good, env: { pass: ["A=B"] } },
      { root, commands: good, env: { set: { "BAD NAME": "x" } } },
      { root, commands: good, env: { set: { OK: "a\0b" } } },
      { root, commands: good, sandbox: "container" as unknown as "none" },
      { root: "/", commands: good, sandbox: "bubblewrap" },
    ];
    for (const options of bad) {
      expect(() => createVerifier(options), JSON.stringify(options)).toThrowError(expect.objectContaining({ code: "config_invalid" }) as Error);
    }
  });

  it("the bubblewrap sandbox where bwrap is missing, with a clear configuration error", () => {
    let error: unknown;
    try {
      createVerifier({ root, commands: { test: recorder() }, sandbox: { kind: "bubblewrap", bwrapPath: path.join(base, "no-such-bwrap") } });
    } catch (e) {
      error = e;
    }
    expect(ToolError.is(error, "config_invalid")).toBe(true);
    expect((error as Error).message).toMatch(/bubblewrap/);
  });

  it("a declared program that does not exist, as a configuration error at run time", async () => {
    const verifier = verifierWith({ test: { argv: [path.join(base, "no-such-program")] } });
    expect((await caught(verifier.run({ command: "test" }))).code).toBe<ToolErrorCode>("config_invalid");
  });
});

// Real processes on a shared machine: generous limits, never a claim about speed.
describe("verifier runs", { timeout: 60_000 }, () => {
  it("the declared argv with the arguments passed literally, never through a shell", async () => {
    const verifier = verifierWith({ test: recorder({ pattern: "[^-].*" }) });
    const args = ["$(touch pwned)", "; touch pwned2", "`id`", "a b", "*", "~", "$HOME"];
    const result = await verifier.run({ command: "test", args });
    expect(result.exitCode).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual(args);
    expect(existsSync(path.join(root, "pwned")) || existsSync(path.join(root, "pwned2"))).toBe(false);
    expect(spawned()).toBe(true);
  });

  it("options and patterns as declared", async () => {
    const verifier = verifierWith({ test: recorder({ pattern: /--?[a-z]+|src\/[a-z]+\.ts/g, allowOptions: true, max: 3 }) });
    for (let i = 0; i < 3; i++) {
      // a `g` flag would make a reused RegExp skip every second match; it is dropped
      const result = await verifier.run({ command: "test", args: ["-v", "--bail", "src/main.ts"] });
      expect(JSON.parse(result.stdout)).toEqual(["-v", "--bail", "src/main.ts"]);
    }
  });

  it("in the declared cwd inside the root (a link inside is followed)", async () => {
    await symlink("src/deep", path.join(root, "deep-link")).catch(() => undefined);
    const verifier = verifierWith({ pwd: { argv: [node, "-e", "console.log(process.cwd())"] } });
    expect((await verifier.run({ command: "pwd" })).stdout.trim()).toBe(root);
    expect((await verifier.run({ command: "pwd", cwd: "src/deep" })).stdout.trim()).toBe(path.join(root, "src", "deep"));
    expect((await verifier.run({ command: "pwd", cwd: "deep-link" })).stdout.trim()).toBe(path.join(root, "src", "deep"));
  });

  it("with an environment built only from the allowlist: an inherited secret is not visible", async () => {
    const secret = "inherited-secret-value-5f1c";
    process.env["TOOLGATE_TEST_INHERITED_SECRET"] = secret;
    process.env["TOOLGATE_TEST_PASSED"] = "passed-value";
    try {
      const verifier = createVerifier({
        root,
        commands: { env: { argv: [node, "-e", "console.log(JSON.stringify(process.env))"] } },
        env: { pass: ["TOOLGATE_TEST_PASSED", "TOOLGATE_TEST_NOT_SET"], set: { LANG: "C.UTF-8" } },
      });
      const result = await verifier.run({ command: "env" });
      const seen = JSON.parse(result.stdout) as Record<string, string>;
      expect(Object.keys(seen).sort()).toEqual(["LANG", "PATH", "TOOLGATE_TEST_PASSED"]);
      expect(seen["PATH"]).toBe(process.env["PATH"]);
      expect(seen["TOOLGATE_TEST_PASSED"]).toBe("passed-value");
      expect(result.stdout).not.toContain(secret);
    } finally {
      delete process.env["TOOLGATE_TEST_INHERITED_SECRET"];
      delete process.env["TOOLGATE_TEST_PASSED"];
    }
  });

  it("with stdin closed: a reader sees end of input at once", async () => {
    const verifier = verifierWith({
      stdin: { argv: [node, "-e", 'let n = 0; process.stdin.on("data", (c) => (n += c.length)); process.stdin.on("end", () => console.log("eof " + n))'] },
    });
    const result = await verifier.run({ command: "stdin" });
    expect(result.stdout.trim()).toBe("eof 0");
    expect(result.timedOut).toBe(false);
  });

  it("reporting exit code, signal and both streams", async () => {
    const verifier = verifierWith({
      fail: { argv: [node, "-e", 'console.log("out"); console.error("err"); process.exit(3)'] },
      killed: { argv: [node, "-e", 'process.kill(process.pid, "SIGTERM"); setTimeout(() => {}, 60000)'] },
    });
    const failed = await verifier.run({ command: "fail" });
    expect(failed).toMatchObject({ exitCode: 3, signal: null, stdout: "out\n", stderr: "err\n", truncated: false, timedOut: false });
    expect(failed.durationMs).toBeGreaterThan(0);
    const killed = await verifier.run({ command: "killed" });
    expect(killed).toMatchObject({ exitCode: null, signal: "SIGTERM", timedOut: false });
  });

  it("capping each stream with a visible marker, while the command runs to its end", async () => {
    const verifier = verifierWith(
      {
        loud: { argv: [node, "-e", 'process.stdout.write("a".repeat(200000)); process.stderr.write("b".repeat(150000)); process.exitCode = 0'] },
        exact: { argv: [node, "-e", 'process.stdout.write("c".repeat(1000))'] },
        wide: { argv: [node, "-e", 'process.stdout.write("é".repeat(1000))'] },
      },
      { maxOutputBytes: 1001 },
    );
    const loud = await verifier.run({ command: "loud" });
    expect(loud.exitCode).toBe(0);
    expect(loud.truncated).toBe(true);
    expect(loud.stdout).toBe(`${"a".repeat(1001)}\n[toolgate: output truncated, 198999 more bytes not shown]\n`);
    expect(loud.stderr).toBe(`${"b".repeat(1001)}\n[toolgate: output truncated, 148999 more bytes not shown]\n`);

    const exact = await verifier.run({ command: "exact" });
    expect(exact).toMatchObject({ stdout: "c".repeat(1000), truncated: false });

    const wide = await verifier.run({ command: "wide" });
    expect(wide.stdout).toBe(`${"é".repeat(500)}\n[toolgate: output truncated, 1000 more bytes not shown]\n`);
  });

  it("to its deadline, then stops it and says so", async () => {
    const verifier = verifierWith({ sleep: { argv: [node, "-e", "setTimeout(() => {}, 600000)"], timeoutMs: 300 } });
    const result = await verifier.run({ command: "sleep" });
    expect(result).toMatchObject({ timedOut: true, exitCode: null, signal: "SIGTERM" });
  });
});

describe("verifier leaves nothing running", { timeout: 60_000 }, () => {
  it("after a timeout: a grandchild that sleeps is killed with its group", async () => {
    const pidFile = path.join(base, "gc-timeout.pid");
    const forker = await script("fork-timeout.sh", `sleep 301 &\necho $! > "${pidFile}"\nwait`);
    const verifier = verifierWith({ fork: { argv: [forker], timeoutMs: 4_000 } });
    const result = await verifier.run({ command: "fork" });
    expect(result.timedOut).toBe(true);
    const pid = Number(await waitForFile(pidFile));
    expect(pid).toBeGreaterThan(1);
    expect(await gone(pid)).toBe(true);
  });

  it("after an abort: the run rejects as cancelled only once its group is gone", async () => {
    const pidFile = path.join(base, "gc-abort.pid");
    const forker = await script("fork-abort.sh", `sleep 302 &\necho $! > "${pidFile}"\nwait`);
    const verifier = verifierWith({ fork: { argv: [forker] } });
    const controller = new AbortController();
    const running = verifier.run({ command: "fork", signal: controller.signal });
    const pid = Number(await waitForFile(pidFile));
    expect(await isRunning(pid)).toBe(true);
    controller.abort();
    expect((await caught(running)).code).toBe<ToolErrorCode>("cancelled");
    expect(await gone(pid)).toBe(true);
  });

  it("when the group ignores SIGTERM: SIGKILL follows after the grace period", async () => {
    const pidFile = path.join(base, "gc-stubborn.pid");
    const forker = await script("fork-stubborn.sh", `trap '' TERM\nsleep 303 &\necho $! > "${pidFile}"\nwhile :; do sleep 1; done`);
    const verifier = verifierWith({ fork: { argv: [forker], timeoutMs: 4_000 } }, { killGraceMs: 300 });
    const result = await verifier.run({ command: "fork" });
    expect(result).toMatchObject({ timedOut: true, signal: "SIGKILL" });
    expect(await gone(Number(await waitForFile(pidFile)))).toBe(true);
  });

  it("after a normal exit: a background process left behind is killed", async () => {
    const pidFile = path.join(base, "gc-exit.pid");
    const forker = await script("fork-exit.sh", `sleep 304 >/dev/null 2>&1 &\necho $! > "${pidFile}"\nexit 0`);
    const verifier = verifierWith({ fork: { argv: [forker] } });
    const result = await verifier.run({ command: "fork" });
    expect(result).toMatchObject({ exitCode: 0, timedOut: false });
    expect(await gone(Number(await waitForFile(pidFile)))).toBe(true);
  });

  it("after a normal exit: a background process holding the output pipes does not hold the run", async () => {
    const pidFile = path.join(base, "gc-pipes.pid");
    const forker = await script("fork-pipes.sh", `sleep 305 &\necho $! > "${pidFile}"\necho done\nexit 0`);
    const verifier = verifierWith({ fork: { argv: [forker], timeoutMs: 60_000 } });
    const result = await verifier.run({ command: "fork" });
    expect(result).toMatchObject({ exitCode: 0, timedOut: false, stdout: "done\n" });
    expect(await gone(Number(await waitForFile(pidFile)))).toBe(true);
  });
});

// ---------- the bubblewrap sandbox ----------

const bwrapInstalled = [...(process.env["PATH"] ?? "").split(path.delimiter), "/usr/bin", "/bin"]
  .filter((dir) => path.isAbsolute(dir))
  .some((dir) => existsSync(path.join(dir, "bwrap")));
// In CI these tests must run (and fail if bwrap is missing); elsewhere they are skipped without it.
const runSandboxTests = bwrapInstalled || process.env["CI"] !== undefined;

describe.skipIf(!runSandboxTests)("verifier under bubblewrap", { timeout: 60_000 }, () => {
  const sandboxed = (commands: CreateVerifierOptions["commands"], extra: Partial<CreateVerifierOptions> = {}) =>
    createVerifier({ root, commands, timeoutMs: 30_000, maxOutputBytes: 64 * 1024, sandbox: "bubblewrap", ...extra });

  it("bwrap is installed", () => {
    expect(bwrapInstalled).toBe(true);
  });

  it("has no network: a listener on the host's loopback cannot be reached (and can be without the sandbox)", async () => {
    const { createServer } = await import("node:net");
    let connections = 0;
    const server = createServer((socket) => {
      connections++;
      socket.end();
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const port = (server.address() as { port: number }).port;
    const probe = `const s = require("net").connect(${port}, "127.0.0.1"); s.on("connect", () => { console.log("connected"); s.destroy(); }); s.on("error", (e) => { console.log("failed " + e.code); process.exitCode = 7; });`;
    try {
      const inside = await sandboxed({ probe: { argv: [node, "-e", probe] } }).run({ command: "probe" });
      expect(inside.stdout).toMatch(/^failed E[A-Z]+/);
      expect(inside.exitCode).toBe(7);
      expect(connections).toBe(0);

      const outside = await createVerifier({ root, commands: { probe: { argv: [node, "-e", probe] } } }).run({ command: "probe" });
      expect(outside.stdout.trim()).toBe("connected");
      expect(connections).toBe(1);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it("binds the root read-only unless the command declares writes", async () => {
    const write = (name: string) =>
      `try { require("fs").writeFileSync(${JSON.stringify(name)}, "x"); console.log("wrote"); } catch (e) { console.log(e.code); }`;
    const verifier = sandboxed({ ro: { argv: [node, "-e", write("ro.txt")] }, rw: { argv: [node, "-e", write("rw.txt")], sandbox: { write: true } } });
    expect((await verifier.run({ command: "ro" })).stdout.trim()).toBe("EROFS");
    expect(existsSync(path.join(root, "ro.txt"))).toBe(false);
    expect((await verifier.run({ command: "rw" })).stdout.trim()).toBe("wrote");
    expect(await readFile(path.join(root, "rw.txt"), "utf8")).toBe("x");
    await rm(path.join(root, "rw.txt"));
  });

  it("gives a private /tmp and hides the host's files outside the root", async () => {
    const hostFile = path.join(tmpdir(), `toolgate-host-visible-${process.pid}`);
    await writeFile(hostFile, "host");
    const sandboxMark = `/tmp/toolgate-sandbox-mark-${process.pid}`;
    const look = [
      `const fs = require("fs");`,
      `const seen = (p) => { try { fs.readFileSync(p); return "visible"; } catch (e) { return e.code; } };`,
      `fs.writeFileSync(${JSON.stringify(sandboxMark)}, "sandbox");`,
      `console.log(JSON.stringify({ host: seen(${JSON.stringify(hostFile)}), outside: seen(${JSON.stringify(path.join(base, "outside", "secret.txt"))}), shadow: seen("/etc/shadow"), readme: seen("README") }));`,
    ].join("\n");
    try {
      const result = await sandboxed({ look: { argv: [node, "-e", look] } }).run({ command: "look", cwd: "." });
      expect(JSON.parse(result.stdout)).toEqual({ host: "ENOENT", outside: "ENOENT", shadow: "ENOENT", readme: "visible" });
      expect(existsSync(sandboxMark)).toBe(false);
    } finally {
      await rm(hostFile, { force: true });
    }
  });

  it("passes only the allowlisted environment", async () => {
    process.env["TOOLGATE_TEST_SANDBOX_SECRET"] = "sandbox-secret-7d2e";
    try {
      const result = await sandboxed({ env: { argv: [node, "-e", "console.log(JSON.stringify(process.env))"] } }).run({ command: "env" });
      // PWD is the sandbox's own, set for its working directory.
      expect(JSON.parse(result.stdout)).toEqual({ PATH: process.env["PATH"], PWD: root });
      expect(result.stdout).not.toContain("sandbox-secret-7d2e");
    } finally {
      delete process.env["TOOLGATE_TEST_SANDBOX_SECRET"];
    }
  });

  it("kills even a process that left the group with setsid, once the run ends", async () => {
    const token = `306.${process.pid}${Date.now() % 1000}`;
    const forker = await script("fork-setsid.sh", `setsid sleep ${token} >/dev/null 2>&1 &\necho started`);
    const result = await sandboxed({ fork: { argv: ["/bin/sh", forker] } }).run({ command: "fork" });
    expect(result).toMatchObject({ exitCode: 0, stdout: "started\n" });
    expect(await noneLeft(token)).toBe(true);
  });

  it("kills the whole sandbox at the deadline", async () => {
    const token = `307.${process.pid}${Date.now() % 1000}`;
    const forker = await script("fork-sandbox-timeout.sh", `setsid sleep ${token} >/dev/null 2>&1 &\nsleep ${token}`);
    const result = await sandboxed({ fork: { argv: ["/bin/sh", forker], timeoutMs: 3_000 } }).run({ command: "fork" });
    expect(result.timedOut).toBe(true);
    expect(await noneLeft(token)).toBe(true);
  });
});

describe.skipIf(!runSandboxTests)("verifier on the shared sandbox profile", { timeout: 90_000 }, () => {
  const sandboxed = (commands: CreateVerifierOptions["commands"], sandbox: Exclude<CreateVerifierOptions["sandbox"], "none" | undefined> = "bubblewrap") =>
    createVerifier({ root, commands, timeoutMs: 30_000, maxOutputBytes: 64 * 1024, sandbox });
  const MIB = 1024 * 1024;

  // A root host bounds the process count with a cgroup, which also tells that it was hit.
  it.skipIf(!sandboxCgroups())("a command that forks past `processes` is bounded, and the run rejects with limit_exceeded once they are gone", async () => {
    const token = `308.${process.pid}${Date.now() % 1000}`;
    const forker = await script("fork-many.sh", `i=0\nwhile [ $i -lt 40 ]; do sleep ${token} & i=$((i+1)); done\necho forked`);
    const verifier = sandboxed({ fork: { argv: ["/bin/sh", forker], sandbox: { limits: { processes: 16 } } } });
    const error = await caught(verifier.run({ command: "fork" }));
    expect(error.code).toBe<ToolErrorCode>("limit_exceeded");
    expect(error.details).toMatchObject({ command: "fork", limit: "processes", value: 16 });
    // The root was read-only and nothing was named: nothing outside changed.
    expect(error.boundary).toBe("effect_failed");
    expect(await processesWith(token)).toEqual([]);

    // The same command within its limit runs to its end.
    const within = await script("fork-few.sh", `i=0\nwhile [ $i -lt 4 ]; do sleep 0.1 & i=$((i+1)); done\nwait\necho forked`);
    const result = await sandboxed({ fork: { argv: ["/bin/sh", within], sandbox: { limits: { processes: 16 } } } }).run({ command: "fork" });
    expect(result).toMatchObject({ exitCode: 0, stdout: "forked\n" });
  });

  it("a command that burns CPU past `cpuSeconds` is stopped by the kernel, and the run rejects with limit_exceeded", async () => {
    const verifier = sandboxed({ spin: { argv: ["/bin/sh", "-c", "while :; do :; done"], sandbox: { limits: { cpuSeconds: 1 } }, timeoutMs: 60_000 } });
    const error = await caught(verifier.run({ command: "spin" }));
    expect(error.code).toBe<ToolErrorCode>("limit_exceeded");
    expect(error.details).toMatchObject({ command: "spin", limit: "cpuSeconds", value: 1 });
  });

  it("a write past `fileBytes` is stopped, and the run rejects with limit_exceeded; a command that may write leaves its effect unknown", async () => {
    const big = `exec head -c ${256 * 1024} /dev/zero > big.bin`;
    const verifier = sandboxed({
      tmp: { argv: ["/bin/sh", "-c", big.replace("big.bin", "/tmp/big.bin")], sandbox: { limits: { fileBytes: 64 * 1024 } } },
      tree: { argv: ["/bin/sh", "-c", big], sandbox: { write: true, limits: { fileBytes: 64 * 1024 } } },
      fits: { argv: ["/bin/sh", "-c", big.replace("big.bin", "/tmp/big.bin")] },
    });
    const error = await caught(verifier.run({ command: "tmp" }));
    expect(error.code).toBe<ToolErrorCode>("limit_exceeded");
    expect(error.details).toMatchObject({ command: "tmp", limit: "fileBytes", value: 64 * 1024 });
    expect(error.boundary).toBe("effect_failed");
    const written = await caught(verifier.run({ command: "tree" }));
    expect(written.details).toMatchObject({ limit: "fileBytes" });
    expect(written.boundary).toBe("effect_state_unknown");
    expect((await readFile(path.join(root, "big.bin"))).length).toBe(64 * 1024);
    await rm(path.join(root, "big.bin"));
    expect((await verifier.run({ command: "fits" })).exitCode).toBe(0);
  });

  it("/tmp holds no more than `tmpBytes`: a write past it fails with ENOSPC, as the command's exit shows", async () => {
    const fill = `try { require("fs").writeFileSync("/tmp/fill", Buffer.alloc(${2 * MIB})); console.log("wrote"); } catch (e) { console.log(e.code); process.exit(28); }`;
    const small = await sandboxed({ fill: { argv: [node, "-e", fill] } }, { kind: "bubblewrap", limits: { tmpBytes: MIB } }).run({ command: "fill" });
    expect(small).toMatchObject({ exitCode: 28, stdout: "ENOSPC\n" });
    const roomy = await sandboxed({ fill: { argv: [node, "-e", fill] } }, { kind: "bubblewrap", limits: { tmpBytes: 4 * MIB } }).run({ command: "fill" });
    expect(roomy).toMatchObject({ exitCode: 0, stdout: "wrote\n" });
  });

  it("the root and the system paths are read-only, the command's root writable only when it declares writes", async () => {
    const tryWrite = `const fs = require("fs"); const t = (f) => { try { f(); return "ok"; } catch (e) { return e.code; } }; console.log(JSON.stringify([t(() => fs.mkdirSync("/new-dir")), t(() => fs.writeFileSync("/usr/written", "x")), t(() => fs.writeFileSync("w.txt", "x"))]));`;
    const verifier = sandboxed({ ro: { argv: [node, "-e", tryWrite] }, rw: { argv: [node, "-e", tryWrite], sandbox: { write: true } } });
    expect(JSON.parse((await verifier.run({ command: "ro" })).stdout)).toEqual(["EROFS", "EROFS", "EROFS"]);
    expect(existsSync(path.join(root, "w.txt"))).toBe(false);
    expect(JSON.parse((await verifier.run({ command: "rw" })).stdout)).toEqual(["EROFS", "EROFS", "ok"]);
    expect(existsSync(path.join(root, "w.txt"))).toBe(true);
    expect(existsSync("/new-dir") || existsSync("/usr/written")).toBe(false);
    await rm(path.join(root, "w.txt"));
  });

  it("has no capabilities, no new privileges and a seccomp filter; a remount of the root does not make it writable", async () => {
    const status = await sandboxed({ status: { argv: ["/bin/cat", "/proc/self/status"] } }).run({ command: "status" });
    const field = (name: string) => new RegExp(`^${name}:\\s+(\\S+)`, "m").exec(status.stdout)?.[1];
    expect(field("CapEff")).toBe("0000000000000000");
    expect(field("CapPrm")).toBe("0000000000000000");
    expect(field("CapBnd")).toBe("0000000000000000");
    expect(field("NoNewPrivs")).toBe("1");
    expect(field("Seccomp")).toBe("2");
    const remount = `mount -o remount,rw,bind ${root} ${root} 2>/dev/null; mount -o remount,rw / 2>/dev/null; echo x > ${root}/remounted 2>/dev/null; echo $?`;
    const result = await sandboxed({ remount: { argv: ["/bin/sh", "-c", remount] } }).run({ command: "remount" });
    expect(result.stdout.trim()).not.toBe("0");
    expect(existsSync(path.join(root, "remounted"))).toBe(false);
  });

  it("a Unix socket inside the root is not connectable unless the sandbox names it", async () => {
    const { createServer } = await import("node:net");
    const socket = path.join(root, "svc.sock");
    let connections = 0;
    const server = createServer((s) => {
      connections++;
      s.end("hello");
    });
    await new Promise<void>((resolve) => server.listen(socket, resolve));
    const probe = `const s = require("net").connect(${JSON.stringify(socket)}); s.on("data", (d) => { console.log("got " + d); }); s.on("error", (e) => { console.log("failed " + e.code); process.exitCode = 7; });`;
    try {
      const refused = await sandboxed({ probe: { argv: [node, "-e", probe] } }).run({ command: "probe" });
      expect(refused.stdout).toMatch(/^failed E[A-Z]+/);
      expect(refused.exitCode).toBe(7);
      expect(connections).toBe(0);
      const named = sandboxed({ probe: { argv: [node, "-e", probe] } }, { kind: "bubblewrap", unixSockets: [socket] });
      expect(named.isolation.network).toBe(`none; unix sockets ${socket}`);
      expect((await named.run({ command: "probe" })).stdout.trim()).toBe("got hello");
      expect(connections).toBe(1);
    } finally {
      await new Promise((resolve) => server.close(resolve));
      await rm(socket, { force: true });
    }
  });

  it("the gate's protected state under the root is hidden", async () => {
    await mkdir(path.join(root, "gate-state"), { recursive: true });
    await writeFile(path.join(root, "gate-state", "vault.key"), "vault-secret-31");
    await writeFile(path.join(root, "audit.key"), "audit-secret-32");
    protectPath(path.join(root, "gate-state"));
    protectPath(path.join(root, "audit.key"));
    const look = `const fs = require("fs"); const seen = (p) => { try { return fs.readFileSync(p, "utf8"); } catch (e) { return e.code; } }; console.log(JSON.stringify([seen("gate-state/vault.key"), seen("audit.key"), seen("README")]));`;
    for (const write of [false, true]) {
      const result = await sandboxed({ look: { argv: [node, "-e", look], sandbox: { write } } }).run({ command: "look" });
      expect(result.stdout, String(write)).not.toMatch(/secret-3[12]/);
      expect(JSON.parse(result.stdout)[2]).toBe("inside");
    }
  });

  it("refuses bad limits and sockets when it is made", () => {
    const good = { test: recorder() };
    const socketless = path.join(root, "README");
    const bad: CreateVerifierOptions[] = [
      { root, commands: good, sandbox: { kind: "bubblewrap", limits: { processes: 1 } } },
      { root, commands: good, sandbox: { kind: "bubblewrap", limits: { cpuSeconds: 1.5 } } },
      { root, commands: good, sandbox: { kind: "bubblewrap", limits: { threads: 4 } as never } },
      { root, commands: good, sandbox: { kind: "bubblewrap", limits: { outputBytes: 4096 } } },
      { root, commands: { test: { argv: [node], sandbox: { limits: { memoryBytes: -1 } } } }, sandbox: "bubblewrap" },
      { root, commands: { test: { argv: [node], sandbox: { limits: { outputBytes: 4096 } } } }, sandbox: "bubblewrap" },
      // A typo is an error without a sandbox too.
      { root, commands: { test: { argv: [node], sandbox: { limits: { proceses: 4 } as never } } } },
      { root, commands: good, sandbox: { kind: "bubblewrap", unixSockets: ["relative.sock"] } },
      { root, commands: good, sandbox: { kind: "bubblewrap", unixSockets: [path.join(root, "no-such.sock")] } },
      { root, commands: good, sandbox: { kind: "bubblewrap", unixSockets: [socketless] } },
      { root, commands: good, sandbox: { kind: "bubblewrap", readOnlyPaths: ["usr"] } },
      { root, commands: good, sandbox: { kind: "bubblewrap", bwrapPath: "bwrap" } },
    ];
    for (const options of bad) {
      expect(() => createVerifier(options), JSON.stringify(options.sandbox ?? options.commands)).toThrowError(
        expect.objectContaining({ code: "config_invalid" }) as Error,
      );
    }
  });

  it("says what it enforces, computed from the sandbox as built", () => {
    const none = createVerifier({ root, commands: { test: recorder() } });
    expect(none.isolation).toMatchObject({ network: "unrestricted", filesystem: "host", subprocess: "verifier" });
    expect(none.isolation.notes).toContain("no sandbox");
    expect(none.sandboxFacts("test")).toBeUndefined();

    const verifier = sandboxed(
      { ro: recorder(), rw: { argv: [node], sandbox: { write: true } }, tight: { argv: [node], sandbox: { limits: { cpuSeconds: 5 } } } },
      { kind: "bubblewrap", limits: { processes: 32 } },
    );
    expect(verifier.isolation.network).toBe("none");
    expect(verifier.isolation.filesystem).toBe(`read-only: system paths, ${root}; writable: ${root} for rw`);
    expect(verifier.isolation.notes).toMatch(/bubblewrap: .*no capabilities/);
    expect(verifier.isolation.notes).toContain("CPU 600 s");
    // The output limit is the verifier's maxOutputBytes.
    expect(verifier.isolation.notes).toContain("output 65536 bytes");
    expect(verifier.isolation.notes).toContain("tight: limits");
    expect(verifier.isolation.notes).toContain("CPU 5 s");
    expect(verifier.sandboxFacts("rw")?.writable).toEqual([root]);
    expect(verifier.sandboxFacts("ro")).toMatchObject({ kind: "bubblewrap", network: "none", writable: [] });
    expect(verifier.sandboxFacts("ro")?.limits).toMatchObject({ processes: 32, outputBytes: 64 * 1024 });
    expect(verifier.sandboxFacts("tight")?.limits).toMatchObject({ processes: 32, cpuSeconds: 5 });
    expect(verifier.sandboxFacts("nope")).toBeUndefined();
  });
});
