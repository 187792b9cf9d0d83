import { createSocket } from "node:dgram";
import { existsSync, mkdtempSync, readlinkSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { networkInterfaces, tmpdir } from "node:os";
import { join } from "node:path";
import { ToolError } from "@toolgate/core";
import { protectPath } from "@toolgate/core/boundary";
import { afterEach, describe, expect, it } from "vitest";
import { eventually, findOrUndefined, marker, NODE, PROBE_TOOL, toolRunner, waitNoneWith } from "../fixtures/helpers.js";
import type { ToolProcessHandle } from "./options.js";
import type { SandboxOption } from "./spawn.js";
import { startToolProcess } from "./start-tool-process.js";

// Each sandbox is proved with a real tool process the host starts inside it, and every probe runs
// twice: without the sandbox it must get through (so a wrapper that silently did nothing would
// fail), inside it must not. Under CI (`CI` set, as `.ci/run` does) a missing wrapper fails these
// tests; elsewhere they are skipped, and the suite's title says why.
const UNDER_CI = !["", "0", "false"].includes(process.env["CI"] ?? "");

const SANDBOXES = [
  // bubblewrap: a fresh network namespace and a read-only view of the host (no writable workspace).
  { kind: "bubblewrap", program: "bwrap", debianPackage: "bubblewrap", filesystem: "read-only host" },
  // firejail: a fresh network namespace, no profile: the host's filesystem stays writable, and its manifests say so.
  { kind: "firejail", program: "firejail", debianPackage: "firejail", filesystem: "host" },
] as const;

type Probe = { ok: true; addresses?: string[] } | { ok: false; code: string };

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

/** The probe tool process, started by the host (inside `sandbox`, when given), and a way to call its tools through the gate. */
async function startProbe(sandbox: SandboxOption | undefined, cwd?: string) {
  const handle = await startToolProcess({
    name: "probe",
    command: NODE,
    args: [PROBE_TOOL],
    // Without one, the probe runs unsandboxed by explicit choice (the default would be bubblewrap).
    sandbox: sandbox ?? "none",
    ...(cwd ? { cwd } : {}),
    onLog: () => undefined,
  });
  handles.push(handle);
  const run = toolRunner(handle);
  return { handle, run };
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

async function writeProbe(sandbox: SandboxOption | undefined, workspace: string, targets: Record<string, string>) {
  const { handle, run } = await startProbe(sandbox, workspace);
  const seen: Record<string, { probe: Probe; onHost: boolean }> = {};
  for (const [where, path] of Object.entries(targets)) {
    const probe = (await run("write", { path })) as Probe;
    seen[where] = { probe, onHost: existsSync(path) };
    rmSync(path, { force: true });
  }
  return { seen, isolation: handle.family.tools[0]!.runtimeIsolation };
}

describe("a sandbox whose wrapper is not installed refuses to start, with a typed error naming it", () => {
  it.each(SANDBOXES)("$kind without $program on PATH: config_invalid, and nothing runs unsandboxed", async ({ kind, program }) => {
    const tag = marker();
    const savedPath = process.env["PATH"];
    process.env["PATH"] = tempDir("toolgate-empty-path-");
    let outcome: unknown;
    try {
      // The command itself is an absolute path: were the wrapper skipped, it would start.
      const handle = await startToolProcess({ name: "fx", command: NODE, args: [PROBE_TOOL, tag], sandbox: kind, onLog: () => undefined });
      handles.push(handle);
      outcome = handle;
    } catch (error) {
      outcome = error;
    } finally {
      process.env["PATH"] = savedPath;
    }
    expect(outcome).toBeInstanceOf(ToolError);
    expect(outcome).toMatchObject({ code: "config_invalid", message: `sandbox ${kind} needs ${program}, which was not found on PATH` });
    expect(await waitNoneWith(tag, 200)).toEqual([]);
  });
});

for (const box of SANDBOXES) {
  const installed = findOrUndefined(box.program) !== undefined;
  const reason =
    installed || UNDER_CI ? "" : ` (skipped: ${box.program} is not on PATH; install ${box.debianPackage} to run these, and under CI they fail instead)`;

  describe.skipIf(!installed && !UNDER_CI)(`sandbox: ${box.kind}${reason}`, () => {
    it(`${box.program} is on PATH (CI installs ${box.debianPackage})`, () => {
      expect(
        findOrUndefined(box.program),
        `${box.program} was not found on PATH: the ${box.kind} sandbox cannot be tested; install the ${box.debianPackage} package`,
      ).toBeDefined();
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
      const inside = await networkProbe(box.kind, host);
      const blocked = { ok: false, code: expect.stringMatching(/^E[A-Z]+$/) };
      expect({ ...inside, namespace: inside.namespace === hostNamespace ? "the host's" : "its own", reached: host.reached() }).toEqual({
        namespace: "its own",
        interfaces: ["lo"],
        tcp: everyListener(blocked),
        dns: blocked,
        reached: reachedOutside,
      });
    });

    it("no Unix socket of the host's (a database's, an agent's, a container daemon's) is reached, which the tool reaches without the sandbox", async () => {
      const dir = tempDir("toolgate-probe-unix-");
      const path = join(dir, "service.sock");
      let heard = 0;
      const server = createServer((socket) => {
        heard++;
        socket.destroy();
      });
      await new Promise<void>((resolve) => server.listen(path, resolve));
      cleanups.push(() => new Promise((resolve) => server.close(resolve)));
      const probe = async (sandbox: SandboxOption | undefined) => (await startProbe(sandbox)).run("unix", { path });
      expect(await probe(undefined)).toEqual({ ok: true });
      expect(
        await eventually(
          () => heard,
          (n) => n === 1,
        ),
      ).toBe(1); // the server hears it a moment after the tool connects
      expect(await probe(box.kind)).toEqual({ ok: false, code: expect.stringMatching(/^E[A-Z]+$/) });
      expect(heard).toBe(1);
    });

    it("the gate's own state (protected paths) is out of the tool's reach, which it reads without the sandbox", async () => {
      const state = tempDir("toolgate-probe-state-");
      const key = join(state, "audit.key");
      writeFileSync(key, "protected-audit-key\n");
      protectPath(state);
      const read = async (sandbox: SandboxOption | undefined) => {
        const { run } = await startProbe(sandbox);
        return (await run("read", { path: key })) as { ok: boolean; text?: string; code?: string };
      };
      expect(await read(undefined)).toEqual({ ok: true, text: "protected-audit-key\n" });
      const inside = await read(box.kind);
      expect(inside.ok).toBe(false);
      expect(JSON.stringify(inside)).not.toContain("protected-audit-key");
    });

    it("state protected after the tool process started is masked from the process the host starts again after a crash", async () => {
      const state = tempDir("toolgate-probe-late-state-");
      const key = join(state, "audit.key");
      writeFileSync(key, "late-protected-audit-key\n");
      const { handle, run } = await startProbe(box.kind);
      protectPath(state); // a journal opened after the tool processes were started
      const pid = handle.status().pid!;
      process.kill(-pid, "SIGKILL");
      await eventually(
        () => handle.status(),
        (s) => s.restarts === 1 && s.state === "ready" && s.pid !== pid,
      );
      const inside = (await run("read", { path: key })) as { ok: boolean };
      expect(inside.ok).toBe(false);
      expect(JSON.stringify(inside)).not.toContain("late-protected-audit-key");
    });

    it(`filesystem "${box.filesystem}", as its manifests say: what the tool may write on the host, against the same writes without the sandbox`, async () => {
      const { workspace, targets } = writeTargets();

      const ok = { probe: { ok: true }, onHost: true };
      expect((await writeProbe(undefined, workspace, targets)).seen).toEqual({ workspace: ok, outside: ok, tmp: ok });

      const inside = await writeProbe(box.kind, workspace, targets);
      expect(inside.isolation).toMatchObject({ network: "none", filesystem: box.filesystem });
      if (box.filesystem === "read-only host") {
        // No writable workspace is granted: the workspace is as read-only as the rest of the host.
        const refused = { probe: { ok: false, code: "EROFS" }, onHost: false };
        expect(inside.seen).toEqual({ workspace: refused, outside: refused, tmp: refused });
      } else {
        expect(inside.seen).toEqual({ workspace: ok, outside: ok, tmp: ok });
      }
    });
  });
}
