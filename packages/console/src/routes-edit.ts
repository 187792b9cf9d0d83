// Approve with edits: the edit form (GET), the check page the desk's recomputed preview makes of it
// (POST /edit, writes nothing) and the approval of exactly that edit (POST /approve-edited). The
// pages hold no state: the check page posts back the canonical edited input, the version it started
// from and the preview hash shown, and the desk recomputes all of it and refuses what moved.
import type { Context, Hono } from "hono";
import { canonicalJson, ToolError, type ApprovalRequest } from "@toolgate/core";
import type { EditOptions, EditPreview } from "@toolgate/core/operator";
import { failurePage, forbidden, pageContext, type ConsoleContext, type ConsoleEnv } from "./app.js";
import { currentVersion, editFields, notEditable, readEditForm, renderFields } from "./edit-form.js";
import { csrfForm, h, layout, text, type Child } from "./html.js";
import { renderChanges, renderPreview, visible } from "./preview.js";
import { blockerFor, DEFAULT_TTL_MINUTES, expectOf, REQUEST_ID, ttlMinutes } from "./routes-approvals.js";

const MAX_TTL_MINUTES = 24 * 60;

/** A page with a status: refusals of the form itself, before the desk is asked. */
function page(c: Context<ConsoleEnv>, context: ConsoleContext, status: 200 | 400 | 403 | 404 | 409, title: string, body: Child) {
  return c.html(layout(title, pageContext(c, context.authority), body), status);
}

/** A refusal of the desk, with the paths or issues it named (escaped) besides the usual message. */
function refusal(c: Context<ConsoleEnv>, context: ConsoleContext, error: unknown, id: string) {
  if (!(error instanceof ToolError) || !["edit_refused", "invalid_input", "approval_invalid"].includes(error.code))
    return failurePage(c, context.authority, error);
  const paths = Array.isArray(error.details?.["paths"]) ? (error.details["paths"] as unknown[]).map((p) => text(p)) : [];
  return page(
    c,
    context,
    error.code === "approval_invalid" ? 409 : 400,
    "Edit refused",
    h`<p class="error" data-code="${error.code}">${visible(error.message)} (${error.code})</p>${
      paths.length > 0 ? h`<p>Fields: ${paths.map((p, i) => h`${i > 0 ? ", " : ""}<code>${visible(p)}</code>`)}</p>` : ""
    }<p>Nothing was approved. <a href="/approvals/${id}/edit">Edit again</a> · <a href="/approvals#${id}">Back to approvals</a></p>`,
  );
}

/** The request, when this signed-in approver may decide and edit it; otherwise the page that says why not. */
async function editableRequest(c: Context<ConsoleEnv>, context: ConsoleContext): Promise<ApprovalRequest | Response> {
  const approver = c.get("approver");
  if (!context.authority.can(approver, "decide")) return forbidden(c, context.authority, "Your role cannot edit or decide requests.");
  const id = c.req.param("id") ?? "";
  if (!REQUEST_ID.test(id)) return page(c, context, 404, "Not found", h`<p>No such request.</p>`);
  const request = await context.gate.approvals.get(id);
  if (!request) return page(c, context, 404, "Not found", h`<p>No such request.</p>`);
  // The input as asked is shown only to someone who may decide this very request.
  const blocked = (await blockerFor(context, approver))(request);
  if (blocked !== undefined) return forbidden(c, context.authority, blocked);
  const why = notEditable(request);
  if (why !== undefined) return page(c, context, 409, "Cannot be edited", h`<p class="message">${visible(why)}</p>`);
  return request;
}

function fieldsOf(context: ConsoleContext, r: ApprovalRequest) {
  const base = currentVersion(r);
  return { base, fields: editFields(r.editable as readonly string[], base.input, context.gate.registry.describe(r.toolId)?.inputSchema) };
}

/** The check page: the changes, the recomputed preview, and one button that approves exactly this. */
function checkPage(r: ApprovalRequest, checked: EditPreview, expect: EditOptions["expect"], csrf: string): Child {
  return h`<article class="request check" data-request-id="${r.id}" data-tool-id="${r.toolId}">
<header><h2>${visible(r.toolId)}: check the edited call</h2>
<p class="meta">Request <code>${r.id}</code> · for <strong>${visible(r.principal)}</strong> in tenant <strong>${visible(r.tenant)}</strong> · from version ${String(
    expect.version,
  )}</p></header>
<h3>What you changed</h3>${renderChanges(checked.changes)}
${
  checked.findings.length > 0
    ? h`<p class="error">The edited input reads like instructions (${checked.findings.map((f) => h`<code>${visible(`${f.rule}${f.path ? ` at ${f.path}` : ""}`)}</code> `)}); check it is data.</p>`
    : ""
}
<h3>The call that will run</h3>${renderPreview({ toolId: r.toolId, preview: checked.preview, target: checked.target })}
<div class="decide">${csrfForm(
    `/approvals/${r.id}/approve-edited`,
    csrf,
    h`<input type="hidden" name="input" value="${canonicalJson(checked.input)}"><input type="hidden" name="version" value="${String(
      expect.version,
    )}"><input type="hidden" name="previewHash" value="${expect.previewHash}"><input type="hidden" name="editedPreviewHash" value="${checked.previewHash}"><label>Grant valid for <input type="number" name="ttl" min="1" max="${MAX_TTL_MINUTES}" value="${DEFAULT_TTL_MINUTES}" required> minutes</label><button type="submit" class="approve">Approve edited call</button>`,
    "approve-edited",
  )} <a href="/approvals/${r.id}/edit">Edit again</a> · <a href="/approvals#${r.id}">Back to approvals</a></div>
