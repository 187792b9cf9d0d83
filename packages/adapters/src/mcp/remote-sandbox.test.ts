// An imported stdio MCP server in the shared sandbox profile, tried from inside as a hostile server
// would: real bwrap, a real server process, the gate in front.
import { copyFileSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createGate, createMemoryJournal, createToolRegistry, defineProfile, type InvokeResult } from "@toolgate/core";
import { bwrapOnPath, sandboxCgroups } from "@toolgate/core/boundary";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { importMcpServer, type ImportMcpServerOptions } from "./import.js";
import type { McpSandboxOption } from "./remote-sandbox.js";

// In CI these tests must run (and fail if bwrap is missing); elsewhere they are skipped without it.
const runSandboxTests = bwrapOnPath() !== undefined || process.env["CI"] !== undefined;
const fixture = fileURLToPath(new URL("../fixtures/sandbox-probe-mcp-server.mjs", import.meta.url));
const profile = defineProfile({ name: "probe", allow: ["probe:call"], maxRisk: "high" });
const described = { requiredAllowlist: ["probe:call"], effect: "read", risk: "low", approval: "never", timeoutMs: 30_000 } as const;
const MIB = 1024 * 1024;

let base: string;
let serverDir: string; // the server's own directory (its script), its working directory
let vault: string; // a secret file of the host's, outside anything the server is given
let socketsDir: string;
let socket: string; // a host service's Unix socket
let service: Server;

beforeAll(async () => {
  base = realpathSync(mkdtempSync(path.join(tmpdir(), "toolgate-mcp-sandbox-")));
  serverDir = path.join(base, "server");
  mkdirSync(serverDir);
  copyFileSync(fixture, path.join(serverDir, "server.mjs"));
  mkdirSync(path.join(base, "vault"));
  vault = path.join(base, "vault", "vault.key");
  writeFileSync(vault, "VAULT-KEY-0123456789");
  socketsDir = path.join(base, "sockets");
  mkdirSync(socketsDir);
  socket = path.join(socketsDir, "host.sock");
  service = createServer((s) => {
    s.on("error", () => undefined); // the server may hang up first
    s.end("hello from the host\n");
  });
  await new Promise<void>((resolve) => service.listen(socket, resolve));
});

afterAll(async () => {
  await new Promise((resolve) => service.close(resolve));
  rmSync(base, { recursive: true, force: true });
});

interface Probe {
  readonly imported: Awaited<ReturnType<typeof importMcpServer>>;
  call(input: Record<string, unknown>): Promise<InvokeResult>;
  /** The call's answer, parsed (the call must succeed). */
  ask(input: Record<string, unknown>): Promise<Record<string, unknown>>;
  close(): Promise<void>;
}

async function importProbe(sandbox: McpSandboxOption, options: Partial<ImportMcpServerOptions> = {}): Promise<Probe> {
  const imported = await importMcpServer({
    name: "probe",
    command: process.execPath,
    args: [path.join(serverDir, "server.mjs")],
    cwd: serverDir,
    tools: { probe: described },
    sandbox,
    ...options,
  });
  const gate = createGate({ registry: createToolRegistry({ families: [imported.family] }), journal: createMemoryJournal() });
  const call = (input: Record<string, unknown>) => gate.invoke("probe.probe", input, { principal: "agent", tenant: "tests", profile });
  return {
    imported,
    call,
    async ask(input) {
      const result = await call(input);
      expect(result).toMatchObject({ status: "ok" });
      return JSON.parse((result as { output: { content: { text: string }[] } }).output.content[0]!.text) as Record<string, unknown>;
    },
    close: () => imported.close(),
  };
}

async function withProbe(sandbox: McpSandboxOption, body: (p: Probe) => Promise<void>, options: Partial<ImportMcpServerOptions> = {}): Promise<void> {
  const p = await importProbe(sandbox, options);
  try {
    await body(p);
  } finally {
    await p.close();
  }
}

