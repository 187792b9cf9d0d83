import { durationText, readLimitUsage, type LimitUsage } from "@toolgate/core/operator";
import { EXIT, table, type Io } from "../output.js";
import { printable } from "../printable.js";
import type { Runtime } from "../runtime.js";
import type { ConfigProfile } from "../config-profiles.js";

/** A limit as a profile declares it (parsed by `defineProfile`). */
interface DeclaredLimit {
  readonly kind: string;
  readonly id: string;
  readonly per?: string;
  readonly max?: number;
  readonly windowMs?: number;
  readonly maxConcurrent?: number;
}

const declared = (profile: ConfigProfile): readonly DeclaredLimit[] => (profile as { readonly limits?: readonly DeclaredLimit[] }).limits ?? [];

/**
 * `toolgate budgets [--profile P] [--json]`: what each window limit has used now, per profile,
 * limit and principal or tenant, read from the journal every worker shares; a limit still declared
 * is measured against its current max and window. Limits that count nothing now are named below.
 */
export async function budgetsCommand(runtime: Runtime, options: { profile?: string; json: boolean }, io: Io): Promise<number> {
  const profiles = options.profile ? [runtime.profile(options.profile)] : runtime.profiles;
  const usage = await readLimitUsage(runtime.journal, { ...(options.profile ? { profile: options.profile } : {}), profiles });
  if (options.json) {
    io.out(JSON.stringify(usage, null, 2));
    return EXIT.ok;
  }
  if (usage.length > 0)
    io.out(
      table(
        ["profile", "limit", "per", "tenant", "principal", "used", "window", "next call fits in", "window empty in"],
        usage.map((u) => [
          u.profile,
          u.limit,
          u.per,
          // Who called is the worker's text (a user's name, say): what a terminal would act on is shown as a marker.
          printable(u.tenant ?? "-"),
          printable(u.principal ?? "-"),
          `${u.used}/${u.max}`,
          durationText(u.windowMs),
          u.retryAfterMs === 0 ? "now" : durationText(u.retryAfterMs),
          durationText(u.resetInMs),
        ]),
      ),
    );
  const idle = unused(profiles, usage);
  if (usage.length === 0) io.out(`no calls counted against any limit${options.profile ? ` of profile ${options.profile}` : ""}`);
  if (idle.length > 0) io.out(`${usage.length > 0 ? "\n" : ""}nothing counted now: ${idle.join(", ")}`);
  const perWorker = profiles.flatMap((p) =>
    declared(p)
      .filter((l) => l.kind === "concurrent")
      .map((l) => `${p.name}/${l.id} (${l.maxConcurrent})`),
  );
  if (perWorker.length > 0) io.out(`calls in flight, bounded per worker (not journaled): ${perWorker.join(", ")}`);
  return EXIT.ok;
}

/** The window limits declared that no row counts now, as `profile/limit (max per per every window)`. */
function unused(profiles: readonly ConfigProfile[], usage: readonly LimitUsage[]): string[] {
  const counted = new Set(usage.map((u) => `${u.profile}\n${u.limit}`));
  return profiles.flatMap((p) =>
    declared(p)
      .filter((l) => l.kind === "window" && !counted.has(`${p.name}\n${l.id}`))
      .map((l) => `${p.name}/${l.id} (${l.max} per ${l.per} every ${durationText(l.windowMs ?? 0)})`),
  );
}
