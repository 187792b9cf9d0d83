import { html } from "hono/html";
import type { HtmlEscapedString } from "hono/utils/html";
import type { ConsoleApprover } from "./types.js";

/** What may go into a page: text (escaped), numbers, markup made by `h`, lists of these. Never a raw object. */
export type Child = string | number | HtmlEscapedString | false | null | undefined | readonly Child[];
export type Markup = HtmlEscapedString;

/** Markup: every interpolated string is HTML-escaped (text and quoted attribute values alike). */
export function h(strings: TemplateStringsArray, ...values: Child[]): Markup {
  const out = html(strings, ...(values as unknown[]));
  if (out instanceof Promise) throw new Error("console markup must be synchronous");
  return out;
}

/** Any value as display text: strings as they are, everything else as JSON. */
export function text(value: unknown): string {
  if (typeof value === "string") return value;
  if (value === undefined) return "";
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return "(unprintable)";
  }
}

export interface PageContext {
  readonly approver?: ConsoleApprover;
  readonly csrf?: string;
  readonly can?: (action: "view" | "decide" | "admin") => boolean;
}

const NAV = [
  ["/approvals", "Approvals"],
  ["/inventory", "Inventory"],
  ["/audit", "Audit"],
  ["/outbox", "Outbox"],
  ["/budgets", "Budgets"],
  ["/switches", "Kill switch"],
  ["/operators", "Operators"],
] as const;

/** The whole page: strict CSP allows only /static/console.css and /static/console.js from here. */
export function layout(title: string, ctx: PageContext, body: Child, active?: string): Markup {
  const nav = ctx.approver
    ? h`<nav><span class="brand">Toolgate</span>${NAV.filter(([href]) => href !== "/operators" || ctx.can?.("admin")).map(
        ([href, label]) => h`<a href="${href}"${href === active ? h` aria-current="page"` : ""}>${label}</a>`,
      )}<span class="who" data-operator-id="${ctx.approver.id}">${ctx.approver.name} (${ctx.approver.role})</span>${csrfForm("/logout", ctx.csrf ?? "", h`<button type="submit">Sign out</button>`, "logout")}</nav>`
    : h`<nav><span class="brand">Toolgate</span></nav>`;
  return h`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} · Toolgate console</title><link rel="stylesheet" href="/static/console.css"><script src="/static/console.js" defer></script></head>
<body>${nav}<main><h1>${title}</h1>${body}</main></body></html>`;
}

/** A POST form carrying the session's CSRF token. */
export function csrfForm(action: string, csrf: string, inner: Child, cls?: string): Markup {
  return h`<form method="post" action="${action}"${cls ? h` class="${cls}"` : ""}><input type="hidden" name="csrf" value="${csrf}">${inner}</form>`;
}

/** A plain message page (refusals, errors): nothing but the escaped text. */
export function messagePage(title: string, message: string, ctx: PageContext = {}): Markup {
  return layout(title, ctx, h`<p class="message">${message}</p>`);
}

/** A table from header labels and rows of cells. */
export function table(head: readonly string[], rows: readonly (readonly Child[])[], cls?: string): Markup {
  return h`<table${cls ? h` class="${cls}"` : ""}><thead><tr>${head.map((c) => h`<th>${c}</th>`)}</tr></thead><tbody>${rows.map(
    (r) => h`<tr>${r.map((c) => h`<td>${c}</td>`)}</tr>`,
  )}</tbody></table>`;
}
