import type { Context, Hono } from "hono";
import type { Operator, OperatorRole, OperatorScope } from "@toolgate/core/operator";
import { failurePage, forbidden, pageContext, type ConsoleContext, type ConsoleEnv } from "./app.js";
import { csrfForm, h, layout, table, type Markup } from "./html.js";
import { visible } from "./preview.js";

const OPERATOR_ID = /^op_[A-Za-z0-9_-]{1,64}$/;
const ROLES: readonly OperatorRole[] = ["viewer", "approver", "admin"];
const RISKS = ["low", "medium", "high", "critical"] as const;

/** A comma- or space-separated list from a form field; undefined when empty. */
function list(value: unknown): string[] | undefined {
  if (typeof value !== "string") return undefined;
  const items = value
    .split(/[\s,]+/)
    .map((v) => v.trim())
    .filter(Boolean);
  return items.length > 0 ? items.slice(0, 100) : undefined;
}

function scopeOf(form: Record<string, unknown>): OperatorScope | undefined {
  const tools = list(form.tools);
  const tenants = list(form.tenants);
  const maxRisk = RISKS.find((r) => r === form.maxRisk);
  const scope = { ...(tools ? { tools } : {}), ...(tenants ? { tenants } : {}), ...(maxRisk ? { maxRisk } : {}) };
  return Object.keys(scope).length > 0 ? scope : undefined;
}

/** The one-time link, shown once to the admin who asked: this console's own origin (the Host header was checked). */
function linkPage(
  c: Context<ConsoleEnv>,
  context: ConsoleContext,
  operator: Pick<Operator, "id" | "name" | "role">,
  token: string,
  expiresAt: string,
): Response {
  const link = `http://${c.req.header("host")}/login?token=${token}`;
  return c.html(
    layout(
      "Sign-in link",
      pageContext(c, context.authority),
      h`<p>A one-time sign-in link for <strong>${visible(operator.name)}</strong> (<code>${operator.id}</code>, ${operator.role}). It works once, until ${expiresAt}. Give it to ${visible(operator.name)} only; it is not shown again.</p>
<p><code class="login-link">${link}</code></p><p><a href="/operators">Back to the operators</a></p>`,
      "/operators",
    ),
  );
}

function operatorActions(o: Operator, csrf: string): Markup {
  if (o.status === "removed") return h``;
  const post = (action: string, label: string) => csrfForm(`/operators/${o.id}/${action}`, csrf, h`<button type="submit">${label}</button>`);
  return h`<div class="decide" data-operator-id="${o.id}">${o.status === "active" ? post("disable", "Disable") : post("enable", "Enable")}${
    o.status === "active" ? post("login", "New sign-in link") : ""
  }</div>`;
}

/** Admins only: list operators, add one (its first sign-in link shown once), disable, enable, issue a new link. Removing stays in the CLI. */
export function operatorRoutes(app: Hono<ConsoleEnv>, context: ConsoleContext) {
  const { authority } = context;
  const admin = (c: Context<ConsoleEnv>) => authority.can(c.get("approver"), "admin");

  app.get("/operators", async (c) => {
    const ctx = pageContext(c, authority);
    if (!admin(c)) return forbidden(c, authority, "Only an admin sees the operators.");
    const operators = await authority.operators.list();
    const rows = operators.map((o) => [
      h`<code>${o.id}</code>`,
      visible(o.name),
      o.role,
      o.scope ? visible(JSON.stringify(o.scope)) : "all",
      o.status,
      o.createdAt,
      visible(o.createdBy),
      operatorActions(o, ctx.csrf!),
    ]);
    return c.html(
      layout(
        "Operators",
        ctx,
        h`${table(["id", "name", "role", "scope", "status", "created", "by", ""], rows, "operators")}
<h2>Add an operator</h2>${csrfForm(
          "/operators/add",
          ctx.csrf!,
          h`<label>Name <input name="name" required maxlength="64" pattern="[A-Za-z0-9._@-]{1,64}"></label>
<label>Role <select name="role">${ROLES.map((r) => h`<option value="${r}">${r}</option>`)}</select></label>
<label>Tools <input name="tools" placeholder="all, or repo.write_file gmail.*"></label>
<label>Max risk <select name="maxRisk"><option value="">any</option>${RISKS.map((r) => h`<option value="${r}">${r}</option>`)}</select></label>
<label>Tenants <input name="tenants" placeholder="all, or tenant-a tenant-b"></label>
<button type="submit">Add</button>`,
          "filters",
        )}<p>Removing an operator for good: <code>toolgate operators remove NAME</code>.</p>`,
        "/operators",
      ),
    );
  });

  app.post("/operators/add", async (c) => {
    if (!admin(c)) return forbidden(c, authority, "Only an admin adds operators.");
    const form = c.get("form");
    const role = ROLES.find((r) => r === form.role);
    if (!role || typeof form.name !== "string") return c.html(layout("Not done", pageContext(c, authority), h`<p>Give a name and a role.</p>`), 400);
    const scope = scopeOf(form);
    try {
      const added = await authority.operators.add(form.name.trim(), { role, ...(scope ? { scope } : {}) }, c.get("approver"));
      return linkPage(c, context, added.operator, added.loginToken, added.expiresAt);
    } catch (error) {
      return failurePage(c, authority, error);
    }
  });

  for (const action of ["disable", "enable", "login"] as const)
    app.post(`/operators/:id/${action}`, async (c) => {
      if (!admin(c)) return forbidden(c, authority, "Only an admin changes operators.");
      const id = c.req.param("id");
      if (!OPERATOR_ID.test(id)) return c.html(layout("Not found", pageContext(c, authority), h`<p>No such operator.</p>`), 404);
      try {
        const by = c.get("approver");
        if (action === "login") {
          const operator = await authority.operators.get(id);
          if (!operator) return c.html(layout("Not found", pageContext(c, authority), h`<p>No such operator.</p>`), 404);
          const issued = await authority.operators.issueLogin(id, by);
          return linkPage(c, context, operator, issued.loginToken, issued.expiresAt);
        }
        await (action === "disable" ? authority.operators.disable(id, by) : authority.operators.enable(id, by));
        return c.redirect("/operators", 303);
      } catch (error) {
        return failurePage(c, authority, error);
      }
    });
}
