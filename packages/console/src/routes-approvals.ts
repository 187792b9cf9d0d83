import type { Hono } from "hono";
import { streamSSE } from "hono/streaming";
import type { ApprovalRequest, Approver } from "@toolgate/core";
import type { OperatorScope } from "@toolgate/core/operator";
import { failurePage, forbidden, pageContext, type ConsoleContext, type ConsoleEnv } from "./app.js";
import { currentVersion, notEditable } from "./edit-form.js";
import { csrfForm, h, layout, type Markup } from "./html.js";
import { approvalsOf, renderChanges, renderPreview, visible } from "./preview.js";
import { provenanceBadge, provenanceOf, renderProvenance } from "./provenance.js";

export const REQUEST_ID = /^apr_[A-Za-z0-9_-]{1,100}$/;
const NOTICES: Readonly<Record<string, string>> = {
  granted: "Approved. The caller's retry of the same call runs it, once.",
  needs_another: "Your approval is recorded; this request needs a second, different approver.",
  denied: "Denied. The caller's retry is refused.",
};
export const DEFAULT_TTL_MINUTES = 10;
const MAX_TTL_MINUTES = 24 * 60;

const RISK_RANK: Readonly<Record<string, number>> = { low: 0, medium: 1, high: 2, critical: 3 };

/**
 * Why this approver cannot decide this request, shown instead of the buttons; undefined when it can.
 * Only a hint for the page: the desk and the authority check everything again at decision time.
 */
export function blockedBy(
  r: Pick<ApprovalRequest, "toolId" | "tenant">,
  approver: Approver,
  scope: OperatorScope | undefined,
  risk: string | undefined,
  canDecide: boolean,
): string | undefined {
  if (!canDecide) return "Your role can see this request but not decide it.";
  const family = `${r.toolId.slice(0, r.toolId.indexOf("."))}.*`;
  if (scope?.tools && !scope.tools.includes(r.toolId) && !scope.tools.includes(family)) return `Outside your scope: ${r.toolId} is not among your tools.`;
  if (scope?.tenants && !scope.tenants.includes(r.tenant)) return `Outside your scope: tenant ${r.tenant} is not among yours.`;
  if (scope?.maxRisk && (risk === undefined || (RISK_RANK[risk] ?? 4) > (RISK_RANK[scope.maxRisk] ?? -1)))
    return `Outside your scope: ${r.toolId} is ${risk ?? "of unknown"} risk, above your ${scope.maxRisk}.`;
  return undefined;
}

/** For one signed-in approver: why each request is blocked for it (see `blockedBy`). */
export async function blockerFor(context: ConsoleContext, approver: Approver): Promise<(r: Pick<ApprovalRequest, "toolId" | "tenant">) => string | undefined> {
  const { authority } = context;
  const canDecide = authority.can(approver, "decide");
  const scope = approver.id === "owner" ? undefined : (await authority.operators.get(approver.id))?.scope;
  const risks = new Map(context.inventory().tools.map((t) => [t.id, t.risk]));
  return (r) => blockedBy(r, approver, scope, risks.get(r.toolId), canDecide);
}

/** The version a decision names (hidden in every approve form): what the approver saw. */
export function expectFields(r: ApprovalRequest): Markup {
  const { version, previewHash } = currentVersion(r);
  return h`<input type="hidden" name="version" value="${String(version)}"><input type="hidden" name="previewHash" value="${previewHash}">`;
}

/** `version` and `previewHash` from a form; undefined when neither was sent; an error when malformed. */
export function expectOf(form: Readonly<Record<string, unknown>>): { version: number; previewHash: string } | undefined | { error: string } {
  const { version, previewHash } = form;
  if (version === undefined && previewHash === undefined) return undefined;
  if (typeof version !== "string" || !/^\d{1,6}$/.test(version) || typeof previewHash !== "string" || !/^[0-9a-f]{64}$/.test(previewHash))
    return { error: "The form's version and preview hash are not well formed; reload the page." };
  return { version: Number(version), previewHash };
}

/**
 * An edited request: who edited it, the changes against the input as asked (their values only to
 * someone who may decide it, as the edit pages; others see the changed paths), the preview of the
 * version that would run, and the original's preview folded away.
 */
