import type { Hono } from "hono";
import type { OutboxEntry } from "@toolgate/core";
import { resolveOutboxEntry } from "@toolgate/core/operator";
import { failurePage, forbidden, pageContext, type ConsoleContext, type ConsoleEnv } from "./app.js";
import { csrfForm, h, layout, table } from "./html.js";
import { visible } from "./preview.js";
import { provenanceCell } from "./provenance.js";
import { limitText } from "./routes-budgets.js";

const OUTBOX_KEY = /^[A-Za-z0-9:._@\/+=-]{1,300}$/;
const TARGET = /^(?:tool|family):[A-Za-z0-9_.-]{1,120}$/;
/** A pending entry younger than this may still be running on some worker: not offered for resolution (as `toolgate outbox recover --older-than 5m`). */
export const IN_FLIGHT_MS = 5 * 60_000;

export function opsRoutes(app: Hono<ConsoleEnv>, { gate, authority, inventory, clock }: ConsoleContext) {
  const inFlight = (e: Pick<OutboxEntry, "state" | "updatedAt">) => e.state === "pending" && Date.parse(e.updatedAt) > clock() - IN_FLIGHT_MS;
  app.get("/inventory", (c) => {
    const inv = inventory();
    const rows = inv.tools.map((t) => [
      h`<code>${t.id}</code>`,
      t.kind,
      `${t.actionType} / ${t.effect}`,
      t.risk,
      t.approval,
      t.requiredAllowlist.join(" "),
      t.connector ? `${t.connector.provider}: ${t.connector.scopes.join(" ")}` : "-",
      `network ${t.runtimeIsolation.network}, files ${t.runtimeIsolation.filesystem}, secrets ${t.runtimeIsolation.secrets}, subprocess ${t.runtimeIsolation.subprocess}`,
      t.sovereignty,
      inv.profiles.length === 0 ? "(profiles not known here)" : t.reachableBy.join(" ") || "none",
      provenanceCell(t),
      (t.limits ?? []).length === 0 ? "-" : h`<ul class="limits">${(t.limits ?? []).map((l) => h`<li><code>${l.profile}</code>: ${limitText(l)}</li>`)}</ul>`,
    ]);
    return c.html(
      layout(
        "Inventory",
        pageContext(c, authority),
        h`<p>${inv.tools.length} tools in ${inv.families.length} families; registry <code>${inv.fingerprint.slice(0, 16)}</code>.</p>
${table(["tool", "kind", "action / effect", "risk", "approval", "tokens", "scopes", "isolation", "sovereignty", "profiles", "provenance", "limits"], rows, "inventory")}`,
        "/inventory",
      ),
    );
  });

  app.get("/outbox", async (c) => {
    const ctx = pageContext(c, authority);
    const entries = await gate.journal.listOutbox({ states: ["unknown", "pending"] });
    const canResolve = authority.can(ctx.approver!, "admin");
    const rows = entries.map((e) => [
      h`<code>${visible(e.key)}</code>`,
      e.state,
      e.boundary,
      visible(e.toolId),
      visible(`${e.principal} @ ${e.tenant}`),
      String(e.attempts),
      e.updatedAt,
      inFlight(e)
        ? h`<span class="in-flight">in flight; resolvable once untouched for ${IN_FLIGHT_MS / 60_000} minutes</span>`
        : canResolve
          ? h`<div class="decide" data-outbox-key="${e.key}">${csrfForm(
              `/outbox/${encodeURIComponent(e.key)}/resolve`,
              ctx.csrf!,
              h`<input type="hidden" name="outcome" value="applied"><button type="submit">Applied</button>`,
            )}${csrfForm(`/outbox/${encodeURIComponent(e.key)}/resolve`, ctx.csrf!, h`<input type="hidden" name="outcome" value="not_applied"><button type="submit">Not applied</button>`)}</div>`
          : "",
    ]);
    return c.html(
      layout(
        "Outbox",
        ctx,
        h`<p>Entries whose effect is unknown (or still pending after a crash). Resolve one once you have checked the provider: <em>applied</em> — a retry replays; <em>not applied</em> — a retry may run it again.${canResolve ? "" : " Only an admin resolves entries."}</p>
${entries.length === 0 ? h`<p class="empty">No unknown or pending entries.</p>` : table(["key", "state", "boundary", "tool", "for", "attempts", "updated", ""], rows, "outbox")}`,
        "/outbox",
      ),
    );
  });

  app.post("/outbox/:key/resolve", async (c) => {
    const approver = c.get("approver");
    if (!authority.can(approver, "admin")) return forbidden(c, authority, "Only an admin resolves outbox entries.");
    const key = c.req.param("key");
    const outcome = c.get("form").outcome;
    if (!OUTBOX_KEY.test(key) || (outcome !== "applied" && outcome !== "not_applied"))
      return c.html(layout("Not done", pageContext(c, authority), h`<p>Say applied or not_applied for an existing entry.</p>`), 400);
    try {
      const entry = await gate.journal.getIntent(key);
      if (entry && inFlight(entry))
        return c.html(
          layout(
            "Not done",
            pageContext(c, authority),
            h`<p>This entry may still be running on a worker; resolve it once it has been untouched for ${IN_FLIGHT_MS / 60_000} minutes.</p>`,
          ),
          409,
        );
      await resolveOutboxEntry(gate, key, outcome, { operator: approver.id, note: `resolved in the console by ${approver.id}` });
      return c.redirect("/outbox", 303);
    } catch (error) {
      return failurePage(c, authority, error);
    }
  });

  app.get("/switches", async (c) => {
    const ctx = pageContext(c, authority);
    const switches = await authority.switches.list();
    const admin = authority.can(ctx.approver!, "admin");
    const inv = inventory();
    const rows = switches.map((s) => [
      h`<code>${visible(s.target)}</code>`,
      visible(s.reason),
      visible(s.by),
      s.at,
      admin
        ? csrfForm("/switches/enable", ctx.csrf!, h`<input type="hidden" name="target" value="${s.target}"><button type="submit">Enable again</button>`)
        : "",
    ]);
    return c.html(
      layout(
        "Kill switch",
        ctx,
        h`<p>A disabled tool or family is refused (<code>tool_disabled</code>) on the next call by every worker sharing this journal.</p>
${switches.length === 0 ? h`<p class="empty">Nothing is disabled.</p>` : table(["target", "reason", "by", "since", ""], rows, "switches")}
${
  admin
    ? h`<h2>Disable</h2>${csrfForm(
        "/switches/disable",
        ctx.csrf!,
        h`<label>Target <input name="target" list="targets" required placeholder="tool:repo.write_file or family:gmail"></label>
<datalist id="targets">${inv.tools.map((t) => h`<option value="tool:${t.id}">`)}${inv.families.map((f) => h`<option value="family:${f.name}">`)}</datalist>
<label>Reason <input name="reason" required maxlength="500"></label><button type="submit">Disable</button>`,
        "disable",
      )}`
    : h`<p>Only an admin sets the kill switch.</p>`
}`,
        "/switches",
      ),
    );
  });

  const switchForm = (form: Record<string, unknown>) => ({
    target: typeof form.target === "string" ? form.target.trim() : "",
    reason: typeof form.reason === "string" ? form.reason.trim().slice(0, 500) : "",
  });

  app.post("/switches/disable", async (c) => {
    const approver = c.get("approver");
    if (!authority.can(approver, "admin")) return forbidden(c, authority, "Only an admin sets the kill switch.");
    const { target, reason } = switchForm(c.get("form"));
    if (!TARGET.test(target) || reason === "")
      return c.html(layout("Not done", pageContext(c, authority), h`<p>Name a target (tool:ID or family:NAME) and a reason.</p>`), 400);
    // A misspelt target would disable nothing while looking done: only a tool or family this gate has.
    const inv = inventory();
    const known = new Set([...inv.tools.map((t) => `tool:${t.id}`), ...inv.families.map((f) => `family:${f.name}`)]);
    if (!known.has(target))
      return c.html(layout("Not done", pageContext(c, authority), h`<p>No tool or family ${target} here; nothing was disabled.</p>`), 400);
    try {
      await authority.switches.disable(target, reason, approver);
      return c.redirect("/switches", 303);
    } catch (error) {
      return failurePage(c, authority, error);
    }
  });

  app.post("/switches/enable", async (c) => {
    const approver = c.get("approver");
    if (!authority.can(approver, "admin")) return forbidden(c, authority, "Only an admin sets the kill switch.");
    const { target } = switchForm(c.get("form"));
    if (!TARGET.test(target)) return c.html(layout("Not done", pageContext(c, authority), h`<p>Name a target (tool:ID or family:NAME).</p>`), 400);
    try {
      await authority.switches.enable(target, approver);
      return c.redirect("/switches", 303);
    } catch (error) {
      return failurePage(c, authority, error);
    }
  });
}