</article>`;
}

export function editRoutes(app: Hono<ConsoleEnv>, context: ConsoleContext) {
  app.get("/approvals/:id/edit", async (c) => {
    const request = await editableRequest(c, context);
    if (request instanceof Response) return request;
    const { base, fields } = fieldsOf(context, request);
    const csrf = c.get("csrf");
    return page(
      c,
      context,
      200,
      "Edit a call",
      h`<article class="request edit" data-request-id="${request.id}" data-tool-id="${request.toolId}">
<header><h2>${visible(request.toolId)}</h2><p class="meta">Request <code>${request.id}</code> · for <strong>${visible(
        request.principal,
      )}</strong> in tenant <strong>${visible(request.tenant)}</strong> · editing version ${String(base.version)}</p></header>
<details class="asked"><summary>The preview now</summary>${renderPreview(
        request.edit ? { toolId: request.toolId, preview: request.edit.preview, target: request.edit.target } : request,
      )}</details>
<p>Change the fields below, then check the edited call: its preview is recomputed and shown before you approve it. Text fields are taken as typed; the others are JSON.</p>
${csrfForm(
  `/approvals/${request.id}/edit`,
  csrf,
  h`<input type="hidden" name="version" value="${String(base.version)}"><input type="hidden" name="previewHash" value="${base.previewHash}">${renderFields(
    fields,
    base.input,
  )}<button type="submit">Check the edited call</button>`,
  "edit",
)}<p><a href="/approvals#${request.id}">Back to approvals</a></p></article>`,
    );
  });

  app.post("/approvals/:id/edit", async (c) => {
    const request = await editableRequest(c, context);
    if (request instanceof Response) return request;
    const form = c.get("form");
    const expect = expectOf(form);
    if (!expect || "error" in expect)
      return page(c, context, 400, "Not done", h`<p>${expect?.error ?? "The form does not say which version it edits; reload it."}</p>`);
    const { base, fields } = fieldsOf(context, request);
    const read = readEditForm(form, fields, base.input);
    if ("error" in read) return page(c, context, 400, "Not done", h`<p class="error">${visible(read.error)}</p><p>Nothing was changed.</p>`);
    try {
      const checked = await context.gate.approvals.previewEdit(request.id, { by: c.get("approver"), input: read.input, expect });
      return page(c, context, 200, "Check the edited call", checkPage(request, checked, expect, c.get("csrf")));
    } catch (error) {
      return refusal(c, context, error, request.id);
    }
  });

  app.post("/approvals/:id/approve-edited", async (c) => {
    const request = await editableRequest(c, context);
    if (request instanceof Response) return request;
    const form = c.get("form");
    const expect = expectOf(form);
    const minutes = ttlMinutes(form.ttl);
    const shown = form.editedPreviewHash;
    if (!expect || "error" in expect || typeof shown !== "string" || !/^[0-9a-f]{64}$/.test(shown) || typeof form.input !== "string")
      return page(c, context, 400, "Not done", h`<p>This form is not a check page's; open the edit form again.</p>`);
    if (minutes === undefined) return page(c, context, 400, "Not done", h`<p>The grant's lifetime must be 1 to ${MAX_TTL_MINUTES} whole minutes.</p>`);
    let input: unknown;
    try {
      input = JSON.parse(form.input) as unknown;
    } catch {
      return page(c, context, 400, "Not done", h`<p>The edited input is not JSON; open the edit form again.</p>`);
    }
    try {
      // The session's approver; the desk recomputes the preview of `input` and refuses unless it is the one shown.
      const result = await context.gate.approvals.grant(request.id, {
        by: c.get("approver"),
        ttlMs: minutes * 60_000,
        expect,
        edit: { input, previewHash: shown },
      });
      const done = result.status === "needs_another" ? "needs_another" : "granted";
      return c.redirect(`/approvals?done=${done}&id=${encodeURIComponent(request.id)}`, 303);
    } catch (error) {
      return refusal(c, context, error, request.id);
    }
  });
}
