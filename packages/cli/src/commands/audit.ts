import { existsSync, realpathSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { basename, dirname, isAbsolute, join, relative, resolve } from "node:path";
import { InvalidArgumentError } from "commander";
import { ToolError, type AuditRecord, type Journal } from "@toolgate/core";
import {
  checkPinnedHeads,
  readWitness,
  verifyAuditChain,
  verifyJournalRows,
  withWitness,
  type JournalRowsVerdict,
  type PinnedHead,
} from "@toolgate/core/operator";
import type { ToolgateConfig } from "../config.js";
import { CliFailure, EXIT, progress, table, type Io } from "../output.js";
import { printable } from "../printable.js";
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
        rows.map((r) => [String(r.seq), r.at, r.type, r.toolId ?? "", r.principal ?? "", printable(summarize(r))]),
      ),
    );
  return EXIT.ok;
}

/** `toolgate audit head`: the newest event as `SEQ:MAC`, the form `--expected-head` takes. */
export async function auditHead(runtime: Runtime, options: { json: boolean }, io: Io): Promise<number> {
  const head = await runtime.journal.head();
  if (!options.json) io.out(`${head.seq}:${head.mac}`);
  else {
    const [event] = head.seq === 0 ? [] : await runtime.journal.readAudit({ afterSeq: head.seq - 1, limit: 1 });
    io.out(JSON.stringify({ seq: head.seq, mac: head.mac, at: event?.at ?? null, journal: runtime.journal.kind }));
  }
  return EXIT.ok;
}

const HEAD_FORMAT = /^(\d{1,15}):([0-9a-fA-F]{64})$/;

/** Parse `--expected-head SEQ:MAC` as `toolgate audit head` prints it; anything else is a usage error. */
export function parseExpectedHead(text: string): PinnedHead {
  const match = HEAD_FORMAT.exec(text.trim());
  if (!match || !Number.isSafeInteger(Number(match[1])))
    throw new InvalidArgumentError("expected SEQ:MAC, the event's sequence number and its 64-hex-digit MAC, as `toolgate audit head` prints them");
  return { seq: Number(match[1]), mac: match[2]!.toLowerCase() };
}

export interface AuditVerifyOptions {
  readonly json: boolean;
  /** A head recorded elsewhere: the chain must hold that event at that seq. */
  readonly expectedHead?: PinnedHead;
  /** A witness file: every checkpoint in it must be in the chain. */
  readonly witness?: string;
}

export async function auditVerify(runtime: Runtime, options: AuditVerifyOptions, io: Io): Promise<number> {
  // The witness named on the command line, else the one the composition file writes (journal.witness).
  const configured = runtime.config.journal?.witness;
  const witnessFile = options.witness ?? (configured === undefined ? undefined : resolve(runtime.baseDir, configured));
  const missingConfigured = options.witness === undefined && witnessFile !== undefined && !existsSync(witnessFile);
  const witness = witnessFile === undefined || missingConfigured ? undefined : await readWitness(witnessFile, runtime.auditKey);
  const bar = progress(io, "verifying");
  let count = 0;
  const all: AuditRecord[] = [];
  for await (const record of records(runtime)) {
    all.push(record);
    bar.update(++count);
  }
  bar.end();
  // The chain's own end proves nothing about a cut tail; only a head kept elsewhere does.
  const verdict = verifyAuditChain(all, { key: runtime.auditKey });
  const pinned = verdict.ok && options.expectedHead ? checkPinnedHeads(all, [options.expectedHead]) : undefined;
  const witnessed = verdict.ok && witness?.ok ? checkPinnedHeads(all, witness.checkpoints) : undefined;
  // Outbox entries and approval requests against their seals and the events that wrote them.
  const rows = verdict.ok ? await verifyJournalRows(runtime.journal) : undefined;
  if (options.json)
    io.out(
      JSON.stringify({
        ...verdict,
        ...(rows ? { rows } : {}),
        ...(pinned ? { expectedHead: pinned } : {}),
        ...(witness ? { witness: witnessed ?? witness } : {}),
      }),
    );
  // Every check that failed, the chain's first: a cut tail can break rows as well as a pinned head.
  const failures: string[] = [];
  if (!verdict.ok) {
    const bad = all.find((r) => r.seq === verdict.seq);
    failures.push(`audit chain broken at #${verdict.seq}${bad ? ` (${bad.type} ${bad.toolId ?? ""})` : ""}: ${verdict.reason}`);
  }
  if (rows && !rows.ok) failures.push(rowsFailure(rows));
  if (pinned && !pinned.ok) failures.push(`audit chain does not hold the expected head: ${pinned.reason}`);
  if (missingConfigured && all.length > 0)
    failures.push(
      `the witness file ${witnessFile} (journal.witness) does not exist, but the chain holds ${all.length} events: it was removed or never written`,
    );
  if (witness && !witness.ok) failures.push(`witness file ${witnessFile} line ${witness.line}: ${witness.reason}`);
  if (witnessed && !witnessed.ok) failures.push(`audit chain does not hold a checkpoint of the witness file ${witnessFile}: ${witnessed.reason}`);
  if (failures.length > 0)
    throw new CliFailure(
      failures.join("\ntoolgate: "),
      EXIT.failed,
      "toolgate audit verify --json lists every problem; toolgate audit export keeps the evidence (docs/operating.md says what to do next)",
    );
  if (!options.json && verdict.ok) {
    const lines = [`audit chain verified: ${verdict.count} events, head #${verdict.head.seq} ${verdict.head.mac.slice(0, 16)}`];
    if (rows) lines.push(`stored rows verified: ${rows.entries} outbox entries, ${rows.requests} approval requests`);
    if (pinned?.ok) lines.push(`expected head #${options.expectedHead!.seq} found; ${pinned.following} events follow it`);
    if (witnessed?.ok)
      lines.push(
        witnessed.last
          ? `witness: ${witnessed.checked} checkpoints found in the chain, the last #${witnessed.last.seq}; ${witnessed.following} events follow it`
          : "witness: the file holds no checkpoint yet",
      );
    io.out(lines.join("\n"));
  }
  return EXIT.ok;
}

