/**
 * `toolgate approvals approve ID --input FILE`: the owner approves the call with an edited input.
 * The desk validates the edit against the tool's schema and its editable fields, recomputes the
 * preview from it, and the grant binds the edited input and the preview the owner was shown: run
 * without `--preview-hash`, the command prints the changes and the recomputed preview and asks (on
 * a terminal) or stops (elsewhere); run with the hash it printed, it approves exactly that.
 */
import { open } from "node:fs/promises";
import { resolve } from "node:path";
import type { ApprovalPreview, ApprovalRequest } from "@toolgate/core";
import { currentExpectation } from "@toolgate/core/operator";
import type { ApprovalChange } from "@toolgate/core/store-kit";
import { CliFailure, EXIT, type Io } from "../output.js";
import { printable } from "../printable.js";
import type { Runtime } from "../runtime.js";

/** The largest edited input the command reads: the gate's own bound on an input (1 MiB). */
export const MAX_EDIT_BYTES = 1024 * 1024;

const PREVIEW_HASH = /^[0-9a-f]{64}$/;

/** `--preview-hash`: the 64 hex digits the command printed; anything else is a usage error. */
export function parsePreviewHash(text: string | undefined, id: string): string | undefined {
  if (text === undefined) return undefined;
  const hash = text.trim().toLowerCase();
  if (!PREVIEW_HASH.test(hash))
    throw new CliFailure(
      `--preview-hash must be the 64 hex digits the command printed, not ${JSON.stringify(text.slice(0, 80))}`,
      EXIT.usage,
      `toolgate approvals show ${id} prints the current preview hash`,
    );
  return hash;
}

/**
 * `--from-version`: the request version the printed check started from. The edit's preview hash
 * does not depend on it (an edit is compared with the input as asked), so without it a re-run could
 * replace another approver's edit made between the two runs without the owner seeing it.
 */
export function parseFromVersion(text: string | undefined, id: string): number | undefined {
  if (text === undefined) return undefined;
  if (!/^(0|[1-9][0-9]{0,8})$/.test(text.trim()))
    throw new CliFailure(
      `--from-version must be the version number the command printed, not ${JSON.stringify(text.slice(0, 80))}`,
      EXIT.usage,
      `toolgate approvals show ${id} prints the current version`,
    );
  return Number(text.trim());
}

/** Read FILE (or stdin for `-`) up to MAX_EDIT_BYTES and parse it as JSON. */
export async function readEditedInput(file: string, stdin: NodeJS.ReadableStream = process.stdin): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  const tooLarge = () =>
    new CliFailure(
      `--input ${file === "-" ? "(stdin)" : file} is larger than ${MAX_EDIT_BYTES} bytes; nothing was approved`,
      EXIT.usage,
      "an edited input is at most 1 MiB of JSON",
    );
  if (file === "-") {
    for await (const chunk of stdin) {
      const buffer = Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk));
      size += buffer.length;
      if (size > MAX_EDIT_BYTES) throw tooLarge();
      chunks.push(buffer);
    }
  } else {
    const handle = await open(resolve(process.cwd(), file), "r").catch((error: NodeJS.ErrnoException) => {
      throw new CliFailure(
        `--input ${file}: ${error.code === "ENOENT" ? "no such file" : (error.code ?? "cannot be read")}`,
        EXIT.usage,
        "pass a JSON file, or - for stdin",
      );
    });
    try {
      // One byte past the bound tells a file at the bound from a larger one, without reading the rest.
      const buffer = Buffer.alloc(MAX_EDIT_BYTES + 1);
      for (;;) {
        const { bytesRead } = await handle.read(buffer, size, buffer.length - size, null);
        if (bytesRead === 0) break;
        size += bytesRead;
        if (size > MAX_EDIT_BYTES) throw tooLarge();
      }
      chunks.push(buffer.subarray(0, size));
    } finally {
      await handle.close();
    }
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString("utf8")) as unknown;
  } catch {
    throw new CliFailure(
      `--input ${file === "-" ? "(stdin)" : file} is not valid JSON; nothing was approved`,
      EXIT.usage,
      "the file holds the whole edited input as one JSON value",
    );
  }
}

/** A JSON value on one line, cut to `max` characters for the terminal (the journal keeps it whole). */
function shown(value: unknown, max = 400): string {
  if (value === undefined) return "(absent)";
  const text = JSON.stringify(value) ?? String(value);
  return text.length > max ? `${text.slice(0, max)}…(cut)` : text;
}

/** One line per changed member: `  /to: ["a","b"] → ["a"]`. */
export function renderChanges(changes: readonly ApprovalChange[]): string[] {
  return changes.map((c) => `  ${c.path === "" ? "(whole input)" : c.path}: ${shown(c.before)} → ${shown(c.after)}`);
}

/** A preview as the terminal shows it: summary, details, body. */
export function renderPreview(p: ApprovalPreview, label = "summary"): string[] {
  const lines = [`${label.padEnd(8)} ${p.summary}`];
  if (p.details) lines.push(`details  ${JSON.stringify(p.details, null, 2).replace(/\n/g, "\n         ")}`);
  if (p.body !== undefined) lines.push("body", ...p.body.split("\n").map((l) => `  | ${l}`));
  return lines;
}

