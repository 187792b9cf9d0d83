/**
 * Where a request's arguments came from, as the gate's provenance step judged them. The `why`,
 * `found` and `described` strings can carry someone else's text (a sender's display name, a
 * subject): they are shown as escaped text with hidden characters marked, like every preview.
 */
import type { CallProvenance, FieldProvenance, InventoryEntry, ProvenanceSource } from "@toolgate/core/operator";
import { h, type Markup } from "./html.js";
import { visible } from "./preview.js";

const VERDICTS = new Set(["trusted", "new", "untrusted", "violation"]);
const LABELS = new Set(["trusted", "untrusted", "new"]);

/** The request's provenance when it has a usable one (a journal row from an older or foreign writer may not). */
export function provenanceOf(preview: { readonly provenance?: unknown }): CallProvenance | undefined {
  const p = preview.provenance as Partial<CallProvenance> | undefined;
  if (p === null || typeof p !== "object" || typeof p.verdict !== "string" || !VERDICTS.has(p.verdict)) return undefined;
  return p as CallProvenance;
}

const strings = (list: unknown): string[] => (Array.isArray(list) ? list.filter((s): s is string => typeof s === "string") : []);
// A class name from a closed set: anything else in a row (it came from the journal) is shown as "unknown".
const known = (value: unknown, set: ReadonlySet<string>): string => (typeof value === "string" && set.has(value) ? value : "unknown");

/** A small badge for the queue: "provenance: violation". */
export function provenanceBadge(p: CallProvenance): Markup {
  const verdict = known(p.verdict, VERDICTS);
  return h`<span class="provenance-badge ${verdict}" data-provenance="${verdict}">provenance: ${verdict}</span>`;
}

function source(s: ProvenanceSource): Markup {
  if (s.kind === "trusted") return h`<li class="source trusted">trusted text${s.label ? h` <q>${visible(String(s.label))}</q>` : ""}</li>`;
  const who = s.principal ? h` for <strong>${visible(String(s.principal))}</strong>` : "";
  return h`<li class="source ${s.untrusted ? "untrusted" : "output"}">${s.untrusted ? "untrusted " : ""}output of <code>${visible(String(s.toolId ?? "?"))}</code>${who}${
    s.invocationId ? h` (<code>${visible(String(s.invocationId))}</code>)` : ""
  }${s.described ? h`: <span class="described">${visible(String(s.described))}</span>` : ""}</li>`;
}

function row(f: FieldProvenance): Markup {
  const label = known(f.label, LABELS);
  const found = strings(f.found);
  const sources = Array.isArray(f.sources) ? f.sources : [];
  return h`<tr class="${label}" data-path="${String(f.path)}"><td><code>${visible(f.path === "" ? "/" : String(f.path))}</code></td><td><span class="label ${label}">${label}</span></td><td>${
    f.role ? visible(String(f.role)) : h`<span class="none">—</span>`
  }</td><td class="why">${visible(String(f.why ?? ""))}</td><td class="found">${
    found.length > 0 ? h`<ul>${found.map((s) => h`<li><code>${visible(s)}</code></li>`)}</ul>` : h`<span class="none">—</span>`
  }</td><td class="sources">${sources.length > 0 ? h`<ul>${sources.map(source)}</ul>` : h`<span class="none">none</span>`}</td></tr>`;
}

const ACTIONS: Readonly<Record<string, string>> = {
  escalated: "The tool would not ask for approval; provenance asks you.",
  waived: "Every judged value came from trusted text: the tool's own approval was waived.",
  refused: "Refused under the profile.",
};

/** The "Where the arguments came from" section: a warning listing the violations, then every judged field. */
export function renderProvenance(p: CallProvenance, edited = false): Markup {
  const verdict = known(p.verdict, VERDICTS);
  const violations = strings(p.violations);
  const fields = Array.isArray(p.fields) ? p.fields : [];
  const action = typeof p.action === "string" ? ACTIONS[p.action] : undefined;
  return h`<section class="provenance ${verdict}" data-provenance="${verdict}">
<h3>Where the arguments came from</h3>
${
  verdict === "violation"
    ? h`<div class="provenance-warning" role="alert"><p><strong>Warning: data from someone else steers this call.</strong> Approve only if you meant this destination.</p><ul>${violations.map(
        (v) => h`<li>${visible(v)}</li>`,
      )}</ul></div>`
    : h`<p class="verdict">Verdict: <strong>${verdict}</strong></p>`
}
${action ? h`<p class="action">${action}</p>` : ""}
${edited ? h`<p class="edited-note">Judged on the call as asked; the values an approver changed were not judged.</p>` : ""}
${
  fields.length > 0
    ? h`<table class="provenance-fields"><thead><tr><th>field</th><th>label</th><th>role</th><th>why</th><th>found</th><th>sources</th></tr></thead><tbody>${fields.map(row)}</tbody></table>`
    : h`<p class="none">No field needed a judgement.</p>`
}
</section>`;
}

/** The inventory's provenance of a tool: the manifest's rules, then what each reaching profile does with a judgement. */
export function provenanceCell(t: Pick<InventoryEntry, "provenance">): Markup | string {
  const rules = t.provenance?.rules;
  const profiles = t.provenance?.profiles ?? [];
  const items: Markup[] = [];
  if (rules?.destinations?.length) items.push(h`<li>destinations ${rules.destinations.map((p) => h`<code>${p}</code> `)}</li>`);
  if (rules?.content?.length) items.push(h`<li>content ${rules.content.map((p) => h`<code>${p}</code> `)}</li>`);
  for (const p of profiles) {
    const adds = (what: string, list: readonly string[]) => (list.length > 0 ? h`, adds ${what} ${list.map((a) => h`<code>${a}</code> `)}` : "");
    items.push(
      h`<li><code>${p.profile}</code>: ${p.onViolation === "refuse" ? "refuses a violation" : "asks on a violation"}${
        p.waivable ? ", trusted calls skip approval" : ""
      }${adds("destinations", p.added.destinations)}${adds("content", p.added.content)}</li>`,
    );
  }
  return items.length === 0 ? "-" : h`<ul class="provenance">${items}</ul>`;
}
