import type { ApprovalRequest } from "@toolgate/core";
import { currentApprovals } from "@toolgate/core/operator";
import type { ApprovalChange } from "@toolgate/core/store-kit";
import { h, text, type Child, type Markup } from "./html.js";

/** Characters that change how text reads without showing themselves (bidi controls, zero-width, soft hyphen, C0/C1 controls). */
const HIDDEN = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F\u00AD\u061C\u180E\u200B-\u200F\u202A-\u202E\u2060-\u206F\uFEFF]/g;
const MAX_DEPTH = 6;
const MAX_ITEMS = 1000;

/** Text with every hidden character shown as a visible marker (U+202E and the like), so a preview cannot hide or reorder what it says. */
export function visible(value: string): Markup {
  const parts: Child[] = [];
  let last = 0;
  for (const match of value.matchAll(HIDDEN)) {
    parts.push(value.slice(last, match.index));
    const code = match[0].codePointAt(0)!.toString(16).toUpperCase().padStart(4, "0");
    parts.push(h`<span class="hidden-char" title="a hidden character">⟨U+${code}⟩</span>`);
    last = match.index + match[0].length;
  }
  parts.push(value.slice(last));
  return h`${parts}`;
}

/** Structured preview facts, as given: objects as definition lists, arrays item by item (every recipient). */
export function renderValue(value: unknown, depth = 0): Markup {
  if (value === null || value === undefined) return h`<span class="none">none</span>`;
  if (typeof value === "string") return value === "" ? h`<span class="none">(empty)</span>` : h`<span class="text">${visible(value)}</span>`;
  if (typeof value === "number" || typeof value === "boolean") return h`<span class="scalar">${String(value)}</span>`;
  if (depth >= MAX_DEPTH) return h`<code>${visible(text(value))}</code>`;
  if (Array.isArray(value)) {
    if (value.length === 0) return h`<span class="none">none</span>`;
    const shown = value.slice(0, MAX_ITEMS);
    return h`<ol class="list">${shown.map((item) => h`<li>${renderValue(item, depth + 1)}</li>`)}${
      value.length > shown.length ? h`<li class="more">and ${value.length - shown.length} more not shown — deny and ask for a smaller call</li>` : ""
    }</ol>`;
  }
  if (typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>);
    if (entries.length === 0) return h`<span class="none">none</span>`;
    return h`<dl class="facts">${entries.map(([key, item]) => h`<dt>${visible(key)}</dt><dd>${renderValue(item, depth + 1)}</dd>`)}</dl>`;
  }
  return h`<code>${visible(text(value))}</code>`;
}

/** A body that is a unified diff (repository writes, patches, commits). */
export function isDiff(request: Pick<ApprovalRequest, "toolId">, body: string): boolean {
  return request.toolId.startsWith("repo.") ? /^(?:diff --git |--- |@@ )/m.test(body) : /^diff --git /m.test(body) || /^--- .*\n\+\+\+ /m.test(body);
}

/** A unified diff, line by line: added, removed, hunk and file lines marked (by class, never by script). */
export function renderDiff(body: string): Markup {
  const lines = body.split("\n");
  return h`<pre class="diff">${lines.map((line) => {
    const cls =
      line.startsWith("+++") || line.startsWith("---") || line.startsWith("diff ")
        ? "file"
        : line.startsWith("@@")
          ? "hunk"
          : line.startsWith("+")
            ? "add"
            : line.startsWith("-")
              ? "del"
              : "ctx";
    return h`<span class="${cls}">${visible(line)}</span>\n`;
  })}</pre>`;
}

/** How many approvals a request's current version has and needs (the two-person rule). */
export function approvalsOf(request: ApprovalRequest): { readonly have: NonNullable<ApprovalRequest["approvals"]>; readonly need: number } {
  // Only approvals of the version that would run count: an edit starts the count again.
  return { have: currentApprovals(request), need: request.approvalsNeeded ?? 1 };
}

/** The concrete preview of one request: summary, target, every fact, the body (a diff as a diff). */
export function renderPreview(request: Pick<ApprovalRequest, "toolId" | "preview" | "target">): Markup {
  const { preview } = request;
  const details = preview.details;
  const recipients = details ? (["to", "cc", "bcc"] as const).flatMap((k) => (Array.isArray(details[k]) ? (details[k] as unknown[]) : [])) : [];
  const body = typeof preview.body === "string" ? preview.body : undefined;
  return h`<section class="preview">
<p class="summary">${visible(preview.summary)}</p>
${request.target === undefined ? "" : h`<p class="target">Target: <strong>${visible(request.target)}</strong></p>`}
${recipients.length > 0 ? h`<p class="recipients">${recipients.length} recipient${recipients.length === 1 ? "" : "s"}, every one listed below</p>` : ""}
${details ? h`<div class="details">${renderValue(details)}</div>` : ""}
${body === undefined ? "" : isDiff(request, body) ? renderDiff(body) : h`<pre class="body">${visible(body)}</pre>`}
</section>`;
}

/** Items of `list` not in `other` (by their JSON), for marking removed and added entries. */
function notIn(list: readonly unknown[], other: readonly unknown[]): Set<number> {
  const keys = new Set(other.map((v) => text(v)));
  return new Set(list.flatMap((v, i) => (keys.has(text(v)) ? [] : [i])));
}

/** One side of a change: absent, a list item by item (the items the other side lacks marked by class), or any value. */
function changeSide(value: unknown, present: boolean, other: unknown, cls: "del" | "add"): Markup {
  if (!present) return h`<span class="none">absent</span>`;
  if (Array.isArray(value) && value.length > 0 && Array.isArray(other)) {
    const marked = notIn(value, other);
    return h`<ol class="list">${value.slice(0, 1000).map((item, i) => h`<li${marked.has(i) ? h` class="${cls}"` : ""}>${renderValue(item, 1)}</li>`)}</ol>`;
  }
  return renderValue(value);
}

/** An approver's changes against the input as asked: member, before, after (lists item by item, hidden characters shown). */
export function renderChanges(changes: readonly ApprovalChange[]): Markup {
  if (changes.length === 0) return h`<p class="none">No changes.</p>`;
  return h`<table class="changes"><thead><tr><th>field</th><th>as asked</th><th>edited</th></tr></thead><tbody>${changes.map(
    (c) =>
      h`<tr data-path="${c.path}"><td><code>${visible(c.path === "" ? "(whole input)" : c.path)}</code></td><td class="before">${changeSide(c.before, "before" in c, c.after, "del")}</td><td class="after">${changeSide(c.after, "after" in c, c.before, "add")}</td></tr>`,
  )}</tbody></table>`;
}