/** What `approvals show` adds for edits: the editable fields, the input as asked, the current edit. */
export function renderEditFacts(r: ApprovalRequest): string[] {
  const lines: string[] = [];
  if (r.editable !== undefined)
    lines.push(
      `editable ${r.editable === false || r.editable.length === 0 ? "no (this request cannot be edited)" : r.editable.map((p) => (p === "" ? "(whole input)" : p)).join(", ")}`,
    );
  if (r.input !== undefined) lines.push(`input    ${shown(r.input, 2000)}${r.inputRedacted ? " (redacted: it cannot be edited)" : ""} (as asked)`);
  const e = r.edit;
  if (e === undefined) return lines;
  lines.push(
    `edited   version ${e.version} by ${e.by} (${e.via}) at ${e.at}`,
    ...renderChanges(e.changes),
    `  input hash   ${r.inputHash} (as asked) → ${e.inputHash}`,
    `  preview hash ${r.previewHash} (as asked) → ${e.previewHash}`,
    `  edited input ${shown(e.input, 2000)}`,
    ...renderPreview(e.preview, "  now").map((l) => (l.startsWith("  now") ? l : `  ${l}`)),
    ...(e.target ? [`  target ${e.target}`] : []),
  );
  return lines;
}

/** Ask on the terminal; undefined where nobody can answer (stdin or stdout not a terminal). */
async function askOnTerminal(question: string): Promise<string | undefined> {
  if (!process.stdin.isTTY || !process.stdout.isTTY) return undefined;
  const { createInterface } = await import("node:readline/promises");
  const rl = createInterface({ input: process.stdin, output: process.stdout });
  try {
    return await rl.question(question);
  } finally {
    rl.close();
  }
}

export interface EditApproveOptions {
  readonly input: string;
  readonly previewHash?: string;
  /** The version the printed check started from; required with `--preview-hash` once the request was edited. */
  readonly fromVersion?: string;
  readonly ttlMs: number;
}

/**
 * Approve the request with the edited input in FILE, as the owner. Without `--preview-hash`: the
 * edit is previewed (nothing written), the changes and the recomputed preview are printed, and the
 * grant follows only when the owner confirms it on a terminal. With it: the grant binds that hash,
 * and the desk refuses it if the preview it recomputes now is another. Undefined: nothing approved.
 */
export async function approveWithEdit(runtime: Runtime, request: ApprovalRequest, options: EditApproveOptions, io: Io, refused: (error: unknown) => unknown) {
  const id = request.id;
  const seenHash = parsePreviewHash(options.previewHash, id);
  const fromVersion = parseFromVersion(options.fromVersion, id);
  const expect = currentExpectation(request);
  if (seenHash !== undefined && fromVersion === undefined && expect.version > 0)
    throw new CliFailure(
      `${id} was edited by ${request.edit?.by ?? "an approver"} (now version ${expect.version}): say which version your check started from`,
      EXIT.usage,
      `re-run the command without --preview-hash to check your edit against the current version, then run the line it prints (it names --from-version)`,
    );
  if (fromVersion !== undefined && fromVersion !== expect.version)
    throw new CliFailure(
      `${id} changed since you looked: your check started from version ${fromVersion}, it is now version ${expect.version}; nothing approved`,
      EXIT.failed,
      `toolgate approvals show ${id} shows the current version; re-run without --preview-hash to check your edit against it`,
    );
  const input = await readEditedInput(options.input);
  const desk = runtime.gate.approvals;
  const by = runtime.gate.authority.owner();
  let previewHash = seenHash;
  if (previewHash === undefined) {
    const preview = await desk.previewEdit(id, { by, input, expect }).catch((error: unknown) => {
      throw refused(error);
    });
    io.out(
      printable(
        [
          `edit of ${id} (${request.toolId}, from version ${preview.version}), checked against the tool's schema and editable fields:`,
          ...renderChanges(preview.changes),
          "the preview, recomputed from the edited input:",
          ...renderPreview(preview.preview),
          ...(preview.target ? [`target   ${preview.target}`] : []),
          ...(preview.findings.length > 0 ? [`flagged  ${preview.findings.map((f) => `${f.rule} at ${f.path}`).join(", ")}`] : []),
          `preview hash: ${preview.previewHash}`,
        ].join("\n"),
      ),
    );
    const rerun = `toolgate approvals approve ${id} --input ${options.input === "-" ? "FILE" : options.input} --from-version ${preview.version} --preview-hash ${preview.previewHash}`;
    // Stdin that carried the input cannot also carry the answer.
    const answer = options.input === "-" ? undefined : await (io.ask ?? askOnTerminal)("approve the edited call? [y/N] ");
    if (answer === undefined)
      throw new CliFailure("nothing approved: no terminal to confirm on", EXIT.usage, `check the preview above, then approve exactly it: ${rerun}`);
    if (!/^y(es)?$/i.test(answer.trim())) {
      io.out(`nothing approved; ${id} is still ${request.status}`);
      return undefined;
    }
    previewHash = preview.previewHash;
  }
  return desk.grant(id, { by, ttlMs: options.ttlMs, expect, edit: { input, previewHash } }).catch((error: unknown) => {
    throw refused(error);
  });
}
