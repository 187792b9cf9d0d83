import { Hono, type Context } from "hono";
import { bodyLimit } from "hono/body-limit";
import { deleteCookie, getCookie, setCookie } from "hono/cookie";
import { randomBytes } from "node:crypto";
import { ToolError } from "@toolgate/core";
import { buildInventory, type Inventory } from "@toolgate/core/operator";
import { h, layout, messagePage, type PageContext } from "./html.js";
import { approvalRoutes } from "./routes-approvals.js";
import { auditRoutes } from "./routes-audit.js";
import { budgetRoutes } from "./routes-budgets.js";
import { editRoutes } from "./routes-edit.js";
import { operatorRoutes } from "./routes-operators.js";
import { opsRoutes } from "./routes-ops.js";
import {
  COOKIE_OPTIONS,
  LOGIN_COOKIE,
  SESSION_COOKIE,
  createCsrfKeys,
  hostAllowed,
  sameOrigin,
  securityHeaders,
  sessionCookie,
  type CsrfKeys,
} from "./security.js";
import { CONSOLE_CSS, CONSOLE_JS } from "./static.js";
import type { ConsoleApprover, ConsoleAuthority, ConsoleGate, ConsoleOptions } from "./types.js";
import { watchQueue, type QueueWatcher } from "./watch.js";
import { createWebhookSender, type WebhookSender } from "./webhook.js";

export type ConsoleEnv = {
  Variables: { approver: ConsoleApprover; session: string; csrf: string; form: Record<string, unknown> };
};

/** What every route module gets: the gate, its authority, the CSRF keys and the live queue. */
export interface ConsoleContext {
  readonly gate: ConsoleGate;
  readonly authority: ConsoleAuthority;
  readonly csrf: CsrfKeys;
  readonly clock: () => number;
  readonly watcher: QueueWatcher;
  inventory(): Inventory;
  log(line: string): void;
}

/** The hono app of the console, and `close()` to stop its journal polling and webhook deliveries. */
export type ConsoleApp = Hono<ConsoleEnv> & { close(): Promise<void>; readonly webhook: WebhookSender | undefined };

/** Internal: startConsole learns its port only after binding. */
export interface ConsoleBinding {
  port?: number;
  baseUrl?: string;
}

const MAX_FORM_BYTES = 64 * 1024;
/** A one-time sign-in token's shape; anything else is never put in a page or asked about. */
const LOGIN_TOKEN = /^tgl_[A-Za-z0-9_-]{20,100}$/;

/** The page context of a signed-in request (who, the CSRF token, what the role may do). */
export function pageContext(c: Context<ConsoleEnv>, authority: ConsoleAuthority): PageContext {
  const approver = c.get("approver");
  return { approver, csrf: c.get("csrf"), can: (action) => authority.can(approver, action) };
}

/** A refusal or error as a plain page with its status; a ToolError's code picks the status. */
export function failurePage(c: Context<ConsoleEnv>, authority: ConsoleAuthority, error: unknown): Response {
  const ctx = c.get("approver") ? pageContext(c, authority) : {};
  if (error instanceof ToolError) {
    const code: string = error.code;
    const status = ["approver_forbidden", "approver_invalid", "operator_disabled"].includes(code)
      ? 403
      : ["approval_unknown", "not_found", "operator_unknown"].includes(code)
        ? 404
        : code.startsWith("approval_") || code === "conflict"
          ? 409
          : code === "journal_failed" || code === "journal_tampered"
            ? 500
            : 400;
    return c.html(messagePage(status === 403 ? "Refused" : "Not done", `${error.message} (${error.code})`, ctx), status);
  }
  return c.html(messagePage("Not done", "The console could not do that; the journal may be unreachable. Nothing was changed by this page.", ctx), 500);
}

export function forbidden(c: Context<ConsoleEnv>, authority: ConsoleAuthority | undefined, why: string): Response {
  const ctx = authority && c.get("approver") ? pageContext(c, authority) : {};
  return c.html(messagePage("Refused", why, ctx), 403);
}

