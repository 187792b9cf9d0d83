import { writeFile } from "node:fs/promises";
import { type AuditRecord } from "@toolgate/core";
import { verifyAuditChain } from "@toolgate/core/operator";
import { CliFailure, EXIT, progress, table, type Io } from "../output.js";
import type { Runtime } from "../runtime.js";

const PAGE = 1000;

/** Every audit record, read page by page. */
async function* records(runtime: Runtime): AsyncGenerator<AuditRecord> {
  let after = 0;
  for (;;) {
    const page = await runtime.journal.readAudit({ afterSeq: after, limit: PAGE });
    if (page.length === 0) return;
    yield* page;
    after = page[page.length - 1]!.seq;
  }
}

export async function auditTail(runtime: Runtime, options: { lines: number; json: boolean }, io: Io): Promise<number> {
  const head = await runtime.journal.head();
  const rows = await runtime.journal.readAudit({ afterSeq: Math.max(0, head.seq - options.lines) });
  if (options.json) io.out(rows.map((r) => JSON.stringify(r)).join("\n"));
  else
    io.out(
      table(
        ["#", "at", "event", "tool", "principal", "facts"],
        rows.map((r) => [String(r.seq), r.at, r.type, r.toolId ?? "", r.principal ?? "", summarize(r.data)]),
      ),
    );
  return EXIT.ok;
}

export async function auditVerify(runtime: Runtime, options: { json: boolean }, io: Io): Promise<number> {
  const bar = progress(io, "verifying");
  let count = 0;
  const all: AuditRecord[] = [];
  for await (const record of records(runtime)) {
    all.push(record);
    bar.update(++count);
  }
  bar.end();
  const verdict = verifyAuditChain(all, { key: runtime.auditKey, expectedHead: await runtime.journal.head() });
  if (options.json) io.out(JSON.stringify(verdict));
  if (!verdict.ok) {
    const bad = all.find((r) => r.seq === verdict.seq);
    throw new CliFailure(`audit chain broken at #${verdict.seq}${bad ? ` (${bad.type} ${bad.toolId ?? ""})` : ""}: ${verdict.reason}`, EXIT.failed);
  }
  if (!options.json) io.out(`audit chain verified: ${verdict.count} events, head #${verdict.head.seq} ${verdict.head.mac.slice(0, 16)}`);
  return EXIT.ok;
}

export async function auditExport(runtime: Runtime, options: { out?: string }, io: Io): Promise<number> {
  const lines: string[] = [];
  for await (const record of records(runtime)) lines.push(JSON.stringify(record));
  const text = lines.length > 0 ? `${lines.join("\n")}\n` : "";
  if (options.out) {
    await writeFile(options.out, text, { mode: 0o600 });
    io.err(`exported ${lines.length} events to ${options.out}`);
  } else io.out(text.trimEnd());
  return EXIT.ok;
}

function summarize(data: Readonly<Record<string, unknown>>): string {
  const parts: string[] = [];
  for (const key of ["code", "state", "result", "requestId", "approver", "target", "key"]) {
    const value = data[key];
    if (value !== undefined && value !== null) parts.push(`${key}=${typeof value === "string" ? value.slice(0, 40) : JSON.stringify(value)}`);
  }
  return parts.join(" ");
}
