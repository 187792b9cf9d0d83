import type { Hono } from "hono";
import { durationText, readLimitUsage, type InventoryLimit } from "@toolgate/core/operator";
import { pageContext, type ConsoleContext, type ConsoleEnv } from "./app.js";
import { h, layout, table } from "./html.js";
import { visible } from "./preview.js";

/** Rows shown at most; the rest are counted (`toolgate budgets --json` prints them all). */
export const MAX_BUDGET_ROWS = 500;

/**
 * `GET /budgets`, for every role: what each window limit counts now, per profile, limit and
 * scope, from the journal every worker shares, measured against the limits the inventory's
 * profiles declare now; then the declared limits that count nothing, and the per-worker ones.
 */
export function budgetRoutes(app: Hono<ConsoleEnv>, { gate, authority, inventory, clock }: ConsoleContext) {
  app.get("/budgets", async (c) => {
    const ctx = pageContext(c, authority);
    const declared = declaredLimits(inventory().tools.flatMap((t) => t.limits ?? []));
    const profiles = [...new Set(declared.map((l) => l.profile))].map((name) => ({
      name,
      limits: declared
        .filter((l) => l.profile === name && l.windowMs !== undefined)
        .map((l) => ({ kind: "window", id: l.limit, max: l.max, windowMs: l.windowMs })),
    }));
    const usage = await readLimitUsage(gate.journal, { nowMs: Math.floor(clock()), profiles });
    const shown = usage.slice(0, MAX_BUDGET_ROWS);
    const rows = shown.map((u) => [
      h`<code data-limit="${u.profile}/${u.limit}">${visible(u.profile)} / ${visible(u.limit)}</code>`,
      u.per,
      u.tenant === undefined ? "-" : visible(u.tenant),
      u.principal === undefined ? "-" : visible(u.principal),
      h`<span class="${u.retryAfterMs > 0 ? "spent" : "left"}">${u.used} of ${u.max}</span>`,
      durationText(u.windowMs),
      u.retryAfterMs === 0 ? "now" : durationText(u.retryAfterMs),
      durationText(u.resetInMs),
    ]);
    const counted = new Set(usage.map((u) => `${u.profile}\n${u.limit}`));
    const idle = declared.filter((l) => l.windowMs !== undefined && !counted.has(`${l.profile}\n${l.limit}`));
    const perWorker = declared.filter((l) => l.maxConcurrent !== undefined);
    return c.html(
      layout(
        "Budgets",
        ctx,
        h`<p>Calls each limit counts now, per profile, limit and scope, read from the journal every worker shares. A call over a limit is refused (<code>rate_limited</code>, with the time until the next call fits) before any approval is asked and before any effect.</p>
${
  usage.length === 0
    ? h`<p class="empty">No calls counted against any limit now.</p>`
    : table(["profile / limit", "per", "tenant", "principal", "used", "window", "next call fits in", "window empty in"], rows, "budgets")
}
${usage.length > shown.length ? h`<p class="more">and ${usage.length - shown.length} more rows not shown (<code>toolgate budgets --json</code> prints them all)</p>` : ""}
${idle.length > 0 ? h`<h2>Nothing counted now</h2><ul class="idle">${idle.map((l) => h`<li><code>${l.profile} / ${l.limit}</code>: ${limitText(l)}</li>`)}</ul>` : ""}
${perWorker.length > 0 ? h`<h2>Calls in flight, per worker</h2><p>Held by each worker's gate, not journaled:</p><ul class="per-worker">${perWorker.map((l) => h`<li><code>${l.profile} / ${l.limit}</code>: ${limitText(l)}</li>`)}</ul>` : ""}`,
        "/budgets",
      ),
    );
  });
}

/** What a limit allows: `2 per principal every 1 min`, or `at most 1 at once per tool` (per worker). */
export function limitText(l: InventoryLimit): string {
  return l.maxConcurrent !== undefined ? `at most ${l.maxConcurrent} at once per tool` : `${l.max} per ${l.per ?? ""} every ${durationText(l.windowMs ?? 0)}`;
}

/** Each profile's limits once (the inventory lists them per tool), in order of first mention. */
function declaredLimits(listed: readonly InventoryLimit[]): InventoryLimit[] {
  const seen = new Map<string, InventoryLimit>();
  for (const l of listed) if (!seen.has(`${l.profile}\n${l.limit}`)) seen.set(`${l.profile}\n${l.limit}`, l);
  return [...seen.values()];
}