export function createConsoleApp(options: ConsoleOptions, binding: ConsoleBinding = {}): ConsoleApp {
  const gate = options.gate;
  const authority = gate?.authority;
  if (!authority || typeof authority.session !== "function")
    throw new ToolError("config_invalid", "the console needs a gate with an approval authority (gate.authority)");
  const clock = options.clock ?? Date.now;
  const log = options.log ?? (() => undefined);
  const csrf = createCsrfKeys();
  const port = () => binding.port ?? options.port;
  const inventory =
    typeof options.inventory === "function"
      ? options.inventory
      : options.inventory
        ? () => options.inventory as Inventory
        : () => buildInventory(gate.registry);
  const watcher = watchQueue(gate.approvals, options.pollMs ?? 500, (error) =>
    log(`console: reading the approval queue failed: ${error instanceof Error ? error.message : "error"}`),
  );
  const consoleUrl = (id: string) => `${binding.baseUrl ?? options.baseUrl ?? `http://127.0.0.1:${port() ?? 7878}`}/approvals#${id}`;
  const webhook = options.webhook ? createWebhookSender(options.webhook, consoleUrl, clock) : undefined;
  const unwatch = webhook ? watcher.subscribe((change) => change.added.forEach((r) => webhook.notify(r))) : undefined;
  const context: ConsoleContext = { gate, authority, csrf, clock, watcher, inventory, log };

  const app = new Hono<ConsoleEnv>();
  app.use("*", securityHeaders);
  // DNS rebinding: a page on another name that resolves to 127.0.0.1 is not this console.
  app.use("*", async (c, next) => {
    if (!hostAllowed(c.req.header("host"), port)) return c.text("unknown host", 403);
    return next();
  });
  app.get("/static/console.js", (c) => c.body(CONSOLE_JS, 200, { "content-type": "text/javascript; charset=utf-8", "cache-control": "no-cache" }));
  // Browsers ask for an icon on every page; answered here, it never bounces through /login.
  app.get("/favicon.ico", (c) => c.body(null, 204));
  app.get("/static/console.css", (c) => c.body(CONSOLE_CSS, 200, { "content-type": "text/css; charset=utf-8", "cache-control": "no-cache" }));

  // Every POST: this origin only, a bounded form body, parsed once.
  app.use("*", async (c, next) => {
    if (c.req.method === "GET" || c.req.method === "HEAD") return next();
    if (c.req.method !== "POST") return c.text("method not allowed", 405);
    if (!sameOrigin(c)) return forbidden(c, undefined, "This form was sent from another site; nothing was changed.");
    return next();
  });
  app.use("*", bodyLimit({ maxSize: MAX_FORM_BYTES, onError: (c) => c.text("form too large", 413) }));
  app.use("*", async (c, next) => {
    if (c.req.method !== "POST") return next();
    const type = c.req.header("content-type") ?? "";
    const form = /^(application\/x-www-form-urlencoded|multipart\/form-data)\b/i.test(type) ? await c.req.parseBody().catch(() => ({})) : {};
    c.set("form", form);
    return next();
  });

  loginRoutes(app, context);

  // Everything else needs a live session: the authority re-reads the operator, so a disabled one is out at once.
  app.use("*", async (c, next) => {
    const session = sessionCookie(c);
    const approver = session ? await authority.session(session).catch(() => undefined) : undefined;
    if (!session || !approver) {
      if (c.req.method === "POST") return forbidden(c, undefined, "You are not signed in (or your session ended); nothing was changed.");
      return c.redirect("/login", 303);
    }
    c.set("approver", approver);
    c.set("session", session);
    c.set("csrf", csrf.forSession(session));
    if (c.req.method === "POST" && !csrf.matches(c.get("form").csrf, c.get("csrf"))) {
      return forbidden(c, authority, "This form is missing the console's CSRF token (or carries another session's); nothing was changed.");
    }
    return next();
  });

  app.post("/logout", async (c) => {
    await authority.logout(c.get("session")).catch(() => undefined);
    deleteCookie(c, SESSION_COOKIE, { path: "/" });
    return c.redirect("/login", 303);
  });
  app.get("/", (c) => c.redirect("/approvals", 303));
  approvalRoutes(app, context);
  editRoutes(app, context);
  auditRoutes(app, context);
  opsRoutes(app, context);
  budgetRoutes(app, context);
  operatorRoutes(app, context);
  app.notFound((c) => c.html(messagePage("Not found", "No such page."), 404));
  app.onError((error, c) => {
    log(`console: ${c.req.method} ${c.req.path} failed: ${error instanceof Error ? error.message : "error"}`);
    return failurePage(c, authority, error);
  });

  return Object.assign(app, {
    webhook,
    async close() {
      unwatch?.();
      watcher.close();
      await webhook?.drain(true);
    },
  });
}

/** Sign-in by a one-time link: GET shows a button (never spends the token), POST spends it. */
function loginRoutes(app: Hono<ConsoleEnv>, { authority, csrf }: ConsoleContext) {
  app.get("/login", (c) => {
    const token = c.req.query("token");
    // The browser's own side requests (a favicon redirected here) must not replace the cookie the
    // open sign-in form's token is derived from: a well-formed one is kept.
    const kept = getCookie(c, LOGIN_COOKIE);
    const pre = kept !== undefined && /^[A-Za-z0-9_-]{43}$/.test(kept) ? kept : randomBytes(32).toString("base64url");
    setCookie(c, LOGIN_COOKIE, pre, { ...COOKIE_OPTIONS, maxAge: 15 * 60 });
    if (!token || !LOGIN_TOKEN.test(token))
      return c.html(
        layout("Sign in", {}, h`<p>Open the one-time sign-in link an admin gave you (<code>toolgate operators login NAME</code> prints a new one).</p>`),
      );
    return c.html(
      layout(
        "Sign in",
        {},
        h`<p>This one-time link signs you in to this console. It works once.</p>
<form method="post" action="/login" class="login"><input type="hidden" name="csrf" value="${csrf.forLogin(pre)}"><input type="hidden" name="token" value="${token}"><button type="submit">Sign in</button></form>`,
      ),
    );
  });
  app.post("/login", async (c) => {
    const form = c.get("form");
    const pre = getCookie(c, LOGIN_COOKIE);
    if (!pre || !csrf.matches(form.csrf, csrf.forLogin(pre)))
      return forbidden(c, undefined, "This sign-in form did not come from this console; open your link again.");
    const token = typeof form.token === "string" ? form.token : "";
    const signed = LOGIN_TOKEN.test(token) ? await authority.login(token).catch(() => undefined) : undefined;
    deleteCookie(c, LOGIN_COOKIE, { path: "/" });
    if (!signed)
      return c.html(
        messagePage(
          "Sign-in refused",
          "This sign-in link is not valid: it is wrong, expired or already used. Ask an admin for a new one (toolgate operators login NAME).",
        ),
        401,
      );
    const maxAge = Math.max(1, Math.floor((Date.parse(signed.expiresAt) - Date.now()) / 1000));
    setCookie(c, SESSION_COOKIE, signed.session, { ...COOKIE_OPTIONS, maxAge });
    return c.redirect("/approvals", 303);
  });
}
