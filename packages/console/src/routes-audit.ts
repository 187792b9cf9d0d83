import type { Hono } from "hono";
import type { AuditRecord, Journal } from "@toolgate/core";
import { verifyJournalRows, type JournalRowsVerdict } from "@toolgate/core/operator";
import { pageContext, type ConsoleContext, type ConsoleEnv } from "./app.js";
import { csrfForm, h, layout, table, text, type Markup } from "./html.js";
import { visible } from "./preview.js";
import { blockerFor } from "./routes-approvals.js";

const PAGE = 1000;
const SHOWN = 200;

export interface AuditFilter {
  readonly tool?: string;
  readonly principal?: string;
  readonly tenant?: string;
  readonly from?: number;
  readonly to?: number;
}

/** Every audit record, page by page. */
async function* records(journal: Journal, from = 0): AsyncGenerator<AuditRecord> {
  let after = from;
  for (;;) {
    const page = await journal.readAudit({ afterSeq: after, limit: PAGE });
    if (page.length === 0) return;
    yield* page;
    after = page[page.length - 1]!.seq;
  }
}

/** A time filter: an ISO date or time (a datetime-local field's value is read as UTC); undefined when empty; NaN when unreadable. */
function timeOf(value: string | undefined, endOfDay: boolean): number | undefined {
  if (value === undefined || value.trim() === "") return undefined;
  const v = value.trim();
  const withZone = /^\d{4}-\d{2}-\d{2}$/.test(v) ? `${v}T${endOfDay ? "23:59:59.999" : "00:00:00"}Z` : /[zZ]|[+-]\d{2}:?\d{2}$/.test(v) ? v : `${v}Z`;
  return Date.parse(withZone);
}

export function parseAuditFilter(query: (name: string) => string | undefined): AuditFilter | { readonly error: string } {
  const from = timeOf(query("from"), false);
  const to = timeOf(query("to"), true);
  if (Number.isNaN(from) || Number.isNaN(to)) return { error: "from and to must be dates or times like 2026-12-01 or 2026-12-01T16:00" };
  const pick = (name: string) => {
    const value = query(name)?.trim();
    return value ? value.slice(0, 200) : undefined;
  };
  const filter: Record<string, string | number> = {};
  for (const [key, value] of Object.entries({ tool: pick("tool"), principal: pick("principal"), tenant: pick("tenant"), from, to }))
    if (value !== undefined) filter[key] = value;
  return filter as AuditFilter;
}

export function matches(record: AuditRecord, filter: AuditFilter): boolean {
  if (filter.tool !== undefined && record.toolId !== filter.tool) return false;
  if (filter.principal !== undefined && record.principal !== filter.principal) return false;
  if (filter.tenant !== undefined && record.tenant !== filter.tenant) return false;
  const at = Date.parse(record.at);
  if (filter.from !== undefined && !(at >= filter.from)) return false;
  if (filter.to !== undefined && !(at <= filter.to)) return false;
  return true;
}

/** An edit's own facts: the version, the changed paths, the input hashes before and after (short). */
function editFacts(data: Readonly<Record<string, unknown>>): string[] {
  const parts: string[] = [];
  if (typeof data.version === "number" && data.version > 0) parts.push(`version=${data.version}`);
  if (Array.isArray(data.changes))
    parts.push(
      `changed=${data.changes
        .map((c: unknown) => text((c as { path?: unknown } | null)?.path ?? "?"))
        .join(",")
        .slice(0, 200)}`,
    );
  for (const [key, label] of [
    ["fromInputHash", "from"],
    ["inputHash", "input"],
    ["askedInputHash", "asked"],
  ] as const) {
    const value = data[key];
    if (typeof value === "string" && (key !== "inputHash" || data.fromInputHash !== undefined)) parts.push(`${label}=${value.slice(0, 12)}`);
  }
  return parts;
}

/**
 * An edit's changes hold values of the input as asked and as edited: only someone who may decide
 * the request sees them (as on the approvals and edit pages); anyone else gets the changed paths.
 * The record so withheld no longer matches its MAC (`changesWithheld` says why).
 */
function withheldFrom(record: AuditRecord, blocked: (r: { toolId: string; tenant: string }) => string | undefined): AuditRecord {
  if (record.type !== "approval.edited" || !Array.isArray(record.data.changes)) return record;
  if (blocked({ toolId: record.toolId ?? "", tenant: record.tenant ?? "" }) === undefined) return record;
  const changes = record.data.changes.map((c: unknown) => ({ path: text((c as { path?: unknown } | null)?.path ?? "?") }));
  return { ...record, data: { ...record.data, changes, changesWithheld: true } };
}

function facts(data: Readonly<Record<string, unknown>>): string {
  const parts: string[] = [];
  for (const key of ["code", "state", "result", "requestId", "approver", "via", "complete", "target", "key", "operator", "outcome", "reason"]) {
    const value = data[key];
    if (value !== undefined && value !== null) parts.push(`${key}=${typeof value === "string" ? value.slice(0, 60) : text(value)}`);
  }
  return [...parts, ...editFacts(data)].join(" ");
}

