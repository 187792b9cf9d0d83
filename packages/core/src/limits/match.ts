/**
 * Which of a profile's limits apply to a tool: those naming it, its family (`family.*`), or every
 * tool (`"*"`). Profiles are frozen, so the answer is decided once per profile and tool; a profile
 * without limits costs one property read and returns a shared empty array.
 */
import { ToolError } from "../errors.js";
import type { Profile, ProfileLimit } from "../profile.js";
import { MAX_CONCURRENT } from "../profile.js";
import { WINDOW_MAX, WINDOW_MS } from "./window.js";

const NONE: readonly ProfileLimit[] = Object.freeze([]);
const matched = new WeakMap<Profile, Map<string, readonly ProfileLimit[]>>();
/** Tool ids remembered per profile (the gate asks only for registered ids; a caller may ask for any). */
const MEMO_TOOLS = 4096;

/** The limits of `profile` that apply to `toolId`, in the profile's order. Throws `config_invalid` for limits `defineProfile` did not make. */
export function limitsFor(profile: Profile, toolId: string): readonly ProfileLimit[] {
  const all: unknown = profile.limits;
  if (all === undefined || (Array.isArray(all) && all.length === 0)) return NONE;
  let memo = matched.get(profile);
  if (memo === undefined) {
    if (!soundLimits(all)) {
      throw new ToolError("config_invalid", `profile ${JSON.stringify(String(profile.name))} has limits defineProfile did not make (frozen, each well formed)`);
    }
    memo = new Map();
    matched.set(profile, memo);
  }
  let found = memo.get(toolId);
  if (found === undefined) {
    found = match(all as readonly ProfileLimit[], toolId);
    if (memo.size < MEMO_TOOLS) memo.set(toolId, found);
  }
  return found;
}

function match(all: readonly ProfileLimit[], toolId: string): readonly ProfileLimit[] {
  const dot = toolId.indexOf(".");
  const family = dot > 0 ? `${toolId.slice(0, dot)}.*` : undefined;
  const found = all.filter((l) => l.tools === "*" || l.tools.includes(toolId) || (family !== undefined && l.tools.includes(family)));
  return found.length === 0 ? NONE : Object.freeze(found);
}

const whole = (n: unknown, { min, max }: { readonly min: number; readonly max: number }) => Number.isInteger(n) && (n as number) >= min && (n as number) <= max;

/** Limits as `defineProfile` makes them: frozen, each well formed, ids distinct (a hand-built profile's may be anything). */
function soundLimits(all: unknown): boolean {
  if (!Array.isArray(all) || !Object.isFrozen(all)) return false;
  const ids = new Set<string>();
  for (const l of all as unknown[]) {
    if (typeof l !== "object" || l === null || !Object.isFrozen(l)) return false;
    const limit = l as Partial<Record<string, unknown>>;
    if (typeof limit.id !== "string" || limit.id === "" || ids.has(limit.id)) return false;
    ids.add(limit.id);
    const tools = limit.tools;
    if (tools !== "*" && !(Array.isArray(tools) && Object.isFrozen(tools) && tools.length > 0 && tools.every((t) => typeof t === "string"))) return false;
    const ok =
      limit.kind === "window"
        ? (limit.per === "principal" || limit.per === "tenant" || limit.per === "profile") && whole(limit.max, WINDOW_MAX) && whole(limit.windowMs, WINDOW_MS)
        : limit.kind === "concurrent" && whole(limit.maxConcurrent, MAX_CONCURRENT);
    if (!ok) return false;
  }
  return true;
}
