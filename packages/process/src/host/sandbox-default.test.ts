import { mkdtempSync, readlinkSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { ToolError } from "@toolgate/core";
import { afterEach, describe, expect, it } from "vitest";
import {
  findOrUndefined,
  gateOver,
  logCollector,
  marker,
  NODE,
  PROBE_READ_ONLY,
  PROBE_TOOL,
  PYTHON_TOOL,
  realPython,
  shownPath,
  toolRunner,
} from "../fixtures/helpers.js";
import type { ProcessLogEvent, StartToolProcessOptions, ToolProcessHandle } from "./options.js";
import { FIREJAIL_REMOVED, resolveSandbox } from "./spawn.js";
import { startToolProcess, UNSANDBOXED_WARNING } from "./start-tool-process.js";

// A tool process started without a `sandbox` option runs inside bubblewrap where `bwrap` is on
// PATH; where it is not, it runs unsandboxed, and both a start-up warning and its inventory say so.
// Each case is proved with the probe tool from inside: which network namespace it is in, and
// whether it can write a file.

/** The inventory's notes for the probe under bubblewrap: the profile's guards and limits, as built. */
const BUBBLEWRAP_NOTES = new RegExp(
  `^tool process ${JSON.stringify(NODE).replace(/[.*+?^${}()|[\]\\]/g, "\\$&")} \\(sandbox "auto"; environment allowlisted\\); bubblewrap: (own user namespace|no user namespace \\(the kernel refused one\\)), no capabilities, seccomp filter; limits: private memory 2048 MiB per process, `,
);

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
  const handle = await startToolProcess({
    name: "probe",
    command: NODE,
    args: [PROBE_TOOL, marker()],
    ...options,
    // What the probe needs besides its own files, where a sandbox may apply (elsewhere, naming them only draws a warning).
    ...(options.sandbox === "none" ? {} : { readOnlyPaths: [...PROBE_READ_ONLY, ...(options.readOnlyPaths ?? [])] }),
  });
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
    expect(() => resolveSandbox("firejail" as never, withBwrap)).toThrow(new ToolError("config_invalid", FIREJAIL_REMOVED));
  });
});

describe.skipIf(findOrUndefined("bwrap") === undefined && !process.env["CI"])("no sandbox option: bubblewrap where it is installed", () => {
  it("the tool runs in its own network namespace, seeing only its binds, and the inventory says so; no warning", async () => {
    const logs = logCollector();
    const seen = await probe({ onLog: logs.onLog });
    expect(seen).toEqual({
      isolation: {
        network: "none",
        filesystem: `read-only: system paths, ${[process.cwd(), ...PROBE_READ_ONLY.filter((p) => !p.startsWith(`${process.cwd()}/`))].map(shownPath).join(", ")}`,
        secrets: "none",
        subprocess: "process",
        notes: expect.stringMatching(BUBBLEWRAP_NOTES),
      },
      ownNetwork: true,
      // The directory it writes to is the host's, not bound: not there at all.
      write: { ok: false, code: "ENOENT" },
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
    // Its interpreter's install and its script's directory are what it reads besides the system.
    expect(handle.family.tools[0]!.runtimeIsolation).toMatchObject({
      network: "none",
      filesystem: expect.stringContaining(dirname(PYTHON_TOOL)),
      notes: expect.stringMatching(/ \(sandbox "auto"; environment allowlisted\); bubblewrap: /),
    });
    const { gate, call } = gateOver(handle);
    expect(await gate.invoke("textstats.word_count", { text: "one two" }, call)).toMatchObject({ status: "ok", output: { output: { words: 2 } } });
  });
});

describe.skipIf(findOrUndefined("bwrap") === undefined && !process.env["CI"])("what the operator opens is what the inventory says", () => {
  it("network: true says network unrestricted (and it is); writablePaths names them writable (and they are)", async () => {
    const shared = await probe({ sandbox: "bubblewrap", network: true, onLog: () => undefined });
    expect(shared).toMatchObject({ isolation: { network: "unrestricted" }, ownNetwork: false, write: { ok: false } });
    const dir = tempDir("toolgate-sandbox-bind-");
    const bound = await probe({ sandbox: "bubblewrap", writablePaths: [dir], onLog: () => undefined }, dir);
    expect(bound).toMatchObject({
      isolation: { network: "none", filesystem: expect.stringMatching(new RegExp(`; writable: ${dir}$`)) },
      ownNetwork: true,
      write: { ok: true },
    });
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
        notes: `tool process ${JSON.stringify(NODE)} (environment allowlisted); no sandbox (sandbox "auto" found no bwrap on PATH)`,
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
      notes: `tool process ${JSON.stringify(NODE)} (environment allowlisted); no sandbox (sandbox "none", chosen by the operator)`,
    });
    expect(seen.ownNetwork).toBe(false);
    expect(logs.events.filter((e) => /sandbox/.test(e.message))).toEqual([]);
  });
});