function verdictBlock(verdict: JournalRowsVerdict): Markup {
  if (verdict.ok && verdict.chain.ok)
    return h`<div class="ok" id="verify-result" data-ok="true"><p><strong>Verified.</strong> The audit chain holds ${verdict.chain.count} events (head #${verdict.chain.head.seq} <code>${verdict.chain.head.mac.slice(0, 16)}</code>); ${verdict.entries} outbox entries, ${verdict.requests} approval requests and ${verdict.records} authority records match their seals.</p></div>`;
  const chain = verdict.chain.ok ? "" : h`<p>Audit chain broken at #${verdict.chain.seq}: ${verdict.chain.reason}</p>`;
  return h`<div class="fail" id="verify-result" data-ok="false"><p><strong>Verification failed.</strong></p>${chain}${
    verdict.problems.length > 0
      ? table(
          ["row", "id", "problem", "detail"],
          verdict.problems.slice(0, 100).map((p) => [p.kind, visible(p.id), p.problem, visible(p.detail)]),
        )
      : ""
  }</div>`;
}

export function auditRoutes(app: Hono<ConsoleEnv>, context: ConsoleContext) {
  const { gate, authority } = context;
  const page = async (ctx: ReturnType<typeof pageContext>, query: (n: string) => string | undefined, verdict?: JournalRowsVerdict) => {
    const filter = parseAuditFilter(query);
    const shown: AuditRecord[] = [];
    let total = 0;
    // Unfiltered, only the newest events are read; a filter reads the whole chain.
    const unfiltered = !("error" in filter) && Object.keys(filter).length === 0;
    const head = unfiltered ? (await gate.journal.head()).seq : 0;
    if (!("error" in filter))
      for await (const record of records(gate.journal, Math.max(0, head - SHOWN))) {
        if (!matches(record, filter)) continue;
        total++;
        shown.push(record);
        if (shown.length > SHOWN) shown.shift();
      }
    if (unfiltered) total = head;
    const value = (name: string) => query(name) ?? "";
    const exportQuery = new URLSearchParams(
      Object.entries({ tool: value("tool"), principal: value("principal"), tenant: value("tenant"), from: value("from"), to: value("to") }).filter(
        ([, v]) => v !== "",
      ),
    ).toString();
    return layout(
      "Audit",
      ctx,
      h`${verdict ? verdictBlock(verdict) : ""}
${csrfForm("/audit/verify", ctx.csrf!, h`<button type="submit">Verify the chain and every stored row</button>`, "verify")}
<form method="get" action="/audit" class="filters">
<label>Tool <input name="tool" value="${value("tool")}"></label>
<label>Principal <input name="principal" value="${value("principal")}"></label>
<label>Tenant <input name="tenant" value="${value("tenant")}"></label>
<label>From <input name="from" value="${value("from")}" placeholder="2026-12-01 or …T16:00 (UTC)"></label>
<label>To <input name="to" value="${value("to")}" placeholder="2026-12-01 (UTC)"></label>
<button type="submit">Filter</button> <a href="/audit/export${exportQuery ? `?${exportQuery}` : ""}" download>Export as JSON lines</a></form>
${"error" in filter ? h`<p class="error">${filter.error}</p>` : h`<p>${total} matching event${total === 1 ? "" : "s"}${total > shown.length ? `, the newest ${shown.length} shown` : ""}.</p>`}
${table(
  ["#", "at", "event", "tool", "principal", "tenant", "facts"],
  shown
    .reverse()
    .map((r) => [String(r.seq), r.at, r.type, visible(r.toolId ?? ""), visible(r.principal ?? ""), visible(r.tenant ?? ""), visible(facts(r.data))]),
  "audit",
)}`,
      "/audit",
    );
  };

  app.get("/audit", async (c) => c.html(await page(pageContext(c, authority), (n) => c.req.query(n))));

  // Verifying changes nothing, but it walks the whole journal: a POST, so no link or image can start it.
  app.post("/audit/verify", async (c) => {
    const verdict = await verifyJournalRows(gate.journal);
    return c.html(await page(pageContext(c, authority), () => undefined, verdict));
  });

  app.get("/audit/export", async (c) => {
    const filter = parseAuditFilter((n) => c.req.query(n));
    if ("error" in filter) return c.text(filter.error, 400);
    const blocked = await blockerFor(context, c.get("approver"));
    // Streamed page by page: a long journal is never held in memory as one text.
    const source = records(gate.journal);
    const encoder = new TextEncoder();
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        const lines: string[] = [];
        while (lines.length < 500) {
          const next = await source.next();
          if (next.done) break;
          if (matches(next.value, filter)) lines.push(`${JSON.stringify(withheldFrom(next.value, blocked))}\n`);
        }
        if (lines.length > 0) controller.enqueue(encoder.encode(lines.join("")));
        else controller.close();
      },
      async cancel() {
        await source.return(undefined);
      },
    });
    return c.body(body, 200, {
      "content-type": "application/x-ndjson; charset=utf-8",
      "content-disposition": `attachment; filename="toolgate-audit.jsonl"`,
    });
  });
}
