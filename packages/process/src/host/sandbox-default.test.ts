import { mkdtempSync, readlinkSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { findOrUndefined, gateOver, logCollector, marker, NODE, PROBE_TOOL, PYTHON_TOOL, realPython, toolRunner } from "../fixtures/helpers.js";
import type { ProcessLogEvent, StartToolProcessOptions, ToolProcessHandle } from "./options.js";
import { resolveSandbox } from "./spawn.js";
import { startToolProcess, UNSANDBOXED_WARNING } from "./start-tool-process.js";

// A tool process started without a `sandbox` option runs inside bubblewrap where `bwrap` is on
// PATH; where it is not, it runs unsandboxed, and both a start-up warning and its inventory say so.
// Each case is proved with the probe tool from inside: which network namespace it is in, and
// whether it can write a file.

const handles: ToolProcessHandle[] = [];
const cleanups: (() => void)[] = [];
afterEach(async () => {
  await Promise.all(handles.splice(0).map((h) => h.stop()));
  for (const cleanup of cleanups.splice(0)) cleanup();
});

function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

async function probe(options: Partial<StartToolProcessOptions> = {}, writeIn = tempDir("toolgate-sandbox-default-")) {
  const handle = await startToolProcess({ name: "probe", command: NODE, args: [PROBE_TOOL, marker()], ...options });
  handles.push(handle);
  const run = toolRunner(handle);
  const file = join(writeIn, "written.txt");
  return {
    isolation: handle.family.tools[0]!.runtimeIsolation,
    ownNetwork: ((await run("network", {})) as { namespace: string }).namespace !== readlinkSync("/proc/self/ns/net"),
    write: (await run("write", { path: file })) as { ok: boolean; code?: string },
  };
}

/** Run `start` with PATH pointing at an empty directory: no bwrap to be found. */
async function withoutBwrap<T>(start: () => Promise<T>): Promise<T> {
  const saved = process.env["PATH"];
  process.env["PATH"] = tempDir("toolgate-empty-path-");
  try {
    return await start();
  } finally {
    process.env["PATH"] = saved;
  }
}

describe("resolveSandbox decides auto on the PATH it is given", () => {
  it("auto (or no option) is bubblewrap when bwrap is found, and no sandbox with a warning when it is not", () => {
    const withBwrap = process.env["PATH"];
    const empty = tempDir("toolgate-empty-path-");
    expect(resolveSandbox(undefined, withBwrap)).toMatchObject({ option: "bubblewrap", kind: "bubblewrap", automatic: true, warning: undefined });
    expect(resolveSandbox("auto", withBwrap)).toMatchObject({ option: "bubblewrap", kind: "bubblewrap", automatic: true });
    expect(resolveSandbox(undefined, empty)).toMatchObject({
      option: undefined,
      kind: "none",
      automatic: true,
      warning: expect.stringMatching(/^sandbox "auto": bwrap/),
    });
    expect(resolveSandbox("none", withBwrap)).toEqual({ option: undefined, kind: "none", automatic: false, warning: undefined });
    expect(resolveSandbox("firejail", empty)).toMatchObject({ option: "firejail", kind: "firejail", automatic: false, warning: undefined });
  });
});

describe.skipIf(findOrUndefined("bwrap") === undefined && !process.env["CI"])("no sandbox option: bubblewrap where it is installed", () => {
  it("the tool runs in its own network namespace on a read-only host, and the inventory says so; no warning", async () => {
    const logs = logCollector();
    const seen = await probe({ onLog: logs.onLog });
    expect(seen).toEqual({
      isolation: {
        network: "none",
        filesystem: "read-only host",
        secrets: "none",
        subprocess: "process",
        notes: `tool process ${JSON.stringify(NODE)} inside bubblewrap (sandbox "auto"); environment allowlisted`,
      },
      ownNetwork: true,
      write: { ok: false, code: "EROFS" },
    });
    expect(logs.events.filter((e: ProcessLogEvent) => /sandbox/.test(e.message))).toEqual([]);
  });

  it("the Python example runs under it unchanged", async () => {
    const handle = await startToolProcess({
      name: "textstats",
      command: realPython(),
      args: [PYTHON_TOOL],
      expectedScopes: { word_count: "text:read", convert_length: "units:convert", slow_count: "text:read" },
      tools: { word_count: { effect: "read", risk: "low" } },
      onLog: () => undefined,
    });
    handles.push(handle);
    expect(handle.family.tools[0]!.runtimeIsolation.notes).toMatch(/inside bubblewrap \(sandbox "auto"\)/);
    const { gate, call } = gateOver(handle);
    expect(await gate.invoke("textstats.word_count", { text: "one two" }, call)).toMatchObject({ status: "ok", output: { output: { words: 2 } } });
  });
});

describe.skipIf(findOrUndefined("bwrap") === undefined && !process.env["CI"])("wrapper arguments that undo the sandbox are not hidden by the inventory", () => {
  it("bubblewrap with --share-net says network unrestricted (and it is); with a --bind, writable binds (and they are)", async () => {
    const shared = await probe({ sandbox: { kind: "bubblewrap", args: ["--share-net"] }, onLog: () => undefined });
    expect(shared).toMatchObject({ isolation: { network: "unrestricted", filesystem: "read-only host" }, ownNetwork: false, write: { ok: false } });
    const dir = tempDir("toolgate-sandbox-bind-");
    const bound = await probe({ sandbox: { kind: "bubblewrap", args: ["--bind", dir, dir] }, onLog: () => undefined }, dir);
    expect(bound).toMatchObject({ isolation: { network: "none", filesystem: "read-only host, writable binds" }, ownNetwork: true, write: { ok: true } });
  });
});

describe("no sandbox option, no bwrap on PATH: unsandboxed, and said so", () => {
  it("a warning through onLog, and an inventory that claims nothing the process does not have", async () => {
    const logs = logCollector();
    const seen = await withoutBwrap(() => probe({ onLog: logs.onLog }));
    expect(seen).toEqual({
      isolation: {
        network: "unrestricted",
        filesystem: "host",
        secrets: "none",
        subprocess: "process",
        notes: `tool process ${JSON.stringify(NODE)}, no sandbox (sandbox "auto" found no bwrap on PATH); environment allowlisted`,
      },
      // What the inventory says is what happened: the host's network namespace, a writable host.
      ownNetwork: false,
      write: { ok: true },
    });
    expect(logs.events.filter((e) => e.level === "warn" && e.message.startsWith('sandbox "auto"'))).toEqual([
      {
        level: "warn",
        process: "probe",
        message:
          'sandbox "auto": bwrap (bubblewrap) was not found on PATH, so this tool process runs unsandboxed, with your user\'s network and files; install bubblewrap, or set sandbox: "none" to make that choice explicit',
      },
    ]);
  });

  it(`without onLog, a process warning with code ${UNSANDBOXED_WARNING}`, async () => {
    const warnings: Error[] = [];
    const listen = (w: Error) => warnings.push(w);
    process.on("warning", listen);
    try {
      await withoutBwrap(() => probe({ expectedScopes: { network: "probe:network", write: "probe:write" } }));
      // Warnings are emitted on the next tick.
      await new Promise((r) => setImmediate(r));
    } finally {
      process.off("warning", listen);
    }
    expect(warnings.filter((w) => (w as Error & { code?: string }).code === UNSANDBOXED_WARNING).map((w) => w.message)).toEqual([
      expect.stringMatching(/^tool process probe: sandbox "auto": bwrap \(bubblewrap\) was not found on PATH/),
    ]);
  });

  it('sandbox: "none" is the operator\'s explicit choice: no warning, and the inventory names it', async () => {
    const logs = logCollector();
    const seen = await probe({ sandbox: "none", onLog: logs.onLog });
    expect(seen.isolation).toMatchObject({
      network: "unrestricted",
      filesystem: "host",
      notes: `tool process ${JSON.stringify(NODE)}, no sandbox (sandbox "none", chosen by the operator); environment allowlisted`,
    });
    expect(seen.ownNetwork).toBe(false);
    expect(logs.events.filter((e) => /sandbox/.test(e.message))).toEqual([]);
  });
});