describe.runIf(runSandboxTests)("an imported stdio server in the shared sandbox profile", () => {
  it("cannot read a vault file of the host's outside its binds (and can without a sandbox)", async () => {
    await withProbe("bubblewrap", async (p) => {
      expect(await p.ask({ action: "read", path: vault })).toEqual({ error: "ENOENT" });
      // Nothing of the repository either: only its own directory, not the tree around it.
      expect(await p.ask({ action: "read", path: fileURLToPath(new URL("../../package.json", import.meta.url)) })).toEqual({ error: "ENOENT" });
      expect(await p.ask({ action: "read", path: path.join(serverDir, "server.mjs") })).toMatchObject({ content: expect.stringContaining("probe") });
    });
    await withProbe("none", async (p) => {
      expect(await p.ask({ action: "read", path: vault })).toEqual({ content: "VAULT-KEY-0123456789" });
    });
  });

  it("cannot reach a host Unix socket, even one it can see; one it names it reaches, and the inventory says so", async () => {
    await withProbe({ kind: "bubblewrap", readOnlyPaths: [socketsDir] }, async (p) => {
      // The socket is in view (its directory is bound), but the seccomp filter refuses Unix sockets.
      expect(await p.ask({ action: "unix", path: socket })).toEqual({ connected: false, error: "EAFNOSUPPORT" });
      expect(p.imported.isolation?.network).toBe("none");
    });
    await withProbe({ kind: "bubblewrap", unixSockets: [socket] }, async (p) => {
      expect(await p.ask({ action: "unix", path: socket })).toEqual({ connected: true });
      expect(p.imported.isolation?.network).toBe(`none; unix sockets ${socket}`);
    });
    await withProbe("none", async (p) => {
      expect(await p.ask({ action: "unix", path: socket })).toEqual({ connected: true });
    });
  });

  it("runs with no capabilities, under the seccomp filter (mode 2), no new privileges, in its own pid namespace", async () => {
    await withProbe("bubblewrap", async (p) => {
      const status = await p.ask({ action: "status" });
      expect(status).toMatchObject({ capEff: "0000000000000000", seccomp: "2", noNewPrivs: "1" });
      expect(status["pid"]).toBeLessThan(8);
      expect(p.imported.isolation?.notes).toMatch(/bubblewrap: .*no capabilities, seccomp filter; limits: /);
    });
  });

  it("a server's script outside its working directory is bound for it (its program's own files)", async () => {
    const elsewhere = path.join(base, "elsewhere");
    mkdirSync(elsewhere, { recursive: true });
    await withProbe(
      "bubblewrap",
      async (p) => {
        expect(await p.ask({ action: "ok" })).toEqual({ ok: true });
        expect(p.imported.isolation?.filesystem).toBe(`read-only: system paths, ${elsewhere}, ${serverDir}`);
      },
      { cwd: elsewhere },
    );
  });

  it("a busy loop past cpuSeconds is ended: the call fails, its effect unknown, and the next call starts the server again", async () => {
    await withProbe({ kind: "bubblewrap", limits: { cpuSeconds: 1 } }, async (p) => {
      expect(p.imported.isolation?.notes).toContain("CPU 1 s");
      const started = Date.now();
      // Without the limit the loop would run until the call's timeout (30 s).
      expect(await p.call({ action: "spin" })).toMatchObject({ status: "error", boundary: "effect_state_unknown" });
      expect(Date.now() - started).toBeLessThan(15_000);
      expect(await p.ask({ action: "ok" })).toEqual({ ok: true });
    });
  });

  // The soft CPU limit sends SIGXCPU a second before the hard one kills: the exit names the limit.
  it("a busy loop past cpuSeconds ends the call with limit_exceeded naming cpuSeconds", async () => {
    await withProbe({ kind: "bubblewrap", limits: { cpuSeconds: 1 } }, async (p) => {
      expect(await p.call({ action: "spin" })).toMatchObject({
        status: "error",
        code: "limit_exceeded",
        boundary: "effect_state_unknown",
        details: { limit: "cpuSeconds", value: 1 },
      });
    });
  });

  it("a message over outputBytes ends the call with limit_exceeded; under it passes", async () => {
    await withProbe({ kind: "bubblewrap", limits: { outputBytes: 4096 } }, async (p) => {
      expect(await p.call({ action: "text", n: 1000 })).toMatchObject({ status: "ok" });
      expect(await p.call({ action: "text", n: 10_000 })).toMatchObject({
        status: "error",
        code: "limit_exceeded",
        boundary: "effect_state_unknown",
        details: { limit: "outputBytes", value: 4096 },
      });
    });
  });

  it.runIf(sandboxCgroups())("a fork bomb is stopped at processes and the call ends with limit_exceeded", async () => {
    await withProbe({ kind: "bubblewrap", limits: { processes: 32 } }, async (p) => {
      expect(await p.call({ action: "fork", n: 200 })).toMatchObject({
        status: "error",
        code: "limit_exceeded",
        boundary: "effect_state_unknown",
        details: { limit: "processes", value: 32 },
      });
    });
  });

  it.runIf(sandboxCgroups())("a tree over memoryBytes is stopped and the call ends with limit_exceeded", async () => {
    await withProbe({ kind: "bubblewrap", limits: { memoryBytes: 128 * MIB, tmpBytes: 64 * 1024 } }, async (p) => {
      expect(await p.call({ action: "memory", n: 3 })).toMatchObject({
        status: "error",
        code: "limit_exceeded",
        boundary: "effect_state_unknown",
        details: { limit: "memoryBytes", value: 128 * MIB },
      });
    });
  });

  it("a server that dies by itself is not a limit hit", async () => {
    await withProbe({ kind: "bubblewrap", limits: { cpuSeconds: 5 } }, async (p) => {
      expect(await p.call({ action: "exit" })).toMatchObject({ status: "error", code: "provider_unavailable", boundary: "effect_state_unknown" });
    });
  });

  it("refuses bad settings at import: limits, sockets, bwrapPath, a server at the root of the host", async () => {
    const refused = (sandbox: McpSandboxOption, options: Partial<ImportMcpServerOptions> = {}) =>
      expect(importProbe(sandbox, options)).rejects.toMatchObject({ code: "config_invalid" });
    await refused({ kind: "bubblewrap", limits: { memoryBytes: 1 } });
    await refused({ kind: "auto", limits: { wallSeconds: 5 } as never });
    await refused({ kind: "bubblewrap", unixSockets: [path.join(socketsDir, "missing.sock")] });
    await refused({ kind: "bubblewrap", unixSockets: [vault] });
    await refused({ kind: "auto", bwrapPath: "bwrap" });
    // Refused by the import itself, with what to do (the profile would refuse binding "/" too, less helpfully).
    await expect(importProbe("bubblewrap", { cwd: "/" })).rejects.toMatchObject({
      code: "config_invalid",
      message: expect.stringContaining("set cwd to the server's own directory"),
    });
  });
});