/** The rows that fail, as one line: how many, and the first few with what is wrong. */
function rowsFailure(rows: JournalRowsVerdict): string {
  if (!rows.chain.ok) return `audit chain broken at #${rows.chain.seq}: ${rows.chain.reason}`;
  const named = { entry: "outbox entry", request: "approval request", record: "authority record", audit: "audit event" } as const;
  const shown = rows.problems.slice(0, 5).map((p) => `${named[p.kind]} ${p.id}: ${p.problem} (${p.detail})`);
  const more = rows.problems.length > shown.length ? `; and ${rows.problems.length - shown.length} more (--json lists all)` : "";
  return `${rows.problems.length} stored row${rows.problems.length === 1 ? " fails" : "s fail"} verification: ${shown.join("; ")}${more}`;
}

/**
 * Wrap the configured journal with its witness (`journal.witness`): signed checkpoints of the
 * chain appended to a file that must not lie in the journal's own directory — whoever can cut the
 * journal's tail there could cut the witness with it.
 */
export function withConfiguredWitness(journal: Journal, baseDir: string, where: ToolgateConfig["journal"], auditKey: Buffer): Journal {
  if (!where?.witness) return journal;
  const file = resolve(baseDir, where.witness);
  if ("sqlite" in where) {
    const journalDir = realDir(dirname(resolve(baseDir, where.sqlite)));
    const inside = relative(journalDir, realDir(dirname(file)));
    if (!inside.startsWith("..") && !isAbsolute(inside))
      throw new ToolError("config_invalid", `the witness file ${file} is inside the journal's directory ${journalDir}`, {
        details: { hint: "place the witness on another disk or host (a mount the journal's host can only append to)" },
      });
  }
  return withWitness(journal, { file, key: auditKey });
}

/** A directory with its symbolic links resolved, as far as it exists. */
function realDir(dir: string): string {
  const missing: string[] = [];
  let at = dir;
  while (!existsSync(at) && dirname(at) !== at) {
    missing.unshift(basename(at));
    at = dirname(at);
  }
  return join(realpathSync(at), ...missing);
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

/** An approver's edit: `requestId=apr_… v2 by op_… /to,/cc` (the whole change is in the event and `approvals show`). */
function editedSummary(data: Readonly<Record<string, unknown>>): string {
  const changes = Array.isArray(data["changes"]) ? (data["changes"] as readonly { path?: unknown }[]) : [];
  const paths = changes.map((c) => (c.path === "" ? "(whole input)" : String(c.path))).join(",");
  const shown = paths.length > 80 ? `${paths.slice(0, 80)}…` : paths;
  return `requestId=${String(data["requestId"]).slice(0, 40)} v${String(data["version"])} by ${String(data["approver"]).slice(0, 40)} ${shown}`;
}

function summarize(record: AuditRecord): string {
  const data = record.data;
  if (record.type === "approval.edited") return editedSummary(data);
  const parts: string[] = [];
  for (const key of ["code", "state", "result", "requestId", "approver", "target", "key"]) {
    const value = data[key];
    if (value !== undefined && value !== null) parts.push(`${key}=${typeof value === "string" ? value.slice(0, 40) : JSON.stringify(value)}`);
  }
  return parts.join(" ");
}
