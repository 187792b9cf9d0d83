/**
 * What the sandbox mounts over the host's view: the /proc entries it makes read-only or hides, and
 * the masks over the gate's protected state under its binds.
 */
import { lstatSync } from "node:fs";
import path from "node:path";
import { pathIsUnder } from "../path-under.js";
import { isDirectory, protectedPaths } from "../protected-paths.js";

/** /proc entries bound read-only over the sandbox's own /proc. */
export const PROC_READ_ONLY = ["/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs"];
/** /proc entries hidden (kernel memory, key rings, timers and hardware the program has no use for). */
export const PROC_HIDDEN = [
  "/proc/kcore",
  "/proc/kmsg",
  "/proc/kallsyms",
  "/proc/modules",
  "/proc/keys",
  "/proc/key-users",
  "/proc/latency_stats",
  "/proc/timer_list",
  "/proc/sched_debug",
  "/proc/slabinfo",
  "/proc/vmallocinfo",
  "/proc/pagetypeinfo",
  "/proc/iomem",
  "/proc/ioports",
  "/proc/config.gz",
  "/proc/kpagecount",
  "/proc/kpageflags",
  "/proc/kpagecgroup",
  "/proc/mtrr",
  "/proc/acpi",
  "/proc/scsi",
  "/proc/asound",
];

/** An empty directory over `p`: a tiny tmpfs, read-only (a mask must not be a place to keep data). */
export const EMPTY_DIR = (p: string): string[] => ["--size", "4096", "--tmpfs", p, "--remount-ro", p];

/**
 * The bubblewrap arguments that hide every protected path (and `hidden`) inside the paths a sandbox
 * binds: a directory behind an empty tmpfs, a file behind /dev/null. Pass them after the binds.
 */
export function bubblewrapMasks(bound: readonly string[], hidden: readonly string[] = []): string[] {
  return masked(bound, [...protectedPaths(), ...hidden]).flatMap((p) => (isDirectory(p) ? EMPTY_DIR(p) : ["--ro-bind", "/dev/null", p]));
}

/** The paths to hide: existing, not links (their targets are listed in real form), under a bound path, parents before (and instead of) children. */
function masked(bound: readonly string[], candidates: readonly string[]): string[] {
  const chosen: string[] = [];
  for (const p of [...new Set(candidates.map((c) => path.resolve(c)))].sort((a, b) => a.length - b.length)) {
    if (!bound.some((b) => pathIsUnder(p, b)) || chosen.some((c) => pathIsUnder(p, c))) continue;
    try {
      if (lstatSync(p).isSymbolicLink()) continue;
    } catch {
      continue;
    }
    chosen.push(p);
  }
  return chosen;
}
