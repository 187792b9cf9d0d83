/**
 * What the inventory says a sandboxed (or unsandboxed) program may cross: computed from the
 * sandbox as it was built, never from what a manifest hoped.
 */
import type { RuntimeIsolation } from "../../manifest.js";
import type { SandboxLimits } from "./limits.js";
import { DEFAULT_SANDBOX_READ_ONLY_PATHS, type SandboxFacts } from "./profile.js";

const MIB = 1024 * 1024;

const size = (bytes: number) => (bytes % MIB === 0 ? `${bytes / MIB} MiB` : `${bytes} bytes`);

/** The limits in words, for notes and docs. */
export function describeLimits(limits: SandboxLimits, processesBoundBy: SandboxFacts["processesBoundBy"]): string {
  const processes = processesBoundBy === "none" ? "processes not bounded (no cgroup on this root host)" : `${limits.processes} processes (${processesBoundBy})`;
  return [
    `memory ${size(limits.memoryBytes)} per process`,
    processes,
    `${limits.openFiles} open files`,
    `CPU ${limits.cpuSeconds} s`,
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
  const network = facts.network === "host" ? "unrestricted" : facts.unixSockets.length > 0 ? `none; unix sockets ${facts.unixSockets.join(", ")}` : "none";
  const own = facts.readOnly.filter((p) => !DEFAULT_SANDBOX_READ_ONLY_PATHS.includes(p));
  const filesystem = [
    `read-only: system paths${own.length > 0 ? `, ${own.join(", ")}` : ""}`,
    ...(facts.writable.length > 0 ? [`writable: ${facts.writable.join(", ")}`] : []),
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
