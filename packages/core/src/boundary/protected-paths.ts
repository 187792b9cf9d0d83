/**
 * Protected paths: the gate's own state (journal, audit key, vault, grants, witness) that no tool
 * may reach, whatever root it is given. A process-wide registry that only ever grows: there is no
 * way to remove a path once protected. Every copy of `@toolgate/core` in the process shares it (it
 * lives on `globalThis` under a registry symbol, defined non-writable), so a store that protects
 * its file through one copy is refused by a root guard from another.
 */
import { lstatSync, readdirSync, realpathSync, statSync, type Stats } from "node:fs";
import path from "node:path";
import { ToolError } from "../errors.js";
import { pathIsUnder } from "./path-under.js";

interface Registry {
  add(absPath: string): void;
  list(): readonly string[];
}

const KEY = Symbol.for("@toolgate/core.protected-paths.v1");

function registry(): Registry {
  const holder = globalThis as { [KEY]?: Registry };
  const existing = holder[KEY];
  if (existing !== undefined) return existing;
  const paths = new Set<string>();
  const created: Registry = Object.freeze({
    add: (p: string) => void paths.add(p),
    list: () => [...paths],
  });
  Object.defineProperty(globalThis, KEY, { value: created, writable: false, configurable: false, enumerable: false });
  return created;
}

/**
 * Protect `absPath` for the rest of the process: {@link resolveWithinRoot} (and every root guard)
 * refuses any candidate whose real path is at or under it, or under where it resolves (a symbolic
 * link to it is followed first), and a sandboxed verifier hides it from the commands it runs. The
 * path need not exist yet. Protecting only ever adds a denial; nothing removes one.
 *
 * @throws ToolError `config_invalid` when `absPath` is not an absolute path without NUL bytes.
 */
export function protectPath(absPath: string): void {
  if (typeof absPath !== "string" || absPath.length === 0 || absPath.includes("\0") || !path.isAbsolute(absPath))
    throw new ToolError("config_invalid", "a protected path must be an absolute path without NUL bytes");
  registry().add(path.resolve(absPath));
}

/** How long the real forms of the protected paths are reused before they are resolved again. */
const REAL_FORMS_TTL_MS = 1000;
let cached: { readonly at: number; readonly count: number; readonly paths: readonly string[] } | undefined;

/**
 * Every protected path in both its given spelling and its real one (the nearest existing ancestor
 * resolved through its links, then the missing names), without duplicates. The real forms are
 * resolved again at most once a second, and whenever a path is added.
 */
export function protectedPaths(): readonly string[] {
  const given = registry().list();
  const now = Date.now();
  if (cached !== undefined && cached.count === given.length && now - cached.at < REAL_FORMS_TTL_MS) return cached.paths;
  const all = new Set<string>();
  for (const p of given) {
    all.add(p);
    const real = realForm(p);
    if (real !== undefined) all.add(real);
  }
  cached = { at: now, count: given.length, paths: Object.freeze([...all]) };
  return cached.paths;
}

/** The protected path (as stored or resolved) that `realPath` lies at or under, if any. */
export function protectedPathCovering(realPath: string): string | undefined {
  return protectedPaths().find((p) => pathIsUnder(realPath, p));
}

/**
 * Whether the absolute path `realPath`, taken as spelled (no I/O on it), is at or under a
 * protected path: for filtering names a tool did not resolve itself (a listing, search hits).
 */
export function isProtectedPath(realPath: string): boolean {
  return protectedPathCovering(realPath) !== undefined;
}

/** Most entries looked at under protected directories when checking for a hard link. */
const MAX_HARD_LINK_SCAN = 4096;

/**
 * True when `info` (a regular file's stat with more than one link) is the same file as one at or
 * under a protected path: a hard link made inside a root to the gate's state. Only files with
 * several links are compared, so an ordinary file costs nothing. Fails closed: a protected tree
 * too large to scan counts as a match.
 */
export function isHardLinkToProtected(info: Stats): boolean {
  if (!info.isFile() || info.nlink < 2) return false;
  let budget = MAX_HARD_LINK_SCAN;
  const seen = new Set<string>();
  const visit = (p: string): boolean => {
    if (seen.has(p)) return false;
    seen.add(p);
    if (--budget < 0) return true;
    let entry: Stats;
    try {
      entry = lstatSync(p);
    } catch {
      return false;
    }
    if (entry.isFile()) return entry.dev === info.dev && entry.ino === info.ino;
    if (!entry.isDirectory()) return false;
    let names: string[];
    try {
      names = readdirSync(p);
    } catch {
      return false;
    }
    return names.some((name) => visit(path.join(p, name)));
  };
  return protectedPaths().some(visit);
}

/** The real form of a path that may not exist: the nearest existing ancestor's real path, then the rest. */
function realForm(given: string): string | undefined {
  const rest: string[] = [];
  let ancestor = given;
  for (;;) {
    try {
      return path.join(realpathSync.native(ancestor), ...rest);
    } catch {
      const parent = path.dirname(ancestor);
      if (parent === ancestor) return undefined;
      rest.unshift(path.basename(ancestor));
      ancestor = parent;
    }
  }
}

/** Whether a real path exists and is a directory (for a sandbox deciding how to hide it). */
export function isDirectory(p: string): boolean {
  try {
    return statSync(p).isDirectory();
  } catch {
    return false;
  }
}
