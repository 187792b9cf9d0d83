/**
 * What the inventory says a sandboxed (or unsandboxed) program may cross: computed from the
 * sandbox as it was built, never from what a manifest hoped.
 */
import { homedir } from "node:os";
import path from "node:path";
import type { RuntimeIsolation } from "../../manifest.js";
import type { SandboxLimits } from "./limits.js";
import { DEFAULT_SANDBOX_READ_ONLY_PATHS, type SandboxFacts } from "./profile.js";

const MIB = 1024 * 1024;

const size = (bytes: number) => (bytes % MIB === 0 ? `${bytes / MIB} MiB` : `${bytes} bytes`);

/**
 * A bound path as the inventory shows it: under the host's working directory relative to it (`.`,
 * `./x`), under the home directory as `~/x`, otherwise as it is. The same composition, cloned
 * elsewhere and run from its directory, describes itself (and fingerprints) the same; the exact
 * paths are in the sandbox's facts.
 */
export function shown(p: string): string {
  const cwd = process.cwd();
  for (const [dir, name] of [
    [cwd, "."],
    [homedir(), "~"],
  ] as const) {
    if (dir === "/" || dir === "") continue;
    if (p === dir) return name;
    if (p.startsWith(dir + path.sep)) return `${name}/${p.slice(dir.length + 1)}`;
  }
  return p;
}

/** The limits in words, for notes and docs. */
export function describeLimits(limits: SandboxLimits, processesBoundBy: SandboxFacts["processesBoundBy"]): string {
  const processes = processesBoundBy === "none" ? "processes not bounded (no cgroup on this root host)" : `${limits.processes} processes (${processesBoundBy})`;
  return [
    `private memory ${size(limits.memoryBytes)} per process`,
    processes,
    `${limits.openFiles} open files`,
    `CPU ${limits.cpuSeconds} s per process`,
    `files up to ${size(limits.fileBytes)}`,
    `/tmp ${size(limits.tmpBytes)}`,
    `output ${size(limits.outputBytes)}`,
  ].join(", ");
}

/**
 * The isolation of a program run with `facts`, or without a sandbox (`facts` undefined, `why` says
 * why). `what` opens the notes (the command, the server).
 */
export function sandboxIsolation(facts: SandboxFacts | undefined, what: string, subprocess: RuntimeIsolation["subprocess"], why = ""): RuntimeIsolation {
  if (facts === undefined) {
    return { network: "unrestricted", filesystem: "host", secrets: "none", subprocess, notes: `${what}; no sandbox${why === "" ? "" : ` (${why})`}` };
  }
  const network =
    facts.network === "host" ? "unrestricted" : facts.unixSockets.length > 0 ? `none; unix sockets ${facts.unixSockets.map(shown).join(", ")}` : "none";
  const own = facts.readOnly.filter((p) => !DEFAULT_SANDBOX_READ_ONLY_PATHS.includes(p)).map(shown);
  const filesystem = [
    `read-only: system paths${own.length > 0 ? `, ${own.join(", ")}` : ""}`,
    ...(facts.writable.length > 0 ? [`writable: ${facts.writable.map(shown).join(", ")}`] : []),
  ].join("; ");
  const guards = [
    facts.userNamespace ? "own user namespace" : "no user namespace (the kernel refused one)",
    "no capabilities",
    facts.seccomp ? "seccomp filter" : "no seccomp filter (no program for this architecture)",
  ].join(", ");
  return {
    network,
    filesystem,
    secrets: "none",
    subprocess,
    notes: `${what}; bubblewrap: ${guards}; limits: ${describeLimits(facts.limits, facts.processesBoundBy)}`,
  };
}