function editedPreview(r: ApprovalRequest, mayDecide: boolean): Markup {
  if (!r.edit) return renderPreview(r);
  const { edit } = r;
  return h`<p class="edited">Edited by <strong>${visible(edit.by)}</strong> (version ${String(edit.version)}, ${edit.at}): it runs the edited input.</p>
${mayDecide ? renderChanges(edit.changes) : h`<p class="changed">Changed: ${edit.changes.map((c, i) => h`${i > 0 ? ", " : ""}<code>${visible(c.path)}</code>`)}</p>`}
${renderPreview({ toolId: r.toolId, preview: edit.preview, target: edit.target })}
<details class="asked"><summary>The preview of the call as asked</summary>${renderPreview(r)}</details>`;
}

function requestCard(r: ApprovalRequest, ctx: { csrf: string; blocked: string | undefined; approver: Approver }): Markup {
  const { have, need } = approvalsOf(r);
  // The first approver may still deny; approving again is refused by the desk (approval_invalid).
  const mine = have.some((a) => a.by === ctx.approver.id);
  const { callRef } = r;
  const editLink = notEditable(r) === undefined ? h` <a class="edit" href="/approvals/${r.id}/edit">Edit…</a>` : "";
  const provenance = provenanceOf(r.preview);
  return h`<article class="request" id="${r.id}" data-request-id="${r.id}" data-tool-id="${r.toolId}" data-approvals="${have.length}/${need}" data-version="${String(r.edit?.version ?? 0)}">
<header><h2>${visible(r.toolId)}${r.kind === "output" ? " — release a held result" : ""}${provenance ? h` ${provenanceBadge(provenance)}` : ""}</h2>
<p class="meta">Request <code>${r.id}</code> · for <strong>${visible(r.principal)}</strong> in tenant <strong>${visible(r.tenant)}</strong> · asked ${r.createdAt} · expires ${r.expiresAt}${
    callRef ? h` · call ref <code>${visible(callRef)}</code>` : ""
  }</p>
${need > 1 ? h`<p class="approvals">Approvals: ${have.length} of ${need}${have.length > 0 ? h` (${have.map((a) => `${a.by} via ${a.via}`).join(", ")})` : ""}</p>` : ""}</header>
${provenance ? renderProvenance(provenance, r.edit !== undefined) : ""}
${editedPreview(r, ctx.blocked === undefined)}
${
  ctx.blocked === undefined
    ? h`${mine ? h`<p class="notice">You approved this; it needs a second, different approver.</p>` : ""}<div class="decide">${csrfForm(
        `/approvals/${r.id}/approve`,
        ctx.csrf,
        h`${expectFields(r)}<label>Grant valid for <input type="number" name="ttl" min="1" max="${MAX_TTL_MINUTES}" value="${DEFAULT_TTL_MINUTES}" required> minutes</label><button type="submit" class="approve">Approve</button>`,
        "approve",
      )}${editLink}${csrfForm(
        `/approvals/${r.id}/deny`,
        ctx.csrf,
        h`<label>Reason <input type="text" name="reason" maxlength="500" placeholder="why"></label><button type="submit" class="deny">Deny</button>`,
        "deny",
      )}</div>`
    : h`<p class="readonly">${visible(ctx.blocked)}</p>`
}
</article>`;
}

/** Minutes from the form, whole, 1 … 1440; undefined when anything else. */
export function ttlMinutes(value: unknown): number | undefined {
  if (value === undefined || value === "") return DEFAULT_TTL_MINUTES;
  if (typeof value !== "string" || !/^\d{1,4}$/.test(value.trim())) return undefined;
  const minutes = Number(value);
  return minutes >= 1 && minutes <= MAX_TTL_MINUTES ? minutes : undefined;
}

export function approvalRoutes(app: Hono<ConsoleEnv>, context: ConsoleContext) {
  const { gate, authority, watcher } = context;

  app.get("/approvals", async (c) => {
    const ctx = pageContext(c, authority);
    const pending = await gate.approvals.list({ status: ["pending"] });
    const live = pending.filter((r) => Date.parse(r.expiresAt) > context.clock());
    const done = c.req.query("done");
    const id = c.req.query("id");
    const notice = done && NOTICES[done] && id && REQUEST_ID.test(id) ? h`<p class="notice" role="status">${NOTICES[done]!} (<code>${id}</code>)</p>` : "";
    const approver = ctx.approver!;
    const blocked = await blockerFor(context, approver);
    return c.html(
      layout(
        "Approvals",
        ctx,
        h`${notice}<p><span id="pending-count">${live.length}</span> pending · <span id="live" aria-live="polite">connecting</span></p>
<div id="queue"><p class="empty"${live.length > 0 ? " hidden" : ""}>Nothing waits for a human.</p>${live.map((r) => requestCard(r, { csrf: ctx.csrf!, approver, blocked: blocked(r) }))}</div>`,
        "/approvals",
      ),
    );
  });

  app.post("/approvals/:id/approve", async (c) => {
    const approver = c.get("approver");
    if (!authority.can(approver, "decide")) return forbidden(c, authority, "Your role cannot approve requests.");
    const id = c.req.param("id");
    if (!REQUEST_ID.test(id)) return c.html(layout("Not found", pageContext(c, authority), h`<p>No such request.</p>`), 404);
    const minutes = ttlMinutes(c.get("form").ttl);
    if (minutes === undefined)
      return c.html(layout("Not done", pageContext(c, authority), h`<p>The grant's lifetime must be 1 to ${MAX_TTL_MINUTES} whole minutes.</p>`), 400);
    const expect = expectOf(c.get("form"));
    if (expect && "error" in expect) return c.html(layout("Not done", pageContext(c, authority), h`<p>${expect.error}</p>`), 400);
    try {
      // The session's approver, never a name from the form; the desk re-checks the operator and its scope,
      // and the journal the version the page showed (a request edited since is refused as stale).
      const result = await gate.approvals.grant(id, { by: approver, ttlMs: minutes * 60_000, ...(expect ? { expect } : {}) });
      const done = result.status === "needs_another" ? "needs_another" : "granted";
      return c.redirect(`/approvals?done=${done}&id=${encodeURIComponent(id)}`, 303);
    } catch (error) {
      return failurePage(c, authority, error);
    }
  });

  app.post("/approvals/:id/deny", async (c) => {
    const approver = c.get("approver");
    if (!authority.can(approver, "decide")) return forbidden(c, authority, "Your role cannot deny requests.");
    const id = c.req.param("id");
    if (!REQUEST_ID.test(id)) return c.html(layout("Not found", pageContext(c, authority), h`<p>No such request.</p>`), 404);
    const given = c.get("form").reason;
    const reason = typeof given === "string" && given.trim() !== "" ? given.trim().slice(0, 500) : "denied in the console";
    try {
      await gate.approvals.deny(id, { by: approver, reason });
      return c.redirect(`/approvals?done=denied&id=${encodeURIComponent(id)}`, 303);
    } catch (error) {
      return failurePage(c, authority, error);
    }
  });

  // The live queue: an `approvals` event whenever the pending set (or a request's approvals) changes.
  app.get("/events", (c) =>
    streamSSE(c, async (stream) => {
      const session = c.get("session");
      let closed = false;
      const changes: string[] = [];
      let wake: (() => void) | undefined;
      const unsubscribe = watcher.subscribe((change) => {
        changes.push(JSON.stringify({ pending: change.pending.length }));
        wake?.();
      });
      stream.onAbort(() => {
        closed = true;
        wake?.();
      });
      try {
        await stream.writeSSE({ event: "ready", data: "{}" });
        while (!closed) {
          if (changes.length === 0)
            await new Promise<void>((resolve) => {
              wake = resolve;
              setTimeout(resolve, 15_000).unref();
            });
          wake = undefined;
          // The session is read again before anything is sent: a signed-out or disabled operator's stream ends.
          if (closed || !(await authority.session(session).catch(() => undefined))) break;
          const next = changes.shift();
          if (next !== undefined) await stream.writeSSE({ event: "approvals", data: next });
          else await stream.write(": keep-alive\n\n");
        }
      } finally {
        unsubscribe();
      }
    }),
  );
}
